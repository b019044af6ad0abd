"""uploads/ is a real POSIX tree."""

import ctypes
import errno
import os
import shutil
import stat
import time

import pytest

from conftest import (expect, oserror, read_bytes, run_as_in,
                      write_bytes)

libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD = -100
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
UTIME_NOW = (1 << 30) - 1
UTIME_OMIT = (1 << 30) - 2


class Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def renameat2(old, new, flags):
    r = libc.renameat2(AT_FDCWD, os.fsencode(str(old)), AT_FDCWD,
                       os.fsencode(str(new)), ctypes.c_uint(flags))
    if r != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), str(old))


def utimensat(path, atime, mtime, follow=True):
    times = (Timespec * 2)(Timespec(*atime), Timespec(*mtime))
    r = libc.utimensat(AT_FDCWD, os.fsencode(str(path)), times,
                       0 if follow else 0x100)
    if r != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), str(path))


# -- reading and writing ---------------------------------------------------

def test_create_write_read(uploads):
    f = uploads / "a.txt"
    write_bytes(f, b"hello world")
    assert read_bytes(f) == b"hello world"
    st = os.stat(f)
    assert stat.S_ISREG(st.st_mode) and st.st_size == 11
    assert os.listdir(uploads) == ["a.txt"]
    expect(errno.EEXIST, os.open, f, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    expect(errno.ENOENT, os.open, uploads / "missing", os.O_RDONLY)
    expect(errno.EISDIR, os.open, uploads, os.O_WRONLY)
    expect(errno.ENOTDIR, os.open, uploads / "a.txt" / "x", os.O_WRONLY | os.O_CREAT)


def test_pwrite_at_offsets(uploads):
    f = uploads / "p"
    fd = os.open(f, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        assert os.pwrite(fd, b"AAAA", 0) == 4
        assert os.pwrite(fd, b"BBBB", 10000) == 4
        assert os.pwrite(fd, b"CC", 2) == 2
        assert os.pwrite(fd, b"D" * 100, 65530) == 100   # across a 64 KiB boundary
        assert os.fstat(fd).st_size == 65630
        assert os.pread(fd, 10, 0) == b"AACC\0\0\0\0\0\0"
        assert os.pread(fd, 6, 9998) == b"\0\0BBBB"
        assert os.pread(fd, 200, 65525) == b"\0" * 5 + b"D" * 100
        assert os.pread(fd, 10, 65630) == b""
        assert os.pread(fd, 10, 10 ** 9) == b""
    finally:
        os.close(fd)
    want = bytearray(65630)
    want[0:4] = b"AACC"
    want[10000:10004] = b"BBBB"
    want[65530:65630] = b"D" * 100
    assert read_bytes(f) == bytes(want)


def test_overwrite_middle_of_large_file(flowfs, uploads):
    f = uploads / "big"
    data = bytearray(os.urandom(300_000))
    write_bytes(f, bytes(data))
    fd = os.open(f, os.O_WRONLY)
    try:
        for off in (0, 1, 65535, 65536, 131071, 200_000, 299_999):
            os.pwrite(fd, b"\xAB\xCD", off)
            data[off:off + 2] = b"\xAB\xCD"
    finally:
        os.close(fd)
    assert read_bytes(f) == bytes(data)
    flowfs.remount()
    assert read_bytes(f) == bytes(data)
    assert os.stat(f).st_size == len(data)


@pytest.mark.parametrize("how", ["truncate", "ftruncate"])
def test_truncate_shrink_and_grow(flowfs, uploads, how):
    f = uploads / "t"
    data = os.urandom(200_000)
    write_bytes(f, data)

    def trunc(n):
        if how == "truncate":
            os.truncate(f, n)
        else:
            fd = os.open(f, os.O_WRONLY)
            try:
                os.ftruncate(fd, n)
                assert os.fstat(fd).st_size == n
            finally:
                os.close(fd)
        assert os.stat(f).st_size == n

    trunc(70_000)
    assert read_bytes(f) == data[:70_000]
    trunc(250_000)
    # Bytes beyond the old end must read as zeros, not stale data.
    assert read_bytes(f) == data[:70_000] + b"\0" * 180_000
    trunc(5)
    trunc(100)
    assert read_bytes(f) == data[:5] + b"\0" * 95
    flowfs.remount()
    assert read_bytes(f) == data[:5] + b"\0" * 95
    trunc(0)
    assert read_bytes(f) == b""


def test_open_trunc(uploads):
    f = uploads / "ot"
    write_bytes(f, b"x" * 100_000)
    fd = os.open(f, os.O_WRONLY | os.O_TRUNC)
    assert os.fstat(fd).st_size == 0
    os.write(fd, b"short")
    os.close(fd)
    assert read_bytes(f) == b"short"


def test_o_append(flowfs, uploads):
    f = uploads / "log"
    write_bytes(f, b"start\n")
    a = os.open(f, os.O_WRONLY | os.O_APPEND)
    b = os.open(f, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(a, b"a1\n")
        os.write(b, b"b1\n")
        os.write(a, b"a2\n")
        os.lseek(b, 0, os.SEEK_SET)          # O_APPEND ignores the position
        os.write(b, b"b2\n")
    finally:
        os.close(a)
        os.close(b)
    assert read_bytes(f) == b"start\na1\nb1\na2\nb2\n"
    with open(f, "ab") as fh:
        fh.write(b"py\n")
    assert read_bytes(f) == b"start\na1\nb1\na2\nb2\npy\n"
    flowfs.remount()
    assert read_bytes(f) == b"start\na1\nb1\na2\nb2\npy\n"


def test_size_true_while_open(uploads):
    f = uploads / "growing"
    fd = os.open(f, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        total = 0
        for i in range(1, 40):
            os.write(fd, bytes([i % 256]) * (i * 997))
            total += i * 997
            assert os.fstat(fd).st_size == total
            assert os.stat(f).st_size == total
            # Another reader sees exactly st_size bytes.
            assert len(read_bytes(f)) == total
    finally:
        os.close(fd)
    assert os.stat(f).st_size == total


def test_sparse_file(flowfs, uploads):
    f = uploads / "sparse"
    fd = os.open(f, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, b"end", 10 * 1024 * 1024)
    finally:
        os.close(fd)
    st = os.stat(f)
    assert st.st_size == 10 * 1024 * 1024 + 3
    assert st.st_blocks * 512 < st.st_size // 10
    data = read_bytes(f)
    assert len(data) == st.st_size
    assert data[-3:] == b"end"
    assert data[:-3].count(0) == len(data) - 3
    flowfs.remount()
    assert read_bytes(f)[-3:] == b"end"
    # A file made sparse by truncate alone.
    g = uploads / "hole"
    write_bytes(g, b"")
    os.truncate(g, 5 * 1024 * 1024)
    gst = os.stat(g)
    assert gst.st_size == 5 * 1024 * 1024
    assert gst.st_blocks * 512 < gst.st_size // 10
    assert read_bytes(g) == b"\0" * (5 * 1024 * 1024)


def test_dense_file_blocks(uploads):
    f = uploads / "dense"
    write_bytes(f, os.urandom(1024 * 1024))
    st = os.stat(f)
    assert st.st_blocks * 512 >= st.st_size


def test_one_gib_sparse_with_data_at_end(flowfs, uploads):
    f = uploads / "gig"
    size = 1 << 30
    tail = os.urandom(4096)
    fd = os.open(f, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, tail, size - len(tail))
    finally:
        os.close(fd)
    st = os.stat(f)
    assert st.st_size == size
    assert st.st_blocks * 512 < 16 * 1024 * 1024
    fd = os.open(f, os.O_RDONLY)
    try:
        assert os.pread(fd, 4096, size - 4096) == tail
        assert os.pread(fd, 8192, size - 8192) == b"\0" * 4096 + tail
        assert os.pread(fd, 1 << 20, size // 2) == b"\0" * (1 << 20)
        assert os.pread(fd, 100, size) == b""
    finally:
        os.close(fd)
    assert os.path.getsize(flowfs.db) < 64 * 1024 * 1024
    flowfs.remount()
    assert os.stat(f).st_size == size
    with open(f, "rb") as fh:
        fh.seek(size - 4096)
        assert fh.read() == tail


# -- directories -----------------------------------------------------------

def test_mkdir_rmdir(uploads):
    d = uploads / "d"
    os.mkdir(d)
    os.mkdir(d / "e", 0o700)
    assert stat.S_IMODE(os.stat(d / "e").st_mode) == 0o700
    write_bytes(d / "e" / "f", b"x")
    expect(errno.EEXIST, os.mkdir, d)
    expect(errno.ENOTEMPTY, os.rmdir, d)
    expect(errno.ENOTEMPTY, os.rmdir, d / "e")
    expect(errno.ENOTDIR, os.rmdir, d / "e" / "f")
    expect(errno.EISDIR, os.unlink, d / "e")
    os.unlink(d / "e" / "f")
    os.rmdir(d / "e")
    os.rmdir(d)
    assert os.listdir(uploads) == []
    expect(errno.ENOENT, os.rmdir, d)


def test_deep_tree(flowfs, uploads):
    p = uploads
    for i in range(30):
        p = p / f"level{i}"
    os.makedirs(p)
    write_bytes(p / "leaf", b"leaf")
    flowfs.remount()
    assert read_bytes(p / "leaf") == b"leaf"


def test_many_entries_readdir(uploads):
    names = {f"file-{i:04d}-" + "n" * (i % 200) for i in range(700)}
    for n in names:
        write_bytes(uploads / n, b"")
    assert set(os.listdir(uploads)) == names
    with os.scandir(uploads) as it:
        seen = {e.name: e.is_file() for e in it}
    assert seen == {n: True for n in names}
    for n in list(names)[:350]:
        os.unlink(uploads / n)
    assert len(os.listdir(uploads)) == 350


def test_readdir_while_unlinking(uploads):
    for i in range(300):
        write_bytes(uploads / f"x{i}", b"")
    # Deleting entries while iterating must not skip or repeat the rest.
    with os.scandir(uploads) as it:
        for e in it:
            os.unlink(e.path)
    assert os.listdir(uploads) == []


# -- rename ----------------------------------------------------------------

def test_rename_file(flowfs, uploads):
    write_bytes(uploads / "a", b"A")
    ino = os.stat(uploads / "a").st_ino
    os.rename(uploads / "a", uploads / "b")
    assert os.listdir(uploads) == ["b"]
    assert read_bytes(uploads / "b") == b"A"
    assert os.stat(uploads / "b").st_ino == ino
    os.mkdir(uploads / "sub")
    os.rename(uploads / "b", uploads / "sub" / "c")
    assert os.listdir(uploads / "sub") == ["c"]
    flowfs.remount()
    assert read_bytes(uploads / "sub" / "c") == b"A"
    assert os.stat(uploads / "sub" / "c").st_ino == ino


def test_rename_replaces_file(uploads):
    write_bytes(uploads / "new", b"new content")
    write_bytes(uploads / "old", b"old content that is longer")
    ino = os.stat(uploads / "new").st_ino
    os.rename(uploads / "new", uploads / "old")
    assert os.listdir(uploads) == ["old"]
    assert read_bytes(uploads / "old") == b"new content"
    assert os.stat(uploads / "old").st_ino == ino
    assert os.stat(uploads / "old").st_size == len(b"new content")


def test_rename_over_open_target(uploads):
    write_bytes(uploads / "target", b"target data")
    write_bytes(uploads / "src", b"src")
    fd = os.open(uploads / "target", os.O_RDONLY)
    try:
        os.rename(uploads / "src", uploads / "target")
        assert os.pread(fd, 100, 0) == b"target data"
    finally:
        os.close(fd)
    assert read_bytes(uploads / "target") == b"src"


def test_rename_open_file_then_write(uploads):
    fd = os.open(uploads / "before", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.write(fd, b"part1 ")
        os.rename(uploads / "before", uploads / "after")
        os.write(fd, b"part2")
    finally:
        os.close(fd)
    assert os.listdir(uploads) == ["after"]
    assert read_bytes(uploads / "after") == b"part1 part2"


def test_rename_dirs(flowfs, uploads):
    os.makedirs(uploads / "a" / "b")
    write_bytes(uploads / "a" / "b" / "f", b"f")
    os.mkdir(uploads / "empty")
    os.mkdir(uploads / "full")
    write_bytes(uploads / "full" / "x", b"x")
    # Onto an empty directory: replaces it.
    os.rename(uploads / "a", uploads / "empty")
    assert sorted(os.listdir(uploads)) == ["empty", "full"]
    assert read_bytes(uploads / "empty" / "b" / "f") == b"f"
    # Onto a non-empty directory.
    expect({errno.ENOTEMPTY, errno.EEXIST}, os.rename, uploads / "empty",
           uploads / "full")
    # Into its own subtree.
    expect(errno.EINVAL, os.rename, uploads / "empty", uploads / "empty" / "b" / "in")
    # A file onto a directory and a directory onto a file.
    write_bytes(uploads / "file", b"")
    expect(errno.EISDIR, os.rename, uploads / "file", uploads / "full")
    expect(errno.ENOTDIR, os.rename, uploads / "full", uploads / "file")
    os.rename(uploads / "empty", uploads / "moved")
    flowfs.remount()
    assert read_bytes(uploads / "moved" / "b" / "f") == b"f"
    assert read_bytes(uploads / "full" / "x") == b"x"
    assert sorted(os.listdir(uploads)) == ["file", "full", "moved"]


def test_rename_noreplace(uploads):
    write_bytes(uploads / "a", b"a")
    write_bytes(uploads / "b", b"b")
    expect(errno.EEXIST, renameat2, uploads / "a", uploads / "b", RENAME_NOREPLACE)
    assert read_bytes(uploads / "b") == b"b"
    renameat2(uploads / "a", uploads / "c", RENAME_NOREPLACE)
    assert sorted(os.listdir(uploads)) == ["b", "c"]


def test_rename_missing_source(uploads):
    expect(errno.ENOENT, os.rename, uploads / "nope", uploads / "x")


def test_temp_then_rename_save(flowfs, uploads):
    f = uploads / "doc.txt"
    write_bytes(f, b"version 1")
    for v in range(2, 6):
        tmp = uploads / f".doc.txt.tmp{v}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, b"version %d" % v)
        os.fsync(fd)
        os.close(fd)
        os.rename(tmp, f)
        assert read_bytes(f) == b"version %d" % v
    assert os.listdir(uploads) == ["doc.txt"]
    flowfs.remount()
    assert read_bytes(f) == b"version 5"


# -- unlink ----------------------------------------------------------------

def test_unlink_while_open(flowfs, uploads):
    f = uploads / "tmpfile"
    data = os.urandom(150_000)
    write_bytes(f, data)
    fd = os.open(f, os.O_RDWR)
    try:
        os.unlink(f)
        assert os.listdir(uploads) == []
        expect(errno.ENOENT, os.stat, f)
        assert os.pread(fd, len(data) + 10, 0) == data
        assert os.fstat(fd).st_size == len(data)
        os.pwrite(fd, b"more", len(data))
        assert os.pread(fd, 4, len(data)) == b"more"
        # The name is free again.
        write_bytes(f, b"other")
        assert read_bytes(f) == b"other"
        assert os.pread(fd, 10, 0) == data[:10]
    finally:
        os.close(fd)
    assert read_bytes(f) == b"other"
    flowfs.remount()
    assert os.listdir(uploads) == ["tmpfile"]
    assert read_bytes(f) == b"other"


def test_open_files_outlive_their_session(flowfs, session):
    """rm -rf of a session while files in it are open, one of them already
    unlinked: both descriptors keep reading and writing what they had."""
    kept, gone = session / "uploads" / "kept", session / "uploads" / "gone"
    write_bytes(kept, b"kept data")
    write_bytes(gone, b"unlinked data")
    fd_kept, fd_gone = os.open(kept, os.O_RDWR), os.open(gone, os.O_RDWR)
    try:
        os.unlink(gone)
        shutil.rmtree(session)
        assert not os.path.exists(session)
        assert os.pread(fd_kept, 100, 0) == b"kept data"
        assert os.pread(fd_gone, 100, 0) == b"unlinked data"
        os.pwrite(fd_gone, b"!", 13)
        assert os.pread(fd_gone, 100, 0) == b"unlinked data!"
    finally:
        os.close(fd_kept)
        os.close(fd_gone)


def test_unlink_then_remount_frees_name(flowfs, uploads):
    write_bytes(uploads / "x", b"1")
    os.unlink(uploads / "x")
    expect(errno.ENOENT, os.unlink, uploads / "x")
    flowfs.remount()
    assert os.listdir(uploads) == []


# -- metadata --------------------------------------------------------------

def test_chmod(flowfs, uploads):
    f = uploads / "m"
    write_bytes(f, b"x")
    os.mkdir(uploads / "d")
    for mode in (0o600, 0o755, 0o4750, 0o000, 0o777):
        os.chmod(f, mode)
        assert stat.S_IMODE(os.stat(f).st_mode) == mode
    os.chmod(uploads / "d", 0o711)
    os.chmod(f, 0o640)
    flowfs.remount()
    assert stat.S_IMODE(os.stat(f).st_mode) == 0o640
    assert stat.S_IMODE(os.stat(uploads / "d").st_mode) == 0o711
    assert stat.S_ISREG(os.stat(f).st_mode)


def test_create_mode_honours_umask(uploads):
    old = os.umask(0o027)
    try:
        fd = os.open(uploads / "u", os.O_WRONLY | os.O_CREAT, 0o666)
        os.close(fd)
        os.mkdir(uploads / "ud", 0o777)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(uploads / "u").st_mode) == 0o640
    assert stat.S_IMODE(os.stat(uploads / "ud").st_mode) == 0o750


@pytest.mark.root
def test_chown_by_root(flowfs, uploads):
    f = uploads / "owned"
    write_bytes(f, b"x")
    os.symlink("owned", uploads / "ln")
    os.chown(f, 1234, 5678)
    os.lchown(uploads / "ln", 4321, 8765)
    assert (os.stat(f).st_uid, os.stat(f).st_gid) == (1234, 5678)
    lst = os.lstat(uploads / "ln")
    assert (lst.st_uid, lst.st_gid) == (4321, 8765)
    flowfs.remount()
    assert (os.stat(f).st_uid, os.stat(f).st_gid) == (1234, 5678)


def test_utime_ns_precision(flowfs, uploads):
    f = uploads / "t"
    write_bytes(f, b"x")
    os.mkdir(uploads / "d")
    atime = 1_234_567_891_123_456_789
    mtime = 1_000_000_001_987_654_321
    os.utime(f, ns=(atime, mtime))
    os.utime(uploads / "d", ns=(atime + 1, mtime + 1))
    st = os.stat(f)
    assert st.st_mtime_ns == mtime
    assert st.st_atime_ns == atime
    assert os.stat(uploads / "d").st_mtime_ns == mtime + 1
    flowfs.remount()
    assert os.stat(f).st_mtime_ns == mtime
    assert os.stat(f).st_atime_ns == atime
    assert os.stat(uploads / "d").st_mtime_ns == mtime + 1
    # Far in the future.
    os.utime(f, ns=(4_102_444_800_000_000_001, 4_102_444_800_999_999_999))
    st = os.stat(f)
    assert st.st_atime_ns == 4_102_444_800_000_000_001
    assert st.st_mtime_ns == 4_102_444_800_999_999_999


def test_utime_before_1970(flowfs, uploads):
    f = uploads / "old"
    write_bytes(f, b"x")
    os.utime(f, ns=(-1_500_000_000, -86_400_000_000_001))
    st = os.stat(f)
    assert st.st_atime_ns == -1_500_000_000
    assert st.st_mtime_ns == -86_400_000_000_001
    flowfs.remount()
    assert os.stat(f).st_mtime_ns == -86_400_000_000_001


def test_utime_beyond_2262_is_clamped(flowfs, uploads):
    # Times are nanoseconds in an int64 (1677..2262); beyond, the nearest
    # end is kept, as Linux filesystems clamp to their range — never a
    # wrapped-around date (touch -d 2300-01-01 once read back as 1715).
    f = uploads / "far"
    write_bytes(f, b"x")
    year_2300 = 10_413_792_000
    os.utime(f, (year_2300, year_2300))
    assert os.stat(f).st_mtime_ns == 2**63 - 1
    os.utime(f, (-year_2300, -year_2300))
    assert os.stat(f).st_mtime_ns == -2**63
    flowfs.remount()
    assert os.stat(f).st_mtime_ns == -2**63


@pytest.mark.root
def test_setgid_folder_passes_its_group_on(uploads):
    g = uploads / "shared"
    os.mkdir(g)
    os.chown(g, -1, 4242)
    os.chmod(g, 0o2777)
    write_bytes(g / "f", b"x")
    os.mkdir(g / "d")
    os.symlink("f", g / "l")
    assert os.stat(g / "f").st_gid == 4242
    assert os.stat(g / "d").st_gid == 4242
    assert os.lstat(g / "l").st_gid == 4242
    assert os.stat(g / "d").st_mode & stat.S_ISGID
    assert not os.stat(g / "f").st_mode & stat.S_ISGID


def test_utimensat_now_and_omit(uploads):
    f = uploads / "t"
    write_bytes(f, b"x")
    os.utime(f, ns=(10**18, 2 * 10**18))
    utimensat(f, (0, UTIME_OMIT), (0, UTIME_OMIT))
    st = os.stat(f)
    assert (st.st_atime_ns, st.st_mtime_ns) == (10**18, 2 * 10**18)
    before = time.time()
    utimensat(f, (0, UTIME_NOW), (0, UTIME_OMIT))
    after = time.time()
    st = os.stat(f)
    assert st.st_mtime_ns == 2 * 10**18
    assert before - 5 <= st.st_atime_ns / 1e9 <= after + 5
    utimensat(f, (0, UTIME_OMIT), (0, UTIME_NOW))
    st2 = os.stat(f)
    assert st2.st_atime_ns == st.st_atime_ns
    assert before - 5 <= st2.st_mtime_ns / 1e9 <= time.time() + 5
    # touch(1) with no options sets both to now.
    os.utime(f, ns=(5, 5))
    os.utime(f)
    assert os.stat(f).st_mtime_ns > 5


def test_mtime_only_changes_with_content(flowfs, uploads):
    f = uploads / "m"
    write_bytes(f, b"content")
    old = 1_000_000_000_000_000_000
    os.utime(f, ns=(old, old))
    read_bytes(f)
    os.stat(f)
    fd = os.open(f, os.O_RDWR)      # open for write, but write nothing
    os.pread(fd, 10, 0)
    os.close(fd)
    os.chmod(f, 0o600)
    os.rename(f, uploads / "m2")
    os.rename(uploads / "m2", f)
    assert os.stat(f).st_mtime_ns == old
    flowfs.remount()
    assert os.stat(f).st_mtime_ns == old
    read_bytes(f)
    assert os.stat(f).st_mtime_ns == old
    before = time.time()
    fd = os.open(f, os.O_WRONLY)
    os.pwrite(fd, b"C", 0)
    os.close(fd)
    m = os.stat(f).st_mtime_ns
    assert m != old and before - 5 <= m / 1e9 <= time.time() + 5
    os.utime(f, ns=(old, old))
    os.truncate(f, 2)
    assert os.stat(f).st_mtime_ns != old
    assert read_bytes(f) == b"Co"


def test_symlinks(flowfs, uploads):
    write_bytes(uploads / "real", b"real data")
    os.symlink("real", uploads / "rel")
    os.symlink("/nonexistent/abs/path", uploads / "dangling")
    long_target = "t/" * 1000 + "end"
    os.symlink(long_target, uploads / "long")
    os.mkdir(uploads / "dir")
    os.symlink("../real", uploads / "dir" / "up")
    for name, target in (("rel", "real"), ("dangling", "/nonexistent/abs/path"),
                         ("long", long_target)):
        lst = os.lstat(uploads / name)
        assert stat.S_ISLNK(lst.st_mode)
        assert os.readlink(uploads / name) == target
        assert lst.st_size == len(target.encode())
    assert read_bytes(uploads / "rel") == b"real data"
    assert read_bytes(uploads / "dir" / "up") == b"real data"
    expect(errno.ENOENT, os.stat, uploads / "dangling")
    expect(errno.EEXIST, os.symlink, "x", uploads / "rel")
    expect(errno.EINVAL, os.readlink, uploads / "real")
    flowfs.remount()
    assert os.readlink(uploads / "long") == long_target
    assert read_bytes(uploads / "rel") == b"real data"
    os.rename(uploads / "rel", uploads / "rel2")
    assert os.readlink(uploads / "rel2") == "real"
    os.unlink(uploads / "rel2")
    assert read_bytes(uploads / "real") == b"real data"


def test_statfs(mnt, uploads):
    for p in (mnt, uploads):
        sv = os.statvfs(p)
        assert sv.f_namemax == 255
        assert sv.f_bsize > 0
        assert sv.f_blocks >= sv.f_bfree >= 0


def test_unsupported_kinds_and_calls_refused(uploads):
    """README: no FIFOs, sockets or devices (EPERM), no extended
    attributes, no fallocate(), no RENAME_EXCHANGE; nothing is left."""
    write_bytes(uploads / "a", b"A")
    write_bytes(uploads / "b", b"B")
    expect(errno.EPERM, os.mkfifo, uploads / "fifo")
    expect(errno.EPERM, os.mknod, uploads / "sock", stat.S_IFSOCK | 0o644)
    expect(errno.EPERM, os.mknod, uploads / "null", stat.S_IFCHR | 0o644,
           os.makedev(1, 3))
    expect(errno.EOPNOTSUPP, os.setxattr, uploads / "a", "user.k", b"v")
    expect({errno.EOPNOTSUPP, errno.ENODATA}, os.getxattr, uploads / "a",
           "user.k")
    fd = os.open(uploads / "a", os.O_WRONLY)
    try:
        r = libc.fallocate(fd, 0, ctypes.c_long(0), ctypes.c_long(1 << 20))
        assert r == -1 and ctypes.get_errno() == errno.EOPNOTSUPP
    finally:
        os.close(fd)
    expect(errno.EINVAL, renameat2, uploads / "a", uploads / "b",
           RENAME_EXCHANGE)
    assert sorted(os.listdir(uploads)) == ["a", "b"]
    assert read_bytes(uploads / "a") == b"A"
    assert read_bytes(uploads / "b") == b"B"
    assert os.stat(uploads / "a").st_size == 1


def test_hard_link_refused(uploads):
    write_bytes(uploads / "f", b"x")
    expect(errno.EPERM, os.link, uploads / "f", uploads / "g")
    assert os.listdir(uploads) == ["f"]


def test_new_files_belong_to_caller(uploads):
    write_bytes(uploads / "f", b"x")
    os.mkdir(uploads / "d")
    os.symlink("f", uploads / "l")
    for n in ("f", "d", "l"):
        st = os.lstat(uploads / n)
        assert (st.st_uid, st.st_gid) == (os.getuid(), os.getgid()), n


@pytest.mark.root
def test_new_files_belong_to_other_uid(make_flowfs):
    fs = make_flowfs(extra_args=["-o", "allow_other"])
    s = fs.mnt / "shared"
    os.mkdir(s, 0o755)
    d = s / "uploads" / "drop"
    os.mkdir(d)
    os.chmod(d, 0o777)
    uid, gid = 4242, 4343

    def child():
        fd = os.open("file", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, b"mine")
        os.close(fd)
        os.mkdir("dir")
        os.symlink("file", "link")
        return 0

    assert run_as_in(uid, gid, d, child) == 0
    for n in ("file", "dir", "link"):
        st = os.lstat(d / n)
        assert (st.st_uid, st.st_gid) == (uid, gid), n
    assert read_bytes(d / "file") == b"mine"


@pytest.mark.root
def test_permissions_enforced_for_other_uid(make_flowfs):
    fs = make_flowfs(extra_args=["-o", "allow_other"])
    s = fs.mnt / "p"
    os.mkdir(s, 0o755)
    up = s / "uploads"
    write_bytes(up / "private", b"secret")
    os.chmod(up / "private", 0o600)
    write_bytes(up / "public", b"hello")
    os.chmod(up / "public", 0o644)

    def child():
        if os.read(os.open("public", os.O_RDONLY), 10) != b"hello":
            return 1
        e1 = oserror(os.open, "private", os.O_RDONLY)
        e2 = oserror(os.open, "new", os.O_WRONLY | os.O_CREAT, 0o644)
        e3 = oserror(os.open, "public", os.O_WRONLY)
        return 0 if (e1, e2, e3) == (errno.EACCES,) * 3 else 2

    assert run_as_in(4242, 4343, up, child) == 0


def test_inodes_stable_across_remount(flowfs, session, uploads):
    os.makedirs(uploads / "a" / "b")
    write_bytes(uploads / "a" / "f", b"f")
    os.symlink("f", uploads / "a" / "l")
    write_bytes(session / "scratch", b"s")
    write_bytes(session / "nodes" / "n1.json", b'{"label": "a"}')
    paths = [session, session / "session.json", session / "status", uploads,
             uploads / "a", uploads / "a" / "b", uploads / "a" / "f",
             uploads / "a" / "l", session / "scratch",
             session / "nodes", session / "nodes" / "n1.json",
             session / "parameters.json", session / "output",
             flowfs.mnt / ".flowfs", flowfs.mnt / ".flowfs" / "version"]
    before = {p: os.lstat(p).st_ino for p in paths}
    assert len(set(before.values())) == len(paths), "inode numbers not unique"
    flowfs.remount()
    assert {p: os.lstat(p).st_ino for p in paths} == before


def test_inode_numbers_not_reused_confusingly(uploads):
    write_bytes(uploads / "a", b"a")
    write_bytes(uploads / "b", b"b")
    ia, ib = os.stat(uploads / "a").st_ino, os.stat(uploads / "b").st_ino
    assert ia != ib
    assert os.stat(uploads).st_ino not in (ia, ib)


def test_fsync_and_fdatasync(uploads):
    fd = os.open(uploads / "s", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.write(fd, b"synced")
        os.fsync(fd)
        os.fdatasync(fd)
    finally:
        os.close(fd)
    dfd = os.open(uploads, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
    assert read_bytes(uploads / "s") == b"synced"


def test_sessions_isolated(mnt):
    os.mkdir(mnt / "a")
    os.mkdir(mnt / "b")
    write_bytes(mnt / "a" / "uploads" / "only-a", b"a")
    os.mkdir(mnt / "a" / "uploads" / "dir-a")
    write_bytes(mnt / "b" / "uploads" / "only-b", b"b")
    assert sorted(os.listdir(mnt / "a" / "uploads")) == ["dir-a", "only-a"]
    assert os.listdir(mnt / "b" / "uploads") == ["only-b"]
    expect(errno.ENOENT, os.stat, mnt / "b" / "uploads" / "only-a")
    expect(errno.ENOENT, os.stat, mnt / "b" / "uploads" / "dir-a")
    write_bytes(mnt / "b" / "uploads" / "same", b"bbb")
    write_bytes(mnt / "a" / "uploads" / "same", b"a")
    assert read_bytes(mnt / "b" / "uploads" / "same") == b"bbb"
    assert read_bytes(mnt / "a" / "uploads" / "same") == b"a"
