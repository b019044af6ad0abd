"""Real tools in uploads/ (and on session.json): cp -a, rsync -a, tar x,
sed -i, vim in ex mode, temp-file-then-rename."""

import io
import json
import os
import shutil
import stat
import subprocess
import tarfile

import pytest

from conftest import SESSION_ENTRIES, read_bytes, session_doc, vim, write_bytes


def run(args, **kw):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=60, **kw)
    assert r.returncode == 0, f"{args}: rc={r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


def make_source_tree(root):
    """A small tree with files, dirs, symlinks, odd modes, odd names, ns mtimes."""
    root.mkdir()
    (root / "dir" / "sub").mkdir(parents=True)
    (root / "empty").mkdir()
    files = {
        "a.txt": b"alpha\n",
        "dir/b.bin": os.urandom(200_000),
        "dir/sub/c": b"",
        "name with spaces": b"spaces",
        "ünïcødé.txt": "ünïcødé".encode(),
        'q"uote\nnl': b"odd name",
        "big": os.urandom(3 * 1024 * 1024 + 17),
    }
    for rel, data in files.items():
        (root / rel).write_bytes(data)
    os.chmod(root / "a.txt", 0o600)
    os.chmod(root / "dir" / "b.bin", 0o755)
    os.chmod(root / "dir" / "sub", 0o700)
    os.symlink("a.txt", root / "link")
    os.symlink("../a.txt", root / "dir" / "uplink")
    os.symlink("/does/not/exist", root / "dangling")
    t = 1_600_000_000_123_456_789
    for i, p in enumerate(sorted(root.rglob("*"), key=lambda p: -len(p.parts))):
        os.utime(p, ns=(t + i, t + 1000 * i + 7), follow_symlinks=False)
    os.utime(root, ns=(t, t))
    return files


