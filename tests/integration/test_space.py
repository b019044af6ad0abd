"""Space comes back (issue 13): deleting data gives the database's pages
back to the disk in bounded steps, and `df` on the mount says what flowfs
holds, not what the host disk holds."""

import os

from conftest import wait_until

MiB = 1024 * 1024


def used(mnt):
    st = os.statvfs(mnt)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def on_disk(db):
    """The database file and its log, as the disk holds them."""
    return sum(os.stat(p).st_size for p in (db, f"{db}-wal")
               if os.path.exists(p))


def test_deleted_data_goes_back_to_the_disk(flowfs, uploads):
    """The issue's fsstress + rm -rf left 774 MiB of 1.2 GB as free pages
    in the database for good: now the file shrinks once the data is gone,
    and df's "used" follows what the mount holds."""
    empty = used(flowfs.mnt)
    assert empty < 4 * MiB, empty
    chunk = os.urandom(MiB)
    for n in range(4):
        with open(uploads / f"big{n}", "wb") as f:
            for _ in range(16):
                f.write(chunk)
    assert used(flowfs.mnt) >= 64 * MiB
    assert on_disk(flowfs.db) >= 64 * MiB
    for n in range(4):
        os.unlink(uploads / f"big{n}")
    wait_until(lambda: on_disk(flowfs.db) < 8 * MiB,
               "the database file and its log shrink")
    assert used(flowfs.mnt) < 4 * MiB
    # the mount's size is what it holds plus what it could still take
    st = os.statvfs(flowfs.mnt)
    host = os.statvfs(os.path.dirname(flowfs.db))
    assert abs(st.f_bavail * st.f_frsize - host.f_bavail * host.f_frsize) < \
        64 * MiB


def wal_size(db):
    try:
        return os.stat(f"{db}-wal").st_size
    except FileNotFoundError:
        return 0


def test_removing_a_file_does_not_write_it_again(flowfs, uploads):
    """Debian's SQLite is built with secure_delete on: removing a file
    wrote its size again, in zeros, to the log (and then to the database)
    while every writer waited.  And a log that grew past 64 MiB is
    emptied once writes pause (it stayed at 64 MiB or more)."""
    chunk = os.urandom(MiB)
    with open(uploads / "big", "wb") as f:
        for _ in range(80):
            f.write(chunk)
    wait_until(lambda: wal_size(flowfs.db) == 0,
               "the log is emptied once writes pause")
    os.unlink(uploads / "big")
    wait_until(lambda: used(flowfs.mnt) < 8 * MiB, "the file's data goes")
    assert wal_size(flowfs.db) < 8 * MiB
