"""The root of the mount: sessions as folders and the read-only .flowfs/."""

import errno
import json
import os
import shutil
import sqlite3
import stat
import subprocess

import pytest

from conftest import (SESSION_ENTRIES, expect, oserror, project_version,
                      put_json, read_bytes, readonly_errno,
                      session_doc, write_bytes)


def test_fresh_root_lists_only_flowfs(mnt):
    assert os.listdir(mnt) == [".flowfs"]
    st = os.stat(mnt)
    assert stat.S_ISDIR(st.st_mode)


def test_flowfs_dir_and_version(flowfs):
    d = flowfs.mnt / ".flowfs"
    st = os.stat(d)
    assert stat.S_ISDIR(st.st_mode)
    assert stat.S_IMODE(st.st_mode) == 0o555
    assert "version" in os.listdir(d)
    v = d / "version"
    vst = os.stat(v)
    assert stat.S_ISREG(vst.st_mode)
    assert stat.S_IMODE(vst.st_mode) == 0o444
    data = read_bytes(v)
    assert vst.st_size == len(data)
    con = sqlite3.connect(f"file:{flowfs.db}?mode=ro", uri=True)
    try:
        schema = con.execute("PRAGMA user_version").fetchone()[0]
    finally:
        con.close()
    assert schema >= 1
    assert data.decode() == (f"flowfs {project_version()}\n"
                             f"database schema {schema}\n")


def test_flowfs_is_read_only(mnt):
    d = mnt / ".flowfs"
    v = d / "version"
    before = read_bytes(v)
    for flags in (os.O_WRONLY, os.O_RDWR, os.O_WRONLY | os.O_TRUNC,
                  os.O_WRONLY | os.O_APPEND):
        expect({errno.EACCES, errno.EROFS}, os.open, v, flags)
    expect(readonly_errno(), os.open, d / "new", os.O_WRONLY | os.O_CREAT, 0o644)
    expect(readonly_errno(), os.mkdir, d / "sub")
    expect(readonly_errno(), os.unlink, v)
    expect(readonly_errno(), os.rename, v, d / "v2")
    expect(readonly_errno(), os.symlink, "x", d / "link")
    assert oserror(os.rmdir, d) != 0
    assert read_bytes(v) == before
    assert sorted(os.listdir(d)) == ["config", "log", "skills", "version"]
    assert os.listdir(mnt) == [".flowfs"]


def test_flowfs_version_setattr_refused(mnt):
    v = mnt / ".flowfs" / "version"
    before = read_bytes(v)
    # truncate(2) needs no open(); root passes the kernel's permission check.
    expect({errno.EROFS, errno.EPERM, errno.EACCES}, os.truncate, v, 0)
    expect({errno.EROFS, errno.EPERM, errno.EACCES}, os.chmod, v, 0o666)
    expect({errno.EROFS, errno.EPERM, errno.EACCES}, os.chmod,
                 mnt / ".flowfs", 0o777)
    assert read_bytes(v) == before
    assert stat.S_IMODE(os.stat(v).st_mode) == 0o444


def test_mkdir_creates_session(flowfs):
    mnt = flowfs.mnt
    os.mkdir(mnt / "alpha")
    os.mkdir(mnt / "beta", 0o700)
    assert sorted(os.listdir(mnt)) == [".flowfs", "alpha", "beta"]
    for name in ("alpha", "beta"):
        st = os.stat(mnt / name)
        assert stat.S_ISDIR(st.st_mode)
        assert (st.st_uid, st.st_gid) == (os.getuid(), os.getgid())
        assert set(os.listdir(mnt / name)) == SESSION_ENTRIES
        assert os.path.isdir(mnt / name / "uploads")
        assert os.listdir(mnt / name / "uploads") == []
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(mnt / "alpha").st_mode) == 0o777 & ~umask
    assert stat.S_IMODE(os.stat(mnt / "beta").st_mode) == 0o700
    # Sessions survive a remount.
    flowfs.remount()
    assert sorted(os.listdir(mnt)) == [".flowfs", "alpha", "beta"]
    assert stat.S_IMODE(os.stat(mnt / "beta").st_mode) == 0o700


