"""Storage v2 (issue 27): the contents of large files in data files beside
the database, counted from it; the crash rules as a user sees them; one
mount per database; the conversion of a store of the last schema."""

import hashlib
import os
import shutil
import sqlite3
import subprocess
import tempfile

import pytest

from conftest import daemon_env, read_bytes, root_log, wait_until, write_bytes

MiB = 1024 * 1024
KiB = 1024
INLINE_MAX = 128 * KiB  # TREE_INLINE_MAX


def data_dir(fs):
    return f"{fs.db}.d"


def data_files(fs):
    return sorted(n for n in os.listdir(data_dir(fs)) if n[0].isdigit())


def db_rows(fs, sql):
    con = sqlite3.connect(f"file:{fs.db}?mode=ro", uri=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_large_files_beside_small_ones_inside(flowfs, uploads):
    """A file past 64 KiB is a data file of its own (0600 in a 0700
    folder), named and counted by its row; one at the threshold stays in
    the database; each reads back byte for byte."""
    big = os.urandom(3 * MiB + 5)
    small = os.urandom(INLINE_MAX)
    write_bytes(uploads / "big", big)
    write_bytes(uploads / "small", small)
    assert read_bytes(uploads / "big") == big
    assert read_bytes(uploads / "small") == small
    files = data_files(flowfs)
    assert len(files) == 1
    path = os.path.join(data_dir(flowfs), files[0])
    assert os.stat(path).st_size == len(big)
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert os.stat(data_dir(flowfs)).st_mode & 0o777 == 0o700
    assert db_rows(flowfs, "SELECT id, refs FROM contents") == \
        [(int(files[0]), 1)]
    assert db_rows(flowfs, "SELECT count(*) FROM chunks c JOIN inodes i"
                   " ON i.ino = c.ino WHERE i.content IS NOT NULL") == [(0,)]
    # grown past the threshold by small writes, from inside the database
    with open(uploads / "small", "ab") as f:
        for _ in range(20):
            f.write(b"x" * 4096)
    assert read_bytes(uploads / "small") == small + b"x" * 81920
    assert len(data_files(flowfs)) == 2
    # a cut to nothing lets go of the data file; removal of the other too
    os.truncate(uploads / "small", 0)
    os.unlink(uploads / "big")
    # (the kernel may hold the unlinked file a moment longer)
    wait_until(lambda: data_files(flowfs) == [], "the data files go")
    wait_until(lambda: db_rows(flowfs, "SELECT count(*) FROM contents")
               == [(0,)], "their counts go")


def test_rewrites_truncates_and_holes(flowfs, uploads):
    """Writes in the middle, past the end (a hole reads zeros), cuts and
    growth of a file in a data file, checked against a model."""
    f = uploads / "f"
    model = bytearray(os.urandom(200 * KiB))
    write_bytes(f, bytes(model))
    fd = os.open(f, os.O_RDWR)
    try:
        os.pwrite(fd, b"M" * 5000, 70000)
        model[70000:75000] = b"M" * 5000
        os.ftruncate(fd, 100000)
        del model[100000:]
        os.ftruncate(fd, 150000)
        model += bytes(50000)
        os.pwrite(fd, b"E", 300000)
        model += bytes(300000 - len(model)) + b"E"
    finally:
        os.close(fd)
    assert read_bytes(f) == bytes(model)
    assert os.stat(f).st_size == len(model)


def test_closed_file_survives_kill9_and_check_is_clean(make_flowfs):
    """A closed file survives kill -9 of the daemon; an fsync'ed one too;
    the data file of one still open when it died is an orphan, removed at
    the next mount (or, if named by an earlier close, still the file's)."""
    fs = make_flowfs()
    up = fs.mnt / "s" / "uploads"
    os.mkdir(fs.mnt / "s")
    closed = os.urandom(2 * MiB)
    write_bytes(up / "closed", closed)
    synced = os.urandom(MiB + 3)
    fd = os.open(up / "synced", os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, synced)
    os.fsync(fd)
    os.close(fd)
    open_fd = os.open(up / "open", os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(open_fd, os.urandom(MiB))
    assert len(data_files(fs)) == 3
    fs.kill9()
    try:
        os.close(open_fd)
    except OSError:  # ENOTCONN: its daemon is gone
        pass
    fs.start()
    assert read_bytes(up / "closed") == closed
    assert read_bytes(up / "synced") == synced
    assert os.stat(up / "open").st_size == 0
    assert len(data_files(fs)) == 2
    fs.stop()
    fs.check()
    r = subprocess.run([str(fs.bin), f"--db={fs.db}", "--check"],
                       capture_output=True, text=True, env=daemon_env())
    assert r.returncode == 0, r.stdout + r.stderr
    fs.start()


def test_orphan_data_file_removed_at_mount(make_flowfs):
    fs = make_flowfs()
    os.mkdir(fs.mnt / "s")
    fs.stop()
    orphan = os.path.join(data_dir(fs), "987654")
    with open(orphan, "wb") as f:
        f.write(b"left by a crash")
    fs.start()
    assert not os.path.exists(orphan)


def test_missing_or_short_data_file_reported_never_a_crash(make_flowfs):
    """Damage done outside flowfs: said in .flowfs/log and the session's
    log at mount; opening the missing one answers EIO, the short one
    reads short; the daemon goes on."""
    fs = make_flowfs()
    up = fs.mnt / "s" / "uploads"
    os.mkdir(fs.mnt / "s")
    write_bytes(up / "gone", os.urandom(MiB))
    write_bytes(up / "short", os.urandom(MiB))
    ids = dict(db_rows(fs, "SELECT name, content FROM inodes"
                       " WHERE content IS NOT NULL"))
    fs.stop()
    os.unlink(os.path.join(data_dir(fs), str(ids[b"gone"])))
    os.truncate(os.path.join(data_dir(fs), str(ids[b"short"])), 1000)
    fs.start()
    text = "\n".join(m for _t, _p, m in root_log(fs.mnt))
    assert f"{ids[b'gone']} is missing" in text, text
    assert f"holds 1000 bytes of {MiB}" in text, text
    assert "damaged" in read_bytes(fs.mnt / "s" / "log").decode()
    with pytest.raises(OSError) as e:
        read_bytes(up / "gone")
    assert e.value.errno == 5
    assert len(read_bytes(up / "short")) == 1000
    os.unlink(up / "gone")
    os.unlink(up / "short")
    assert os.listdir(fs.mnt / "s" / "uploads") == []


def test_second_mount_of_a_database_refused(make_flowfs):
    """One flowfs per database: the second is refused naming the first's
    pid and mountpoint; a killed daemon leaves no lock behind."""
    first = make_flowfs()
    second = make_flowfs(name="other", db=first.db, start=False)
    r = subprocess.run([str(second.bin), f"--db={first.db}", "-f",
                        str(second.mnt)], capture_output=True, text=True,
                       env=daemon_env(), timeout=30)
    assert r.returncode != 0
    assert f"pid {first.proc.pid}" in r.stderr, r.stderr
    assert str(first.mnt) in r.stderr, r.stderr
    assert not os.path.ismount(second.mnt)
    first.kill9()
    second.start()
    assert os.path.ismount(second.mnt)


def make_last_schema_store(fs, files):
    """A store as flowfs of schema 10 left it: every file's bytes in 64 KiB
    chunk rows, no data folder.  Made by taking a new one back."""
    for name, data in files.items():
        write_bytes(fs.mnt / "s" / "uploads" / name, data)
    fs.stop()
    con = sqlite3.connect(fs.db)
    try:
        for name, data in files.items():
            (ino,) = con.execute("SELECT ino FROM inodes WHERE name = ?",
                                 (name.encode(),)).fetchone()
            for off in range(0, len(data), 64 * KiB):
                con.execute("INSERT OR REPLACE INTO chunks(ino, idx, data)"
                            " VALUES (?, ?, ?)",
                            (ino, off // (64 * KiB), data[off:off + 64 * KiB]))
        con.executescript(
            "DROP TRIGGER content_taken; DROP TRIGGER content_dropped;"
            "DROP TRIGGER content_changed; DROP INDEX inodes_by_content;"
            "DROP INDEX sessions_snapshots;"
            "ALTER TABLE sessions DROP COLUMN snapshot_of;"
            "ALTER TABLE sessions DROP COLUMN snapshot_label;"
            "ALTER TABLE sessions DROP COLUMN forked_from;"
            "DROP TABLE contents; ALTER TABLE inodes DROP COLUMN content;"
            # issue 29's tables (schema 11 and 12) came before these
            "DROP TABLE kept_edges; DROP TABLE refusals;"
            "PRAGMA user_version = 10;")
        con.commit()
    finally:
        con.close()
    for n in os.listdir(data_dir(fs)):
        os.unlink(os.path.join(data_dir(fs), n))
    os.rmdir(data_dir(fs))


def test_last_schema_converted_at_first_mount(make_flowfs):
    """The data of a schema-10 store moves out at the first mount; a
    conversion killed halfway (an orphan data file, chunks still there)
    goes on at the next mount and loses nothing."""
    fs = make_flowfs()
    os.mkdir(fs.mnt / "s")
    files = {"a": os.urandom(MiB + 7), "b": os.urandom(300 * KiB),
             "tiny": b"stays inside"}
    make_last_schema_store(fs, files)
    # a crash halfway: the first file's data file made, not yet named
    os.mkdir(data_dir(fs), 0o700)
    with open(os.path.join(data_dir(fs), "1"), "wb") as f:
        f.write(files["a"][:1000])
    fs.start()
    for name, data in files.items():
        assert read_bytes(fs.mnt / "s" / "uploads" / name) == data
    assert len(data_files(fs)) == 2
    assert db_rows(fs, "SELECT count(*) FROM chunks c JOIN inodes i"
                   " ON i.ino = c.ino WHERE i.name != CAST('tiny' AS BLOB)"
                   ) == [(0,)]
    assert db_rows(fs, "PRAGMA user_version") == [(13,)]


def test_backup_while_mounted_is_consistent(make_flowfs, tmp_path):
    """--backup=DEST copies the database (one moment of it) and hard-links
    the data files; a write to the original afterwards copies its data
    file first, so the backup keeps what it had; the backup mounts and
    --check finds it clean."""
    fs = make_flowfs()
    up = fs.mnt / "s" / "uploads"
    os.mkdir(fs.mnt / "s")
    big = os.urandom(2 * MiB)
    write_bytes(up / "big", big)
    write_bytes(up / "small", b"small one")
    dest = tmp_path / "copy.db"
    r = subprocess.run([str(fs.bin), f"--db={fs.db}", f"--backup={dest}"],
                       capture_output=True, text=True, env=daemon_env())
    assert r.returncode == 0, r.stderr
    (name,) = data_files(fs)
    assert os.stat(os.path.join(data_dir(fs), name)).st_nlink == 2
    # the original changes in place: the backup's file does not
    with open(up / "big", "r+b") as f:
        f.write(b"changed")
    write_bytes(up / "later", b"after the backup")
    assert read_bytes(up / "big")[:7] == b"changed"
    r = subprocess.run([str(fs.bin), f"--db={dest}", "--check"],
                       capture_output=True, text=True, env=daemon_env())
    assert r.returncode == 0, r.stdout + r.stderr
    copy = make_flowfs(name="copy", db=dest)
    cup = copy.mnt / "s" / "uploads"
    assert read_bytes(cup / "big") == big
    assert read_bytes(cup / "small") == b"small one"
    assert not os.path.exists(cup / "later")
    # a backup never overwrites
    r = subprocess.run([str(fs.bin), f"--db={fs.db}", f"--backup={dest}"],
                       capture_output=True, text=True, env=daemon_env())
    assert r.returncode == 1 and "exists" in r.stderr, r.stderr



def test_backup_to_another_filesystem_copies(make_flowfs, tmp_path):
    """A backup on another file system (/dev/shm, tmpfs, here the store
    is on disk) cannot hard-link the data files: they are copied whole."""
    if not os.access("/dev/shm", os.W_OK | os.X_OK) or \
            os.stat("/dev/shm").st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no writable /dev/shm on a file system other than "
                    f"{tmp_path}'s")
    fs = make_flowfs()
    up = fs.mnt / "s" / "uploads"
    os.mkdir(fs.mnt / "s")
    big = os.urandom(2 * MiB + 3)
    write_bytes(up / "big", big)
    folder = tempfile.mkdtemp(prefix="flowfs-backup-", dir="/dev/shm")
    try:
        dest = os.path.join(folder, "copy.db")
        r = subprocess.run([str(fs.bin), f"--db={fs.db}",
                            f"--backup={dest}"],
                           capture_output=True, text=True, env=daemon_env())
        assert r.returncode == 0, r.stderr
        (name,) = data_files(fs)
        assert os.stat(os.path.join(data_dir(fs), name)).st_nlink == 1
        copy = make_flowfs(name="copy", db=dest)
        assert read_bytes(copy.mnt / "s" / "uploads" / "big") == big
        copy.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_the_reserve_holds_8_mib(make_flowfs):
    """DB.d/reserve holds 8 MiB of the disk, blocks and not a hole, so that
    a full disk still has room for removals to commit."""
    fs = make_flowfs()
    st = os.stat(os.path.join(data_dir(fs), "reserve"))
    assert st.st_size == 8 * MiB
    assert st.st_blocks * 512 >= 8 * MiB


def test_check_names_what_is_wrong(make_flowfs):
    fs = make_flowfs()
    os.mkdir(fs.mnt / "s")
    write_bytes(fs.mnt / "s" / "uploads" / "big", os.urandom(MiB))
    fs.stop()
    (name,) = data_files(fs)
    os.truncate(os.path.join(data_dir(fs), name), 10)
    con = sqlite3.connect(fs.db)
    con.execute("UPDATE contents SET refs = 3")
    con.commit()
    con.close()
    r = subprocess.run([str(fs.bin), f"--db={fs.db}", "--check"],
                       capture_output=True, text=True, env=daemon_env())
    assert r.returncode == 1
    assert f"content {name} is miscounted: counted 3 times, named by 1" \
        in r.stdout, r.stdout
    assert f"holds 10 bytes of {MiB}" in r.stdout, r.stdout
    assert "2 problems found" in r.stdout, r.stdout
    fs.start()


@pytest.mark.root      # a small file system of its own: a tmpfs mount
def test_full_disk_never_locks_the_store(make_flowfs, tmp_path):
    """On a full disk a write gets ENOSPC (nothing closed is lost), and
    rm of a file, `: > file`, truncate and rm -rf of a session still work
    (they spend the reserve, made again once they gave room back); df says
    what can really be written."""
    import errno
    import shutil
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs",
                    str(disk)], check=True)
    try:
        fs = make_flowfs(db=disk / "flowfs.db")
        s1, s2 = fs.mnt / "s1", fs.mnt / "s2"
        os.mkdir(s1)
        os.mkdir(s2)
        kept = os.urandom(2 * MiB)
        write_bytes(s1 / "uploads" / "kept", kept)
        for i in range(200):
            write_bytes(s2 / "uploads" / f"small{i}", b"x" * 1000)
        write_bytes(s2 / "uploads" / "mid", os.urandom(3 * MiB))
        write_bytes(s1 / "uploads" / "cut", os.urandom(MiB))

        def fill(name):
            chunk = os.urandom(MiB)
            fd = os.open(s1 / "uploads" / name, os.O_WRONLY | os.O_CREAT)
            try:
                with pytest.raises(OSError) as e:
                    for _ in range(100):
                        os.write(fd, chunk)
                assert e.value.errno == errno.ENOSPC
            finally:
                try:
                    os.close(fd)
                except OSError as e:
                    assert e.errno == errno.ENOSPC
            st = os.statvfs(fs.mnt)
            assert st.f_bavail * st.f_frsize < MiB, "df says it is full"

        fill("fill")
        assert read_bytes(s1 / "uploads" / "kept") == kept
        # a remount starts the database's log anew: every removal then
        # needs room of its own (it failed, and kept failing)
        fs.remount()
        os.unlink(s1 / "uploads" / "fill")
        fill("fill2")
        fs.remount()
        with open(s1 / "uploads" / "cut", "w"):
            pass
        assert os.stat(s1 / "uploads" / "cut").st_size == 0
        fill("fill3")
        fs.remount()
        shutil.rmtree(s2)
        assert not os.path.exists(s2)
        fill("fill4")
        os.truncate(s1 / "uploads" / "fill4", 0)
        assert read_bytes(s1 / "uploads" / "kept") == kept
        for name in ("fill2", "fill3", "fill4"):
            os.unlink(s1 / "uploads" / name)
        # room again: writes go on, df says so
        wait_until(lambda: os.statvfs(fs.mnt).f_bavail *
                   os.statvfs(fs.mnt).f_frsize > 16 * MiB, "room again")
        write_bytes(s1 / "uploads" / "after", b"fine")
        fs.remount()
        assert read_bytes(s1 / "uploads" / "kept") == kept
        fs.stop()
        r = subprocess.run([str(fs.bin), f"--db={fs.db}", "--check"],
                           capture_output=True, text=True, env=daemon_env())
        assert r.returncode == 0, r.stdout + r.stderr
        fs.start()
        fs.stop()
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=True)


