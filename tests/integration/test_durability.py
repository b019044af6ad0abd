"""Big files, kill -9 durability, concurrency and reading the database while
mounted."""

import errno
import hashlib
import json
import multiprocessing
import os
import sqlite3
import subprocess
import threading

import pytest

from conftest import errname, oserror, read_bytes, write_bytes

MiB = 1024 * 1024


def sha256_file(path, block=MiB):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(block)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


def blob_lengths(db):
    """Longest BLOB in any column of any table (schema-agnostic)."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        longest = 0
        tables = [r[0] for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type='table'")]
        for t in tables:
            cols = [r[1] for r in con.execute(f'PRAGMA table_info("{t}")')]
            for c in cols:
                v = con.execute(f'SELECT max(length("{c}")) FROM "{t}" '
                                f'WHERE typeof("{c}")=\'blob\'').fetchone()[0]
                longest = max(longest, v or 0)
        return longest
    finally:
        con.close()


def test_big_file_random_data(flowfs, uploads):
    data = os.urandom(20 * MiB)
    want = hashlib.sha256(data).hexdigest()
    f = uploads / "big.bin"
    fd = os.open(f, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for off in range(0, len(data), MiB):
            os.write(fd, data[off:off + MiB])
    finally:
        os.close(fd)
    assert os.stat(f).st_size == len(data)
    assert sha256_file(f) == want
    # Stored in chunks, not one blob per file.
    assert blob_lengths(flowfs.db) <= 4 * MiB
    flowfs.remount()
    assert os.stat(f).st_size == len(data)
    assert sha256_file(f, block=123_457) == want
    # Random-access reads agree with the source.
    fd = os.open(f, os.O_RDONLY)
    try:
        for off in (0, 65535, 65536, 5 * MiB + 3, 20 * MiB - 10):
            assert os.pread(fd, 70_000, off) == data[off:off + 70_000]
    finally:
        os.close(fd)


def test_small_writes_big_file(uploads):
    chunk = os.urandom(4096)
    f = uploads / "small-writes"
    with open(f, "wb", buffering=0) as fh:
        for _ in range(1024):
            fh.write(chunk)
    assert os.stat(f).st_size == 4 * MiB
    assert read_bytes(f) == chunk * 1024


def test_closed_file_survives_kill9(flowfs, session, uploads):
    data = os.urandom(3 * MiB + 5)
    write_bytes(uploads / "precious", data)
    os.makedirs(uploads / "d" / "e")
    os.symlink("../precious", uploads / "d" / "link")
    os.chmod(uploads / "precious", 0o600)
    os.utime(uploads / "precious", ns=(1_111_111_111_111_111_111,) * 2)
    write_bytes(session / "session.json", b'{"title": "durable"}')
    write_bytes(session / "scratch~", b"scratch")
    ino = os.stat(uploads / "precious").st_ino
    flowfs.kill9_remount()
    assert read_bytes(uploads / "precious") == data
    st = os.stat(uploads / "precious")
    assert st.st_ino == ino
    assert st.st_mode & 0o777 == 0o600
    assert st.st_mtime_ns == 1_111_111_111_111_111_111
    assert os.readlink(uploads / "d" / "link") == "../precious"
    assert os.path.isdir(uploads / "d" / "e")
    assert json.loads(read_bytes(session / "session.json"))["title"] == "durable"
    assert read_bytes(session / "scratch~") == b"scratch"


def test_big_closed_file_survives_kill9(flowfs, uploads):
    """A big write is committed 8 MiB at a time by a thread of its own
    while the writer goes on (the spill): once close() returns, all of it
    is stored, and an fsync() in the middle waits for the spill too."""
    data = os.urandom(40 * MiB + 123)
    step = 300_001  # writes that end inside chunks and spills
    f = uploads / "big"
    fd = os.open(f, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for off in range(0, len(data), step):
            os.write(fd, data[off:off + step])
            if off <= 20 * MiB < off + step:
                os.fsync(fd)
    finally:
        os.close(fd)
    flowfs.kill9_remount()
    assert os.stat(f).st_size == len(data)
    assert read_bytes(f) == data


def test_many_closed_files_survive_kill9(flowfs, uploads):
    files = {f"f{i}": os.urandom(i * 100) for i in range(200)}
    for n, d in files.items():
        write_bytes(uploads / n, d)
    for n in list(files)[:50]:
        os.unlink(uploads / n)
        del files[n]
    os.rename(uploads / "f100", uploads / "renamed")
    files["renamed"] = files.pop("f100")
    flowfs.kill9_remount()
    assert set(os.listdir(uploads)) == set(files)
    for n, d in files.items():
        assert read_bytes(uploads / n) == d, n


def test_fsynced_data_survives_kill9_while_open(flowfs, uploads):
    f = uploads / "journal"
    synced = os.urandom(500_000)
    fd = os.open(f, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.write(fd, synced)
        os.fsync(fd)
        os.write(fd, b"not synced, may or may not survive")
        flowfs.kill9()
    finally:
        oserror(os.close, fd)
    flowfs.start()
    got = read_bytes(f)
    assert got in (synced, synced + b"not synced, may or may not survive")


def test_crash_never_shows_half_written_file(flowfs, uploads):
    f = uploads / "doc"
    old = os.urandom(400_000)
    write_bytes(f, old)
    new = os.urandom(400_000)
    fd = os.open(f, os.O_WRONLY)
    try:
        os.write(fd, new[:200_000])       # never flushed nor closed
        flowfs.kill9()
    finally:
        oserror(os.close, fd)
    flowfs.start()
    got = read_bytes(f)
    assert got in (old, new[:200_000] + old[200_000:]), "half-written file visible"
    assert os.stat(f).st_size == len(got)


def test_session_json_unclosed_write_not_visible_after_kill9(flowfs, session):
    sj = session / "session.json"
    before = read_bytes(sj)
    fd = os.open(sj, os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, b'{"title": "half')
        flowfs.kill9()
    finally:
        oserror(os.close, fd)
    flowfs.start()
    assert read_bytes(sj) == before


def test_kill9_during_heavy_writes_db_ok(flowfs, uploads):
    for i in range(30):
        write_bytes(uploads / f"w{i}", os.urandom(64 * 1024))
    fd = os.open(uploads / "inflight", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for _ in range(64):
            os.write(fd, os.urandom(64 * 1024))
        flowfs.kill9()
    finally:
        oserror(os.close, fd)
    con = sqlite3.connect(flowfs.db)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert con.execute("PRAGMA foreign_key_check").fetchall() == []
    finally:
        con.close()
    flowfs.start()
    for i in range(30):
        assert os.stat(uploads / f"w{i}").st_size == 64 * 1024
    st = os.stat(uploads / "inflight")
    assert len(read_bytes(uploads / "inflight")) == st.st_size


def _writer(base, tag, count, size, barrier, q):
    try:
        barrier.wait(timeout=30)
        for i in range(count):
            data = hashlib.sha256(f"{tag}{i}".encode()).digest() * (size // 32)
            p = os.path.join(base, f"{tag}-{i}")
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                for off in range(0, len(data), 8192):
                    os.write(fd, data[off:off + 8192])
            finally:
                os.close(fd)
        q.put((tag, None))
    except BaseException as e:  # report every failure to the parent
        q.put((tag, repr(e)))


def test_two_processes_write_one_session(flowfs, uploads):
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(2)
    q = ctx.Queue()
    os.mkdir(uploads / "p")
    procs = [ctx.Process(target=_writer, args=(str(uploads / "p"), tag, 60,
                                                64 * 1024, barrier, q))
             for tag in ("A", "B")]
    for p in procs:
        p.start()
    results = dict(q.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=30)
    assert results == {"A": None, "B": None}
    assert all(p.exitcode == 0 for p in procs)
    names = os.listdir(uploads / "p")
    assert len(names) == 120
    for tag in ("A", "B"):
        for i in range(60):
            want = hashlib.sha256(f"{tag}{i}".encode()).digest() * 2048
            assert read_bytes(uploads / "p" / f"{tag}-{i}") == want


def test_two_processes_write_two_sessions(flowfs, mnt):
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(2)
    q = ctx.Queue()
    for s in ("s1", "s2"):
        os.mkdir(mnt / s)
    procs = [ctx.Process(target=_writer, args=(str(mnt / s / "uploads"), s, 40,
                                                32 * 1024, barrier, q))
             for s in ("s1", "s2")]
    for p in procs:
        p.start()
    results = dict(q.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=30)
    assert results == {"s1": None, "s2": None}
    assert len(os.listdir(mnt / "s1" / "uploads")) == 40
    assert len(os.listdir(mnt / "s2" / "uploads")) == 40


def test_read_db_while_mounted(flowfs, uploads):
    write_bytes(uploads / "f", b"x" * 100_000)
    con = sqlite3.connect(f"file:{flowfs.db}?mode=ro", uri=True, timeout=5)
    try:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        tables = con.execute(
            "SELECT count(*) FROM sqlite_master WHERE type='table'").fetchone()[0]
        assert tables > 0
        # Hold a read transaction open while the mount keeps writing.
        con.execute("BEGIN")
        for t in [r[0] for r in con.execute(
                "SELECT name FROM sqlite_master WHERE type='table'")]:
            con.execute(f'SELECT count(*) FROM "{t}"').fetchone()
        for i in range(20):
            write_bytes(uploads / f"during-{i}", os.urandom(70_000))
        os.mkdir(flowfs.mnt / "another")
        con.execute("COMMIT")
    finally:
        con.close()
    assert len(os.listdir(uploads)) == 21
    r = subprocess.run(["sqlite3", "-readonly", str(flowfs.db),
                        "PRAGMA journal_mode; PRAGMA quick_check;"],
                       capture_output=True, text=True, timeout=30)
    if r.returncode == 127 or "not found" in r.stderr:
        pytest.fail("sqlite3 CLI missing (apt-get install sqlite3)")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["wal", "ok"]


def test_sqlite_busy_is_eagain_not_eio(flowfs, uploads):
    """Another process holding the write lock for longer than flowfs's busy
    timeout (2 s): writes fail with EAGAIN while it is held — the daemon
    answers instead of waiting for the lock (a daemon that waited would
    leave the writer hanging until the lock is let go; the 30 s join is a
    liveness bound, not a speed check)."""
    con = sqlite3.connect(flowfs.db, timeout=5, isolation_level=None)
    results = {}

    def writer():
        results["file"] = oserror(write_bytes, uploads / "busy", b"y" * 10_000)
        results["mkdir"] = oserror(os.mkdir, flowfs.mnt / "busy-session")

    try:
        con.execute("BEGIN IMMEDIATE")
        t = threading.Thread(target=writer)
        t.start()
        t.join(timeout=30)
        finished_while_locked = not t.is_alive()
    finally:
        con.execute("ROLLBACK")
        con.close()
    t.join(timeout=60)
    assert finished_while_locked, "the daemon waited for the foreign lock"
    assert results == {"file": errno.EAGAIN, "mkdir": errno.EAGAIN}, {
        k: errname(v) for k, v in results.items()}
    # Whatever happened, the mount works afterwards.
    write_bytes(uploads / "after", b"ok")
    assert read_bytes(uploads / "after") == b"ok"
