"""The daemon in the background writes its log lines to syslog (README,
"Status, status.json and the log": "The daemon writes every line of every
log to its stderr with -f ..., and to syslog (LOG_USER, tag flowfs) once it
runs in the background").

No syslog daemon is needed: flowfs runs without -f in a private mount
namespace (unshare -m) whose /dev is a folder of this test's, holding the
few devices flowfs needs and, as /dev/log, an AF_UNIX datagram socket the
test reads.  The mount lives in that namespace only; the test reaches it
through /proc/<pid>/root of a process there.  Needs root (mount namespaces,
bind mounts), so tools/test runs it in its root pass.
"""

import errno
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from conftest import (EXIT_TIMEOUT, MOUNT_TIMEOUT, REPO, STATUS_TIME_RE,
                      daemon_env, flowfs_bin, put, read_bytes, status_of)

# The README's example of a refused session.json and the log line it gets:
#   $ printf '{"title": 5}' > mnt/demo/session.json
#   $ tail -1 mnt/demo/log
#   2026-11-21T09:02:22Z session.json: "title" must be a string
REFUSED_DOC = b'{"title": 5}'
REFUSAL = 'session.json: "title" must be a string'

# syslog(3) with LOG_USER | LOG_NOTICE: <8 * 1 + 5>, then the RFC 3164 time
# glibc writes ("%h %e %T", local time, C locale) and "tag[pid]: ".
PRIORITY = 13
SYSLOG_TIME = "%b %e %H:%M:%S"

# Devices the daemon may open (libfuse: /dev/fuse; SQLite: /dev/urandom),
# bound from the real /dev.  /dev/null is a plain file of the test's: a
# detached daemon's stdin, stdout and stderr are /dev/null (libfuse's
# fuse_daemonize), so whatever it prints there once detached is kept.
DEVICES = ("zero", "full", "random", "urandom", "tty", "fuse")

# Run by `unshare --mount --propagation private sh -c`: puts the test's
# folder over /dev, starts flowfs (which detaches once it has mounted) and
# then stays, as `cat` on the test's pipe, so the test can reach the
# namespace through this process.
IN_NAMESPACE = r"""
set -eu
dev=$1 devices=$2 out=$3 err=$4
shift 4
for name in $devices; do
    mount --bind "/dev/$name" "$dev/$name"
done
mount --rbind "$dev" /dev
"$@" </dev/null >"$out" 2>"$err" &
launcher=$!
echo "launcher $launcher"
rc=0
wait "$launcher" || rc=$?
echo "exit $rc"
[ "$rc" -eq 0 ]
exec cat
"""


def need_tools(*tools):
    for tool in tools:
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is not installed (tools/setup test)",
                        pytrace=False)


def read_lines_until(proc, last, timeout):
    """Lines of proc's stdout up to one starting with `last` (or EOF, or
    `timeout` seconds)."""
    fd = proc.stdout.fileno()
    data = b""
    deadline = time.monotonic() + timeout
    while not any(l.startswith(last) for l in data.decode().splitlines()):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
    return data.decode().splitlines()


def receive(sock, count, timeout):
    """Up to `count` datagrams, waiting at most `timeout` seconds."""
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < count:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        ready, _, _ = select.select([sock], [], [], left)
        if ready:
            got.append(sock.recv(65536).decode(errors="replace"))
    return got


def pending(sock):
    """The datagrams already queued on sock."""
    got = []
    while True:
        try:
            got.append(sock.recv(65536, socket.MSG_DONTWAIT)
                       .decode(errors="replace"))
        except BlockingIOError:
            return got


def syslog_times(start, end):
    """The times syslog(3) may have written for an event between the wall
    clock times start and end."""
    return {time.strftime(SYSLOG_TIME, time.localtime(t))
            for t in range(int(start), int(end) + 1)}


def mnt_ns(pid):
    return os.readlink(f"/proc/{pid}/ns/mnt")


def daemons_in(ns):
    """Pids of the flowfs processes in mount namespace ns."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if (Path(f"/proc/{d}/comm").read_text().strip() == "flowfs"
                    and mnt_ns(d) == ns):
                pids.append(int(d))
        except OSError:
            continue    # gone meanwhile
    return pids


def running(pid):
    """pid exists and has not exited (a zombie has)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def mount_points(pid):
    """Mount points in pid's mount namespace."""
    text = Path(f"/proc/{pid}/mountinfo").read_text()
    return [line.split()[4] for line in text.splitlines()]


def test_the_readme_gives_this_refusal():
    """The expectations below are the README's example."""
    readme = (REPO / "README.md").read_text()
    assert re.search(r"^\$ printf '" + re.escape(REFUSED_DOC.decode())
                     + r"' > mnt/demo/session.json\n\$ tail -1 mnt/demo/log\n"
                     + STATUS_TIME_RE + " " + re.escape(REFUSAL) + "$",
                     readme, re.M)
    assert "to syslog (`LOG_USER`, tag `flowfs`) once it runs in the\n" \
           "background" in readme