def test_session_file_modes(session):
    sj = os.stat(session / "session.json")
    assert stat.S_ISREG(sj.st_mode) and stat.S_IMODE(sj.st_mode) == 0o644
    # generated files are writable by the owner: what is written is
    # dropped (so a copy of the session copies back)
    stt = os.stat(session / "status")
    assert stat.S_ISREG(stt.st_mode) and stat.S_IMODE(stt.st_mode) == 0o644
    po = os.stat(session / "parameters_output")
    assert stat.S_ISDIR(po.st_mode) and stat.S_IMODE(po.st_mode) == 0o755
    assert stat.S_ISDIR(os.stat(session / "uploads").st_mode)
    for name in ("session.json", "status"):
        assert os.stat(session / name).st_size == len(read_bytes(session / name))


def test_mkdir_existing_session_eexist(mnt):
    os.mkdir(mnt / "dup")
    expect(errno.EEXIST, os.mkdir, mnt / "dup")


@pytest.mark.parametrize("name", [".x", ".hidden", "..."])
def test_dot_names_einval(mnt, name):
    expect(errno.EINVAL, os.mkdir, mnt / name)
    assert os.listdir(mnt) == [".flowfs"]


@pytest.mark.parametrize("name", [b"\xff", b"bad\xc3", b"\xc0\xaf", b"a\xed\xa0\x80b",
                                  b"\xf8\x88\x80\x80\x80"])
def test_invalid_utf8_names_einval(mnt, name):
    expect(errno.EINVAL, os.mkdir, os.fsencode(str(mnt)) + b"/" + name)
    assert os.listdir(mnt) == [".flowfs"]


def test_long_names(mnt):
    ok_ascii = "a" * 255
    ok_multi = "é" * 127 + "x"            # 255 bytes of UTF-8
    ok_emoji = "🚀" * 63 + "abc"          # 4*63 + 3 = 255
    for name in (ok_ascii, ok_multi, ok_emoji):
        assert len(name.encode()) == 255
        os.mkdir(mnt / name)
        assert name in os.listdir(mnt)
        doc = json.loads(read_bytes(mnt / name / "session.json"))
        assert doc["id"] == name
    for name in ("b" * 256, "é" * 128, "b" * 1000):
        expect(errno.ENAMETOOLONG, os.mkdir, mnt / name)
    expect(errno.ENAMETOOLONG, os.rename, mnt / ok_ascii, mnt / ("c" * 256))
    assert ok_ascii in os.listdir(mnt)


@pytest.mark.parametrize("name", [
    "with space", 'q"uote', "back\\slash", "ünïcødé", "中文会话", "emoji 🚀",
    "-dash", "a.b", "x~", "ends.", "new\nline", "tab\tname", "ctl\x01\x1f"])
def test_unusual_valid_names(mnt, name):
    os.mkdir(mnt / name)
    assert name in os.listdir(mnt)
    data = read_bytes(mnt / name / "session.json")
    doc = json.loads(data)
    assert doc["id"] == name
    assert data.decode() == json.dumps(doc, indent=2, ensure_ascii=False)
    shutil.rmtree(mnt / name)
    assert name not in os.listdir(mnt)


def test_root_refuses_files_and_symlinks(mnt):
    expect(errno.EPERM, os.open, mnt / "file", os.O_WRONLY | os.O_CREAT, 0o644)
    expect(errno.EPERM, os.symlink, "target", mnt / "link")
    assert os.listdir(mnt) == [".flowfs"]


def test_mkdir_inside_unknown_session_enoent(mnt):
    expect(errno.ENOENT, os.mkdir, mnt / "nope" / "x")
    expect(errno.ENOENT, os.stat, mnt / "nope")


def test_rename_session(flowfs):
    mnt = flowfs.mnt
    x = mnt / "X"
    os.mkdir(x)
    created = json.loads(read_bytes(x / "session.json"))["created"]
    write_bytes(x / "uploads" / "f.txt", b"hello")
    os.mkdir(x / "uploads" / "d")
    write_bytes(x / "uploads" / "d" / "g", b"world")
    write_bytes(x / "notes.txt", b"scratch")
    inos = {p: os.lstat(x / p).st_ino
            for p in ("uploads", "uploads/f.txt", "uploads/d", "uploads/d/g",
                      "notes.txt")}
    os.rename(x, mnt / "Y")
    assert sorted(os.listdir(mnt)) == [".flowfs", "Y"]
    expect(errno.ENOENT, os.stat, x)
    y = mnt / "Y"
    assert read_bytes(y / "uploads" / "f.txt") == b"hello"
    assert read_bytes(y / "uploads" / "d" / "g") == b"world"
    assert read_bytes(y / "notes.txt") == b"scratch"
    for p, ino in inos.items():
        assert os.lstat(y / p).st_ino == ino, p
    data = read_bytes(y / "session.json")
    assert data.decode() == json.dumps(session_doc("Y", created),
                                       indent=2, ensure_ascii=False)
    flowfs.remount()
    data = read_bytes(y / "session.json")
    assert json.loads(data) == session_doc("Y", created)
    assert read_bytes(y / "uploads" / "d" / "g") == b"world"
    # The old name can be used again for a fresh session.
    os.mkdir(x)
    assert os.listdir(x / "uploads") == []
    assert json.loads(read_bytes(x / "session.json"))["id"] == "X"


