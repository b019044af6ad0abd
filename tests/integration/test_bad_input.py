"""Every name, offset and size a caller can send gets an errno, never a crash
and never a corrupted database.  The fixture's teardown fails the test when the
daemon died or printed a sanitizer report."""

import errno
import os
import sqlite3

import pytest

from conftest import errname, oserror, read_bytes, write_bytes

BIG = 2 ** 63 - 1
MAX_FILE = 2 ** 44 - 4096   # README: a file holds at most 16 TiB - 4 KiB


def assert_alive(flowfs, uploads):
    assert flowfs.proc.poll() is None, "daemon died:\n" + flowfs.stderr()[-5000:]
    write_bytes(uploads / "alive-check", b"ok")
    assert read_bytes(uploads / "alive-check") == b"ok"
    os.unlink(uploads / "alive-check")


def assert_db_ok(db):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        assert con.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    finally:
        con.close()


def test_negative_offsets(flowfs, uploads):
    f = uploads / "f"
    write_bytes(f, b"0123456789")
    fd = os.open(f, os.O_RDWR)
    try:
        assert oserror(os.pwrite, fd, b"x", -1) == errno.EINVAL
        assert oserror(os.pread, fd, 1, -1) == errno.EINVAL
        assert oserror(os.pread, fd, 1, -(2 ** 63)) == errno.EINVAL
        assert oserror(os.ftruncate, fd, -1) == errno.EINVAL
        assert oserror(os.lseek, fd, -5, os.SEEK_SET) == errno.EINVAL
    finally:
        os.close(fd)
    assert oserror(os.truncate, f, -1) == errno.EINVAL
    assert read_bytes(f) == b"0123456789"
    assert_alive(flowfs, uploads)


@pytest.mark.parametrize("how", ["truncate", "ftruncate"])
@pytest.mark.parametrize("size", [BIG, BIG - 1, 2 ** 62, 2 ** 60 + 12345])
def test_truncate_huge(flowfs, uploads, how, size):
    f = uploads / "f"
    write_bytes(f, b"data")
    if how == "truncate":
        err = oserror(os.truncate, f, size)
    else:
        fd = os.open(f, os.O_WRONLY)
        try:
            err = oserror(os.ftruncate, fd, size)
        finally:
            os.close(fd)
    assert err == (errno.EFBIG if size > MAX_FILE else 0), errname(err)
    st = os.stat(f)
    if err:
        assert st.st_size == 4
        assert read_bytes(f) == b"data"
    else:
        assert st.st_size == size
        fd = os.open(f, os.O_RDONLY)
        try:
            assert os.pread(fd, 10, 0) == b"data" + b"\0" * 6
            assert os.pread(fd, 10, size - 3) == b"\0\0\0"
        finally:
            os.close(fd)
    assert_alive(flowfs, uploads)
    flowfs.remount()
    assert os.stat(f).st_size == st.st_size
    assert_db_ok(flowfs.db)


@pytest.mark.parametrize("off", [BIG - 1, BIG - 4096, 2 ** 62, 2 ** 53 + 1, 2 ** 40])
def test_pwrite_huge_offset(flowfs, uploads, off):
    f = uploads / "f"
    write_bytes(f, b"data")
    fd = os.open(f, os.O_RDWR)
    try:
        try:
            n = os.pwrite(fd, b"x", off)
            err = 0
        except OSError as e:
            err = e.errno
        assert err == (errno.EFBIG if off + 1 > MAX_FILE else 0), errname(err)
        st = os.fstat(fd)
        if err == 0:
            assert n == 1
            assert st.st_size == off + 1
            assert os.pread(fd, 5, off) == b"x"
            assert os.pread(fd, 4, off - 4) == b"\0" * 4
        else:
            assert st.st_size == 4
        assert os.pread(fd, 4, 0) == b"data"
    finally:
        os.close(fd)
    assert_alive(flowfs, uploads)
    flowfs.remount()
    assert read_bytes_head(f, 4) == b"data"
    assert_db_ok(flowfs.db)


def read_bytes_head(path, n):
    with open(path, "rb") as f:
        return f.read(n)


def test_pwrite_crossing_max_offset(flowfs, uploads):
    f = uploads / "f"
    write_bytes(f, b"")
    fd = os.open(f, os.O_RDWR)
    try:
        err = oserror(os.pwrite, fd, b"abcdefgh", MAX_FILE - 3)
        assert err == 0, errname(err)       # the bytes that fit
        assert os.fstat(fd).st_size == MAX_FILE
        assert os.pread(fd, 8, MAX_FILE - 3) == b"abc"
        assert oserror(os.pwrite, fd, b"d", MAX_FILE) == errno.EFBIG
        assert os.fstat(fd).st_size == MAX_FILE
    finally:
        os.close(fd)
    assert_alive(flowfs, uploads)


@pytest.mark.parametrize("off", [BIG, BIG - 1, 2 ** 62, 2 ** 40])
def test_pread_huge_offset(flowfs, uploads, off):
    f = uploads / "f"
    write_bytes(f, b"data")
    fd = os.open(f, os.O_RDONLY)
    try:
        try:
            assert os.pread(fd, 4096, off) == b""
        except OSError as e:
            assert e.errno in (errno.EINVAL, errno.EOVERFLOW), errname(e.errno)
    finally:
        os.close(fd)
    assert_alive(flowfs, uploads)