@pytest.mark.root
def test_in_the_background_the_log_goes_to_syslog(tmp_path):
    need_tools("unshare", "nsenter", "mount", "fusermount3")
    dev = tmp_path / "dev"
    dev.mkdir()
    devices = [n for n in DEVICES if os.path.exists(f"/dev/{n}")]
    for name in devices + ["null"]:
        (dev / name).touch()
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2")):
        os.symlink(target, dev / name)
    log = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    log.bind(str(dev / "log"))

    mnt, db = tmp_path / "mnt", tmp_path / "fresh.db"
    mnt.mkdir()
    # the launcher's output (before it detaches), then the daemon's
    out, err = tmp_path / "daemon-stdout.txt", tmp_path / "daemon-stderr.txt"
    detached = dev / "null"
    env = daemon_env({"XDG_CONFIG_HOME": str(tmp_path / "xdg-config")})

    started = time.time()
    holder = subprocess.Popen(
        ["unshare", "--mount", "--propagation", "private",
         "sh", "-c", IN_NAMESPACE, "sh", str(dev), " ".join(devices),
         str(out), str(err),
         str(flowfs_bin()), f"--db={db}", str(mnt)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    daemon = None
    try:
        said = read_lines_until(holder, "exit ", MOUNT_TIMEOUT)
        assert said[-1:] == ["exit 0"], (
            f"flowfs without -f did not mount: {said}\nstderr:\n"
            + (err.read_text(errors="replace") if err.exists() else ""))
        launcher = int(said[0].split()[1])

        ns = mnt_ns(holder.pid)
        assert ns != mnt_ns(os.getpid())
        daemons = daemons_in(ns)
        assert len(daemons) == 1, daemons
        daemon = daemons[0]
        assert daemon != launcher       # it has detached
        # and its stderr is the test's file: what it prints there is seen
        assert os.path.samestat(os.stat(f"/proc/{daemon}/fd/2"),
                                os.stat(detached))
        assert str(mnt) in mount_points(holder.pid)
        assert str(mnt) not in mount_points(os.getpid())

        # the namespace's view of the mount
        view = Path(f"/proc/{holder.pid}/root") / str(mnt).lstrip("/")
        os.mkdir(view / "s")
        before = time.time()
        assert put(view / "s" / "session.json", REFUSED_DOC) == errno.EINVAL
        after = time.time()
        assert status_of(view / "s")[1] == [tuple(REFUSAL.split(": ", 1))]

        root_log = read_bytes(view / ".flowfs" / "log").decode().splitlines()
        assert len(root_log) == 1, root_log
        m = re.fullmatch(STATUS_TIME_RE + r" (.+)", root_log[0])
        assert m and m.group(1).startswith(f"{mnt}: mounted {db} "), root_log

        lines = receive(log, 2, 10)
        assert len(lines) == 2, lines
        pattern = re.compile(rf"<{PRIORITY}>(\w\w\w [ \d]\d \d\d:\d\d:\d\d) "
                             rf"flowfs\[{daemon}\]: (.*)", re.S)
        got = [pattern.fullmatch(line) for line in lines]
        assert all(got), lines
        # every line of every log, in order: the root's, then the session's
        assert [g.group(2) for g in got] == [m.group(1), "s/" + REFUSAL], lines
        # the daemon logs its mount once detached, before it serves the mkdir
        assert got[0].group(1) in syslog_times(started, before), lines[0]
        assert got[1].group(1) in syslog_times(before, after), lines[1]

        r = subprocess.run(["nsenter", f"--target={holder.pid}", "--mount",
                            "--", "fusermount3", "-u", str(mnt)],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert str(mnt) not in mount_points(holder.pid)
        deadline = time.monotonic() + EXIT_TIMEOUT
        while running(daemon) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not running(daemon), \
            f"the daemon still runs {EXIT_TIMEOUT} s after the unmount"
        daemon = None
        assert pending(log) == []       # nothing more, nothing at exit

        # nothing on stderr (nor stdout), before or after detaching
        for path in (err, out, detached):
            assert path.read_bytes() == b"", \
                f"{path.name}:\n{path.read_text(errors='replace')}"
    finally:
        if daemon is not None and running(daemon):
            if holder.poll() is None:
                subprocess.run(["nsenter", f"--target={holder.pid}",
                                "--mount", "--", "fusermount3", "-uz",
                                str(mnt)], capture_output=True)
            else:
                os.kill(daemon, signal.SIGTERM)
        holder.stdin.close()
        try:
            holder.wait(timeout=EXIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            holder.kill()
            holder.wait()
        holder.stdout.close()
        log.close()
    assert holder.returncode == 0