def test_rename_session_keeps_title(mnt):
    os.mkdir(mnt / "a")
    write_bytes(mnt / "a" / "session.json", b'{"title": "kept"}')
    os.rename(mnt / "a", mnt / "b")
    assert json.loads(read_bytes(mnt / "b" / "session.json"))["title"] == "kept"


def test_rename_session_with_mv(mnt):
    os.mkdir(mnt / "one")
    write_bytes(mnt / "one" / "uploads" / "f", b"1")
    r = subprocess.run(["mv", str(mnt / "one"), str(mnt / "two")],
                       capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert read_bytes(mnt / "two" / "uploads" / "f") == b"1"
    assert "one" not in os.listdir(mnt)


def test_rename_session_onto_empty_session_replaces(mnt):
    os.mkdir(mnt / "src")
    os.mkdir(mnt / "dst")
    src_created = json.loads(read_bytes(mnt / "src" / "session.json"))["created"]
    write_bytes(mnt / "src" / "uploads" / "f", b"data")
    os.rename(mnt / "src", mnt / "dst")
    assert sorted(os.listdir(mnt)) == [".flowfs", "dst"]
    assert read_bytes(mnt / "dst" / "uploads" / "f") == b"data"
    doc = json.loads(read_bytes(mnt / "dst" / "session.json"))
    assert doc == session_doc("dst", src_created)


def test_rename_session_onto_session_with_data_enotempty(mnt):
    os.mkdir(mnt / "src")
    os.mkdir(mnt / "dst")
    write_bytes(mnt / "dst" / "uploads" / "keep", b"dst data")
    write_bytes(mnt / "src" / "uploads" / "f", b"src data")
    expect({errno.ENOTEMPTY, errno.EEXIST}, os.rename, mnt / "src", mnt / "dst")
    assert read_bytes(mnt / "dst" / "uploads" / "keep") == b"dst data"
    assert read_bytes(mnt / "src" / "uploads" / "f") == b"src data"
    # A scratch file counts as user data as well.
    os.mkdir(mnt / "third")
    write_bytes(mnt / "third" / "notes.txt", b"n")
    expect({errno.ENOTEMPTY, errno.EEXIST}, os.rename, mnt / "src", mnt / "third")


@pytest.mark.parametrize("target,err", [(".hidden", errno.EINVAL),
                                        ("x" * 256, errno.ENAMETOOLONG)])
def test_rename_session_bad_target(mnt, target, err):
    os.mkdir(mnt / "s")
    expect(err, os.rename, mnt / "s", mnt / target)
    assert sorted(os.listdir(mnt)) == [".flowfs", "s"]


def test_rename_session_bad_utf8_target(mnt):
    os.mkdir(mnt / "s")
    base = os.fsencode(str(mnt))
    expect(errno.EINVAL, os.rename, base + b"/s", base + b"/\xff\xfe")
    assert sorted(os.listdir(mnt)) == [".flowfs", "s"]


def test_rename_flowfs_refused(mnt):
    assert oserror(os.rename, mnt / ".flowfs", mnt / "stolen") != 0
    assert os.listdir(mnt) == [".flowfs"]


def test_rmdir_session(mnt):
    os.mkdir(mnt / "empty")
    os.rmdir(mnt / "empty")
    assert os.listdir(mnt) == [".flowfs"]
    expect(errno.ENOENT, os.rmdir, mnt / "empty")


def test_rmdir_session_with_title_only(mnt):
    # A title is not user data in uploads/ nor a scratch file.
    os.mkdir(mnt / "t")
    write_bytes(mnt / "t" / "session.json", b'{"title": "x"}')
    os.rmdir(mnt / "t")
    assert os.listdir(mnt) == [".flowfs"]


@pytest.mark.parametrize("what", ["file", "dir", "symlink", "scratch",
                                  "output"])
def test_rmdir_session_with_user_data_enotempty(mnt, what):
    s = mnt / "full"
    os.mkdir(s)
    if what == "output":
        write_bytes(s / "output" / "result.txt", b"r")
    elif what == "file":
        write_bytes(s / "uploads" / "f", b"")
    elif what == "dir":
        os.mkdir(s / "uploads" / "d")
    elif what == "symlink":
        os.symlink("nowhere", s / "uploads" / "l")
    else:
        write_bytes(s / "scratch.txt", b"x")
    expect(errno.ENOTEMPTY, os.rmdir, s)
    assert "full" in os.listdir(mnt)
    assert set(os.listdir(s)) >= SESSION_ENTRIES


def test_rm_rf_session(flowfs):
    mnt = flowfs.mnt
    s = mnt / "doomed"
    os.mkdir(s)
    write_bytes(s / "session.json", b'{"title": "bye"}')
    up = s / "uploads"
    for i in range(20):
        write_bytes(up / f"f{i}", os.urandom(1000))
    os.makedirs(up / "a" / "b" / "c")
    write_bytes(up / "a" / "b" / "c" / "deep", b"deep")
    os.symlink("a/b", up / "link")
    write_bytes(s / ".session.json.swp", b"swap")
    write_bytes(s / "session.json~", b"backup")
    os.mkdir(mnt / "survivor")
    write_bytes(mnt / "survivor" / "uploads" / "f", b"stay")
    r = subprocess.run(["rm", "-rf", str(s)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    assert sorted(os.listdir(mnt)) == [".flowfs", "survivor"]
    assert read_bytes(mnt / "survivor" / "uploads" / "f") == b"stay"
    flowfs.remount()
    assert sorted(os.listdir(mnt)) == [".flowfs", "survivor"]
    os.mkdir(s)
    assert os.listdir(s / "uploads") == []
    assert json.loads(read_bytes(s / "session.json"))["title"] == ""


def test_shutil_rmtree_session(mnt):
    s = mnt / "gone"
    os.mkdir(s)
    os.makedirs(s / "uploads" / "x" / "y")
    write_bytes(s / "uploads" / "x" / "y" / "z", b"z")
    shutil.rmtree(s)
    assert os.listdir(mnt) == [".flowfs"]


def test_many_sessions_listed(mnt):
    names = {f"session-{i:03d}" for i in range(150)}
    for n in names:
        os.mkdir(mnt / n)
    assert set(os.listdir(mnt)) == names | {".flowfs"}


@pytest.mark.root      # chown to other owners
def test_generated_files_belong_to_the_session_folders_owner(flowfs):
    """Every file flowfs shows in a session — documents, generated files,
    a collection's documents, the summary link — has the session folder's
    owner, and follows a chown of it (the daemon runs as root here, so
    an owner other than root proves where it comes from)."""
    s = flowfs.mnt / "owned"
    os.mkdir(s)
    assert put_json(s / "session.json", {"skill": "scientific-workflow"}) == 0
    assert put_json(s / "request.json", {"input": {"description": "d"}}) == 0
    assert put_json(s / "rounds" / "1.json", {
        "phenomenon": "p", "hypothesis": "h", "model": "m", "experiment": "e"}) == 0
    assert put_json(s / "nodes" / "n.json", {"label": "x"}) == 0
    os.chown(s, 1234, 5678)
    for rel in ("session.json", "status", "input.json", "context.txt", "engine.log",
                "rounds/1.json", "nodes/n.json", "output/summary.json",
                "parameters.json"):
        st = os.stat(s / rel)
        assert (st.st_uid, st.st_gid) == (1234, 5678), rel
    st = os.lstat(s / "summary.json")
    assert (st.st_uid, st.st_gid) == (1234, 5678)
    # listings say the same (readdirplus hands the attributes over)
    out = subprocess.run(["ls", "-ln", str(s / "nodes"), str(s / "rounds")],
                         capture_output=True, text=True, check=True).stdout
    owners = {tuple(l.split()[2:4]) for l in out.splitlines() if l.startswith("-")}
    assert owners == {("1234", "5678")}
    os.chown(s, 4321, 8765)
    assert (os.stat(s / "status").st_uid, os.stat(s / "rounds" / "1.json").st_gid) == (4321, 8765)