def test_lseek_huge_then_write(flowfs, uploads):
    f = uploads / "f"
    write_bytes(f, b"")
    fd = os.open(f, os.O_RDWR)
    try:
        pos = os.lseek(fd, BIG, os.SEEK_SET)
        assert pos == BIG
        err = oserror(os.write, fd, b"z")
        assert err in (errno.EFBIG, errno.EINVAL), errname(err)
        for whence in (os.SEEK_DATA, os.SEEK_HOLE):
            e = oserror(os.lseek, fd, 10, whence)
            assert e in (0, errno.ENXIO, errno.EINVAL), errname(e)
    finally:
        os.close(fd)
    assert os.stat(f).st_size == 0
    assert_alive(flowfs, uploads)


def test_zero_length_operations(flowfs, uploads):
    f = uploads / "f"
    write_bytes(f, b"abc")
    fd = os.open(f, os.O_RDWR)
    try:
        assert os.pwrite(fd, b"", 1000) == 0
        assert os.pread(fd, 0, 0) == b""
        assert os.fstat(fd).st_size == 3
    finally:
        os.close(fd)
    assert read_bytes(f) == b"abc"
    assert_alive(flowfs, uploads)


NAMES = ["new\nline", 'q"uote', "'single'", "back\\slash", "tab\tx", "ctl\x01\x7f",
         "ünïcødé", "中文", "🚀 rocket", " leading space", "trailing space ",
         "-dash", "--", "a:b", "a;b|c&d$e`f", "*?[]", ".hidden", "..dots",
         "x" * 255, "é" * 127 + "x", "🚀" * 63 + "abc"]


@pytest.mark.parametrize("name", NAMES, ids=range(len(NAMES)))
def test_odd_names_in_uploads(flowfs, uploads, name):
    write_bytes(uploads / name, name.encode())
    os.mkdir(uploads / "dir")
    os.mkdir(uploads / "dir" / name)
    assert set(os.listdir(uploads)) == {name, "dir"}
    assert os.listdir(uploads / "dir") == [name]
    assert read_bytes(uploads / name) == name.encode()
    os.rename(uploads / name, uploads / "dir" / name / name)
    os.symlink(name, uploads / "link")
    flowfs.remount()
    assert read_bytes(uploads / "dir" / name / name) == name.encode()
    assert os.readlink(uploads / "link") == name
    os.rename(uploads / "dir" / name, uploads / name)
    assert os.listdir(uploads / name) == [name]


@pytest.mark.parametrize("n", [256, 300, 1000, 1024, 2000])
def test_too_long_names_in_uploads(flowfs, uploads, n):
    name = "n" * n
    expected = errno.ENAMETOOLONG
    assert oserror(os.open, uploads / name, os.O_WRONLY | os.O_CREAT, 0o644) == expected
    assert oserror(os.mkdir, uploads / name) == expected
    assert oserror(os.symlink, "t", uploads / name) == expected
    assert oserror(os.stat, uploads / name) == expected
    write_bytes(uploads / "ok", b"")
    assert oserror(os.rename, uploads / "ok", uploads / name) == expected
    assert os.listdir(uploads) == ["ok"]
    assert_alive(flowfs, uploads)


def test_non_utf8_name_in_uploads(flowfs, uploads):
    """POSIX names are bytes.  Accept them fully, or refuse them with EINVAL."""
    base = os.fsencode(str(uploads))
    name = b"latin1-\xe9t\xe9\xff"
    err = oserror(write_bytes, base + b"/" + name, b"bytes")
    assert err in (0, errno.EINVAL), errname(err)
    if err == 0:
        assert os.listdir(base) == [name]
        assert read_bytes(base + b"/" + name) == b"bytes"
        flowfs.remount()
        assert os.listdir(base) == [name]
        os.unlink(base + b"/" + name)
    assert os.listdir(base) == []
    assert_alive(flowfs, uploads)


def test_long_symlink_target(flowfs, uploads):
    target = "x/" * 2040 + "end"           # 4083 bytes, within PATH_MAX
    os.symlink(target, uploads / "l")
    assert os.readlink(uploads / "l") == target
    flowfs.remount()
    assert os.readlink(uploads / "l") == target
    too_long = "y" * 5000
    err = oserror(os.symlink, too_long, uploads / "l2")
    assert err == errno.ENAMETOOLONG, errname(err)
    assert_alive(flowfs, uploads)


def test_path_lookups_of_junk(flowfs, mnt, session):
    for p in ("nope", "s1/nope", "s1/uploads/nope/deeper", "s1/session.json/x",
              "s1/status/x", ".flowfs/nope", "s1/uploads/" + "z" * 255):
        err = oserror(os.stat, mnt / p)
        assert err in (errno.ENOENT, errno.ENOTDIR), f"{p}: {errname(err)}"
    assert oserror(os.mkdir, session / "session.json" / "x") == errno.ENOTDIR
    assert oserror(os.listdir, session / "status") == errno.ENOTDIR
    assert_alive(flowfs, session / "uploads")


def test_many_open_handles(flowfs, uploads):
    fds = []
    try:
        for i in range(300):
            fds.append(os.open(uploads / f"h{i}", os.O_RDWR | os.O_CREAT, 0o644))
        for i, fd in enumerate(fds):
            os.write(fd, b"%d" % i)
    finally:
        for fd in fds:
            os.close(fd)
    for i in range(300):
        assert read_bytes(uploads / f"h{i}") == b"%d" % i
    assert_alive(flowfs, uploads)
