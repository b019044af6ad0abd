"""The refresher: what touches a session's folders and generated names
through the mount so that file managers see them change (fs/refresh.c),
and what it must never do — hold the daemon's exit up, change a stored
time, or touch another file system.  Regressions from the review of
issue 11."""

import os
import signal
import subprocess

from conftest import (_fusermount, daemon_env, flowfs_bin, put_json,
                      wait_until)
from test_engine import (bind_with, csv_skill, engine, files,  # noqa: F401
                         run_mount)
from test_everyday import Watch


def test_sigterm_with_a_refresh_due_exits(run_mount, skill_folder, files):
    """SIGTERM while a fetch is going on and a refresh is due: the daemon
    stops its runs, then exits and unmounts (a thread of it once asked
    the stopped mount for its statfs and waited for good)."""
    csv_skill(skill_folder)
    files.files["big.csv"] = b"x" * 200000
    files.slow_seconds = 20.0
    fs = run_mount()
    s = fs.mnt / "s"
    os.mkdir(s)
    bind_with(s, "stats", {"input": {"csv_file": f"{files.base}/slow/big.csv"}})
    wait_until(lambda: files.hits.get("/slow/big.csv"),
               "the request reaches the server")
    assert put_json(s / "session.json", {"title": "changed"}) == 0
    fs.proc.send_signal(signal.SIGTERM)
    try:
        rc = fs.proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        fs.proc.kill()
        fs.proc.wait()
        _fusermount(fs.mnt, lazy=True)
        raise AssertionError("the daemon did not exit after SIGTERM")
    fs.proc = None
    assert rc == 0, fs.stderr()
    assert not os.path.ismount(fs.mnt)


def test_a_refresh_changes_no_stored_time(flowfs):
    """The refresher's touches are no-ops: the session folder's and
    output/'s times stay as they were, refresh after refresh (its first
    requests once came before flowfs knew its pid, and were stored)."""
    s = flowfs.mnt / "s"
    os.mkdir(s)
    w = Watch(s)
    before = (os.stat(s).st_mtime_ns, os.stat(s / "output").st_mtime_ns)
    try:
        for i in range(20):
            w.events.clear()
            assert put_json(s / "session.json", {"title": f"t{i}"}) == 0
            wait_until(lambda: w.seen("ATTRIB,ISDIR output"),
                       "the refresh touched output/")
            assert (os.stat(s).st_mtime_ns,
                    os.stat(s / "output").st_mtime_ns) == before
    finally:
        w.close()


def refresher_of(pid):
    """pids of daemon `pid`'s refresher processes."""
    found = []
    for p in os.listdir("/proc"):
        try:
            with open(f"/proc/{p}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{p}/cmdline", "rb") as f:
                cmd = f.read()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid and b"--refresh-helper" in cmd:
            found.append(int(p))
    return found


def test_a_refresh_after_a_lazy_unmount_touches_no_other_mount(make_flowfs,
                                                              tmp_path):
    """A daemon whose mount was lazily unmounted (a process still in it)
    while another flowfs took the mountpoint: its refreshes leave the new
    mount alone (they once set its session folder's time)."""
    old = make_flowfs()
    os.mkdir(old.mnt / "s")
    inside = subprocess.Popen(["sleep", "600"], cwd=old.mnt / "s")
    new = None
    try:
        assert _fusermount(old.mnt, lazy=True).returncode == 0
        err = open(tmp_path / "new-stderr.txt", "wb")
        new = subprocess.Popen([str(flowfs_bin()), f"--db={tmp_path}/new.db",
                                "-f", str(old.mnt)], stdin=subprocess.DEVNULL,
                               stdout=err, stderr=err, env=daemon_env())
        err.close()
        wait_until(lambda: os.path.ismount(old.mnt), "the new mount")
        os.mkdir(old.mnt / "s")
        os.utime(old.mnt / "s", ns=(10**18, 10**18))
        refresher = refresher_of(old.proc.pid)
        assert refresher, "the old daemon has a refresher"
        # a change in the old mount's session, through the process in it
        assert put_json(f"/proc/{inside.pid}/cwd/session.json",
                        {"title": "old"}) == 0
        # the refresh comes (within 1 s): the refresher, sent the old
        # session's paths, finds another mount at the mountpoint and ends
        wait_until(lambda: not refresher_of(old.proc.pid),
                   "the old daemon's refresher gone", timeout=10)
        assert os.stat(old.mnt / "s").st_mtime_ns == 10**18
    finally:
        # the new mount first: the old daemon, once released, unmounts
        # what it finds at its mountpoint
        if new is not None:
            r = _fusermount(old.mnt)
            assert new.wait(timeout=30) == 0
            assert r.returncode == 0, r.stderr
        inside.kill()
        inside.wait()
    assert not os.path.ismount(old.mnt)


def test_a_refresher_that_ended_is_started_again(flowfs):
    """The refresher killed (an OOM kill, a user's kill -9): the next
    refresh starts it again, says so in .flowfs/log, and file managers
    see generated files change as before (its death once went unnoticed,
    and no refresh came again for the mount's life)."""
    s = flowfs.mnt / "s"
    os.mkdir(s)
    [old] = refresher_of(flowfs.proc.pid)
    os.kill(old, signal.SIGKILL)
    wait_until(lambda: old not in refresher_of(flowfs.proc.pid),
               "the refresher gone")
    w = Watch(s)
    try:
        assert put_json(s / "session.json", {"title": "after"}) == 0
        wait_until(lambda: w.seen("ATTRIB,ISDIR output"),
                   "a refresh touched output/")
    finally:
        w.close()
    new = refresher_of(flowfs.proc.pid)
    assert len(new) == 1 and new != [old], new
    log = (flowfs.mnt / ".flowfs" / "log").read_text()
    assert "the refresher was killed by signal 9: started again" in log, log
