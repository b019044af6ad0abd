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
    """The database file, its log and the data files beside it (not the
    disk's reserve, which is held whatever the store holds), as the disk
    holds them."""
    files = [os.path.join(f"{db}.d", n) for n in data_files(db)]
    return sum(os.stat(p).st_size for p in [db, f"{db}-wal"] + files
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


def data_files(db):
    data = f"{db}.d"
    return [n for n in os.listdir(data) if n[0].isdigit()] \
        if os.path.isdir(data) else []


def wal_size(db):
    try:
        return os.stat(f"{db}-wal").st_size
    except FileNotFoundError:
        return 0


def test_removing_a_file_does_not_write_it_again(flowfs, uploads):
    """A big file's bytes never pass through the database's log (they
    did, and then again to the database: 6-7 copies of every byte, a log
    of 418 MB after 384 MiB written); removing it frees its data file
    at once, and writes nothing of its size to the log."""
    chunk = os.urandom(MiB)
    with open(uploads / "big", "wb") as f:
        for _ in range(80):
            f.write(chunk)
    assert wal_size(flowfs.db) < 8 * MiB
    assert on_disk(flowfs.db) >= 80 * MiB
    os.unlink(uploads / "big")
    wait_until(lambda: used(flowfs.mnt) < 8 * MiB, "the file's data goes")
    assert wal_size(flowfs.db) < 8 * MiB
    assert data_files(flowfs.db) == []
