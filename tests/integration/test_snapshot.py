"""Snapshots (issue 27): `echo "snapshot LABEL" > SESSION/ctl` keeps the
session as it is, read-only, at SESSION/.snapshots/LABEL/ (found by name,
never listed); `echo "restore LABEL" > ctl` brings it back, keeping what
it replaces as a snapshot named in the log; rmdir or rm -rf of a
snapshot removes it."""

import errno
import json
import os
import subprocess
import tarfile
import threading
import time

import pytest

from conftest import (FULL_DATA, fill_session, listing,
                      read_bytes, status_json, user_data, write_bytes)

from test_fork import MiB, check_clean, ctl, data_files


def errno_of(func, *args):
    try:
        func(*args)
    except OSError as e:
        return e.errno
    return 0


def test_snapshot_is_equal_hidden_and_read_only(flowfs):
    s = flowfs.mnt / "S"
    fill_session(s)
    big = os.urandom(4 * MiB)
    write_bytes(s / "uploads" / "big.bin", big)
    before = user_data(s)
    files = data_files(flowfs)
    assert ctl(s, "snapshot v1") == 0
    snap = s / ".snapshots" / "v1"
    # equal byte for byte, sharing the data file
    assert user_data(snap) == before
    assert read_bytes(snap / "uploads" / "big.bin") == big
    assert data_files(flowfs) == files
    # hidden: not listed, yet found; .snapshots lists the labels
    assert ".snapshots" not in os.listdir(s)
    assert os.listdir(s / ".snapshots") == ["v1"]
    assert os.path.isdir(snap)
    # read-only
    ro = errno.EROFS if os.geteuid() == 0 else None
    for func, args in [
            (write_bytes, (snap / "uploads" / "big.bin", b"x")),
            (write_bytes, (snap / "uploads" / "new", b"x")),
            (os.mkdir, (snap / "uploads" / "d",)),
            (os.rename, (snap / "uploads" / "data.csv",
                         snap / "uploads" / "moved")),
            (os.truncate, (snap / "uploads" / "data.csv", 0)),
            (os.symlink, ("x", snap / "uploads" / "l")),
            (ctl, (snap, "run")),
            (write_bytes, (snap / "request.json", b"{}"))]:
        got = func(*args) if func is ctl else errno_of(func, *args)
        assert got in (errno.EROFS, errno.EACCES, ro), (func, args, got)
        assert got != 0
    assert errno_of(os.rename, s / "uploads" / "data.csv",
                    snap / "uploads" / "in") == errno.EROFS
    # the session changes; its snapshot does not
    with open(s / "uploads" / "big.bin", "r+b") as f:
        f.write(b"LIVE")
    write_bytes(s / "uploads" / "data.csv", b"new,data\n")
    assert user_data(snap) == before
    assert read_bytes(snap / "uploads" / "big.bin") == big
    # in status.json
    doc = status_json(s)
    assert [x["label"] for x in doc["snapshots"]] == ["v1"]
    assert doc["fork_of"] is None
    # a label once
    assert ctl(s, "snapshot v1") == errno.EEXIST
    assert ctl(s, "snapshot a/b") == errno.EINVAL
    # it survives a remount; the store checks clean
    check_clean(flowfs)
    assert user_data(snap) == before


@pytest.mark.parametrize("tool", ["cp", "rsync", "tar"])
def test_copies_of_a_session_leave_its_snapshots(flowfs, tmp_path, tool):
    s = flowfs.mnt / "S"
    os.mkdir(s)
    write_bytes(s / "uploads" / "a.txt", b"a")
    assert ctl(s, "snapshot one") == 0
    if tool == "cp":
        subprocess.run(["cp", "-a", s, tmp_path / "copy"], check=True)
        names = set(listing(tmp_path / "copy"))
    elif tool == "rsync":
        subprocess.run(["rsync", "-a", f"{s}/", f"{tmp_path}/copy/"],
                       check=True)
        names = set(listing(tmp_path / "copy"))
    else:
        subprocess.run(["tar", "cf", tmp_path / "c.tar", "-C", flowfs.mnt,
                        "S"], check=True)
        with tarfile.open(tmp_path / "c.tar") as t:
            names = set(t.getnames())
    assert not any(".snapshots" in n for n in names), names
    assert any("a.txt" in n for n in names), names