def snapshot(root, times=True, dir_times=True):
    """Everything cp -a / rsync -a / tar should carry over, per entry."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, root)
            st = os.lstat(p)
            entry = {"mode": st.st_mode, "uid": st.st_uid, "gid": st.st_gid}
            if stat.S_ISLNK(st.st_mode):
                entry["target"] = os.readlink(p)
            elif stat.S_ISREG(st.st_mode):
                entry["data"] = read_bytes(p)
                entry["size"] = st.st_size
            if times and (dir_times or not stat.S_ISDIR(st.st_mode)):
                entry["mtime"] = st.st_mtime_ns
            out[rel] = entry
    return out


def test_cp_a(flowfs, uploads, tmp_path):
    src = tmp_path / "src"
    make_source_tree(src)
    run(["cp", "-a", src, uploads / "copy"])
    assert snapshot(uploads / "copy") == snapshot(src)
    flowfs.remount()
    assert snapshot(uploads / "copy") == snapshot(src)
    # And back out again.
    run(["cp", "-a", uploads / "copy", tmp_path / "back"])
    assert snapshot(tmp_path / "back") == snapshot(src)


def test_cp_over_existing_file(uploads, tmp_path):
    (tmp_path / "f").write_bytes(b"short")
    write_bytes(uploads / "f", b"a much longer existing content")
    run(["cp", tmp_path / "f", uploads / "f"])
    assert read_bytes(uploads / "f") == b"short"


def test_rsync_a(flowfs, uploads, tmp_path):
    if shutil.which("rsync") is None:
        pytest.fail("rsync is not installed (apt-get install rsync)")
    src = tmp_path / "src"
    make_source_tree(src)
    run(["rsync", "-a", f"{src}/", f"{uploads / 'r'}/"])
    assert snapshot(uploads / "r") == snapshot(src)
    # Nothing left to do on a second run: sizes and mtimes were kept.
    r = run(["rsync", "-ai", f"{src}/", f"{uploads / 'r'}/"])
    assert r.stdout == "", r.stdout
    # An update goes through rsync's temp file + rename.  (rsync sets the
    # times of an existing folder before changing its entries, so on any
    # filesystem the folder's mtime ends up as the change's: not compared.)
    (src / "a.txt").write_bytes(b"changed content\n")
    os.utime(src / "a.txt", ns=(1_700_000_000_000_000_001,) * 2)
    (src / "dir" / "new").write_bytes(b"new file")
    run(["rsync", "-a", f"{src}/", f"{uploads / 'r'}/"])
    assert snapshot(uploads / "r", dir_times=False) == snapshot(src, dir_times=False)
    assert not any(n.startswith(".a.txt.") for n in os.listdir(uploads / "r"))
    flowfs.remount()
    assert snapshot(uploads / "r", dir_times=False) == snapshot(src, dir_times=False)
    # --delete.
    (src / "dir" / "sub" / "c").unlink()
    run(["rsync", "-a", "--delete", f"{src}/", f"{uploads / 'r'}/"])
    assert not os.path.lexists(uploads / "r" / "dir" / "sub" / "c")
    assert snapshot(uploads / "r", times=False) == snapshot(src, times=False)


def test_rsync_inplace_and_checksum(uploads, tmp_path):
    if shutil.which("rsync") is None:
        pytest.fail("rsync is not installed (apt-get install rsync)")
    src = tmp_path / "f"
    data = bytearray(os.urandom(1024 * 1024))
    src.write_bytes(bytes(data))
    run(["rsync", "-a", src, uploads / "f"])
    data[500_000:500_010] = b"0123456789"
    src.write_bytes(bytes(data))
    # -I: same size, and the mtime may be within the same second.
    run(["rsync", "-a", "-I", "--inplace", "--no-whole-file", src, uploads / "f"])
    assert read_bytes(uploads / "f") == bytes(data)
    r = run(["rsync", "-ai", "--checksum", src, uploads / "f"])
    assert r.stdout == ""


def make_tarball(path):
    members = {}
    with tarfile.open(path, "w") as tar:
        def add(name, kind, data=b"", mode=0o644, target=None, mtime=1_500_000_000):
            ti = tarfile.TarInfo(name)
            ti.mode = mode
            ti.mtime = mtime
            ti.uid = os.getuid()
            ti.gid = os.getgid()
            if kind == "dir":
                ti.type = tarfile.DIRTYPE
                tar.addfile(ti)
            elif kind == "sym":
                ti.type = tarfile.SYMTYPE
                ti.linkname = target
                tar.addfile(ti)
            else:
                ti.size = len(data)
                tar.addfile(ti, io.BytesIO(data))
            members[name] = (kind, data, mode, target, mtime)

        add("pkg", "dir", mode=0o755, mtime=1_400_000_000)
        add("pkg/README", "file", b"read me\n", 0o644)
        add("pkg/bin", "dir", mode=0o750, mtime=1_400_000_001)
        add("pkg/bin/tool", "file", b"#!/bin/sh\necho hi\n", 0o755)
        add("pkg/data.bin", "file", os.urandom(500_000), 0o600)
        add("pkg/empty", "file", b"", 0o640)
        add("pkg/link", "sym", target="README")
        add("pkg/ünï name", "file", b"unicode", 0o644)
        add("pkg/deep/er/still", "dir", mode=0o755)
        add("pkg/deep/er/still/x", "file", b"x", 0o644)
    return members


def test_tar_x(flowfs, uploads, tmp_path):
    tb = tmp_path / "t.tar"
    members = make_tarball(tb)
    run(["tar", "xf", tb, "-C", uploads])
    flowfs.remount()
    for name, (kind, data, mode, target, mtime) in members.items():
        p = uploads / name
        st = os.lstat(p)
        if kind == "dir":
            assert stat.S_ISDIR(st.st_mode), name
        elif kind == "sym":
            assert stat.S_ISLNK(st.st_mode), name
            assert os.readlink(p) == target
            continue
        else:
            assert stat.S_ISREG(st.st_mode), name
            assert read_bytes(p) == data, name
        assert stat.S_IMODE(st.st_mode) == mode, name
        assert st.st_mtime == mtime, name
    # tar t of a tarball built from the mount matches as well.
    run(["tar", "cf", tmp_path / "back.tar", "-C", uploads, "pkg"])
    with tarfile.open(tmp_path / "back.tar") as t:
        names = {m.name.rstrip("/") for m in t.getmembers()}
        back = {m.name: t.extractfile(m).read() for m in t.getmembers() if m.isfile()}
    assert names >= set(members)
    for name, (kind, data, *_rest) in members.items():
        if kind == "file":
            assert back[name] == data


def test_sed_i_in_uploads(flowfs, uploads):
    f = uploads / "conf.txt"
    write_bytes(f, b"alpha=1\nbeta=2\ngamma=3\n")
    os.chmod(f, 0o640)
    run(["sed", "-i", "s/beta=2/beta=22/", f])
    assert read_bytes(f) == b"alpha=1\nbeta=22\ngamma=3\n"
    assert stat.S_IMODE(os.stat(f).st_mode) == 0o640
    assert os.listdir(uploads) == ["conf.txt"]
    run(["sed", "-i.bak", "s/alpha/ALPHA/", f])
    assert read_bytes(f) == b"ALPHA=1\nbeta=22\ngamma=3\n"
    assert read_bytes(uploads / "conf.txt.bak") == b"alpha=1\nbeta=22\ngamma=3\n"
    flowfs.remount()
    assert read_bytes(f) == b"ALPHA=1\nbeta=22\ngamma=3\n"


def expected_session_json(session, title):
    d = json.loads(read_bytes(session / "session.json"))
    return json.dumps(session_doc(d["id"], d["created"], title),
                      indent=2, ensure_ascii=False).encode()


def test_sed_i_on_session_json(flowfs, session):
    sj = session / "session.json"
    run(["sed", "-i", 's/"title": ""/"title": "from sed ✓"/', sj])
    assert read_bytes(sj) == expected_session_json(session, "from sed ✓")
    assert set(os.listdir(session)) == SESSION_ENTRIES
    assert read_bytes(session / "status") == b"ready\n"
    # A sed that breaks the document is refused; the document stays.
    before = read_bytes(sj)
    r = subprocess.run(["sed", "-i", 's/"title"/"titel"/', str(sj)],
                       capture_output=True, text=True)
    assert r.returncode != 0
    assert read_bytes(sj) == before
    # the refusal is named in status until session.json is written well
    assert read_bytes(session / "status").decode().startswith(
        "session.json: your last write was refused: ")
    assert len(read_bytes(session / "log").decode().splitlines()) == 1
    flowfs.remount()
    assert read_bytes(sj) == before


VIM_MODES = ["default", "backupcopy=yes", "backupcopy=no", "backup", "nowritebackup"]


@pytest.mark.parametrize("setting", VIM_MODES)
def test_vim_in_uploads(flowfs, uploads, setting):
    f = uploads / "notes.md"
    write_bytes(f, b"# Title\nold line that is long\n")
    os.chmod(f, 0o604)
    ino = os.stat(f).st_ino
    r = vim(f, "%s/old line that is long/new/", setting=setting)
    assert r.returncode == 0, r.stdout + r.stderr
    assert read_bytes(f) == b"# Title\nnew\n"
    assert os.stat(f).st_size == len(b"# Title\nnew\n")
    assert stat.S_IMODE(os.stat(f).st_mode) == 0o604
    leftovers = set(os.listdir(uploads)) - {"notes.md"}
    if setting == "backup":
        assert leftovers == {"notes.md~"}
        assert read_bytes(uploads / "notes.md~") == b"# Title\nold line that is long\n"
    else:
        assert leftovers == set()
    if setting == "backupcopy=yes":
        assert os.stat(f).st_ino == ino
    r = vim(f, "$put ='appended line'", setting=setting)
    assert r.returncode == 0, r.stdout + r.stderr
    assert read_bytes(f) == b"# Title\nnew\nappended line\n"
    flowfs.remount()
    assert read_bytes(f) == b"# Title\nnew\nappended line\n"


@pytest.mark.parametrize("setting", VIM_MODES)
def test_vim_on_session_json(flowfs, session, setting):
    sj = session / "session.json"
    # A longer document, then a shorter one: a save that renames the original
    # away and rewrites session.json must not keep the old tail.
    for old, new in (("", "vim ✓ a rather long title"), ("vim ✓ a rather long title", "v")):
        r = vim(sj, f'%s/"title": "{old}"/"title": "{new}"/', setting=setting)
        assert r.returncode == 0, r.stdout + r.stderr
        want = expected_session_json(session, new)
        assert read_bytes(sj) == want
        assert read_bytes(session / "status") == b"ready\n"
        extra = set(os.listdir(session)) - SESSION_ENTRIES
        if setting == "backup":
            assert extra == {"session.json~"}
        else:
            assert extra == set(), extra
    flowfs.remount()
    assert read_bytes(sj) == want


def test_vim_bad_edit_on_session_json_refused(session):
    sj = session / "session.json"
    before = read_bytes(sj)
    r = vim(sj, '%s/"title"/"nope"/')
    assert r.returncode != 0
    assert read_bytes(sj) == before
    assert read_bytes(session / "status") == b"ready\n"
    assert len(read_bytes(session / "log").decode().splitlines()) >= 1


def test_shutil_copytree_and_move(uploads, tmp_path):
    src = tmp_path / "src"
    make_source_tree(src)
    shutil.copytree(src, uploads / "ct", symlinks=True)
    assert snapshot(uploads / "ct") == snapshot(src)
    shutil.move(str(uploads / "ct"), str(uploads / "moved"))
    assert snapshot(uploads / "moved") == snapshot(src)
    shutil.copy2(src / "big", uploads / "big2")
    assert read_bytes(uploads / "big2") == read_bytes(src / "big")
    assert os.stat(uploads / "big2").st_mtime_ns == os.stat(src / "big").st_mtime_ns