@pytest.mark.parametrize("delay", [0.05, 0.2, 0.5])
def test_kill9_during_the_conversion_loses_nothing(make_flowfs, delay):
    """A conversion killed at any point: the next mount goes on, every
    file reads back, and --check is clean."""
    import signal
    import time
    fs = make_flowfs()
    os.mkdir(fs.mnt / "s")
    files = {f"f{i}": os.urandom(2 * MiB + i) for i in range(24)}
    make_last_schema_store(fs, files)
    p = subprocess.Popen([str(fs.bin), f"--db={fs.db}", "-f", str(fs.mnt)],
                         stderr=subprocess.DEVNULL, env=daemon_env())
    time.sleep(delay)
    p.send_signal(signal.SIGKILL)
    p.wait()
    subprocess.run(["fusermount3", "-u", "-z", str(fs.mnt)],
                   capture_output=True)
    fs.start()
    for name, data in files.items():
        assert read_bytes(fs.mnt / "s" / "uploads" / name) == data, name
    assert len(data_files(fs)) == len(files)
    fs.stop()
    r = subprocess.run([str(fs.bin), f"--db={fs.db}", "--check"],
                       capture_output=True, text=True, env=daemon_env())
    assert r.returncode == 0, r.stdout + r.stderr
    fs.start()