def test_restore_brings_it_back_and_keeps_what_it_replaced(flowfs):
    s = flowfs.mnt / "S"
    fill_session(s)
    big = os.urandom(3 * MiB)
    write_bytes(s / "uploads" / "big.bin", big)
    before = user_data(s)
    assert ctl(s, "snapshot good") == 0
    # what an agent did
    os.unlink(s / "uploads" / "data.csv")
    with open(s / "uploads" / "big.bin", "r+b") as f:
        f.write(b"BAD!")
    write_bytes(s / "uploads" / "junk", b"junk")
    os.unlink(s / "nodes" / "n2.json")
    changed = user_data(s, generated=False)
    assert ctl(s, "restore good") == 0
    assert user_data(s) == before
    assert read_bytes(s / "uploads" / "big.bin") == big
    assert read_bytes(s / "uploads" / "data.csv") == FULL_DATA
    # what it replaced is a snapshot, named in the log
    log = read_bytes(s / "log").decode()
    kept = [n for n in os.listdir(s / ".snapshots") if n != "good"]
    assert len(kept) == 1 and kept[0].startswith("before-restore-"), kept
    assert f"kept as snapshot {kept[0]}" in log, log
    assert user_data(s / ".snapshots" / kept[0], generated=False) == changed
    # and the session works on
    write_bytes(s / "uploads" / "after", b"after")
    assert json.loads(read_bytes(s / "session.json"))["id"] == "S"
    assert ctl(s, "restore nosuch") == errno.ENOENT
    check_clean(flowfs)
    assert read_bytes(s / "uploads" / "after") == b"after"


def test_removing_snapshots(flowfs):
    """rmdir of a snapshot removes it whole; rm -rf too; a session keeps
    its snapshots: it is removed only once they are."""
    s = flowfs.mnt / "S"
    os.mkdir(s)
    write_bytes(s / "uploads" / "big", os.urandom(2 * MiB))
    for label in ("a", "b"):
        assert ctl(s, f"snapshot {label}") == 0
    # nothing is made in .snapshots
    assert errno_of(os.mkdir, s / ".snapshots" / "new") == errno.EROFS
    assert errno_of(write_bytes, s / ".snapshots" / "f", b"x") == \
        errno.EROFS
    os.rmdir(s / ".snapshots" / "a")
    assert os.listdir(s / ".snapshots") == ["b"]
    r = subprocess.run(["rm", "-rf", str(s)], capture_output=True, text=True)
    assert r.returncode != 0 and os.path.isdir(s / ".snapshots" / "b")
    assert "snapshots" in read_bytes(flowfs.mnt / ".flowfs" / "log").decode()
    subprocess.run(["rm", "-rf", str(s / ".snapshots" / "b")], check=True)
    assert os.listdir(s / ".snapshots") == []
    subprocess.run(["rm", "-rf", str(s)], check=True)
    assert not s.exists()
    deadline = time.monotonic() + 10
    while data_files(flowfs) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert data_files(flowfs) == []


@pytest.mark.parametrize("what", ["snapshot", "restore", "cow"])
def test_kill9_during_snapshot_restore_or_copy_on_write(flowfs, what):
    """Killed while a snapshot is taken, a restore replaces, or a shared
    file is copied on its first write: every closed file is there (the
    snapshot or restore whole or not at all), --check is clean."""
    s = flowfs.mnt / "S"
    os.mkdir(s)
    for i in range(300):
        write_bytes(s / "uploads" / f"f{i}", b"%d" % i * 10)
    big = os.urandom(16 * MiB)
    write_bytes(s / "uploads" / "big", big)
    if what != "snapshot":
        assert ctl(s, "snapshot base") == 0
        write_bytes(s / "uploads" / "later", b"later")
    if what == "cow":
        def act():
            try:
                with open(s / "uploads" / "big", "r+b") as f:
                    f.write(b"W")
            except OSError:
                pass
    else:
        def act():
            ctl(s, "snapshot x" if what == "snapshot" else "restore base")
    t = threading.Thread(target=act)
    t.start()
    time.sleep(0.01)
    flowfs.kill9()
    t.join()
    flowfs.start()
    assert read_bytes(s / "uploads" / "f299") == b"299" * 10
    got = read_bytes(s / "uploads" / "big")
    assert got in (big, b"W" + big[1:])
    if what != "snapshot":
        assert read_bytes(s / ".snapshots" / "base" / "uploads" / "big") \
            == big
    check_clean(flowfs)
