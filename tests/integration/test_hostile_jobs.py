"""The job executor against other users and its own jobs (issue 25,
points 1, 4, 7 and 8): each attack the issue found, run again through the
mount as a user would (plain file I/O, `echo submit > ctl`), and what the
user sees now instead.

1. a shared --work-dir: another user plants the job's folder, a link or a
   FIFO where the daemon wrote the script (a root-only file overwritten,
   another user's script run as root);
4. a root daemon ran the jobs of another user's session as root (a job's
   `cp /etc/shadow` landed in her session, readable by others);
7. a job process that called setsid kept running after a cancel, which
   said "cancelled";
8. an output that is a hard link (to /etc/shadow) was brought, 0644.

The tests not marked `root` run as an ordinary user (tools/test: the user
flowfs-test); those marked `root` run the daemon as root with other users:
uid 4243 (no passwd entry) plays the attacker, and the user tools/test
makes (flowfs-test, with a passwd entry and a home) or uid 4242 (none)
owns a session.  Waits are bounded polls of the files flowfs shows.
"""

import errno
import os
import pwd
import shutil
import signal
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import put, read_bytes, run_as_in, settled, wait_until
from test_jobs import (build_graph, ctl, job_state, log_of, ls, wait_graph,
                       wait_job, write_tools)

PY = "/usr/bin/python3"
ATTACKER = 4243
NOBODY_KNOWN = 4242       # a uid without a passwd entry
JOB_TIMEOUT = 90


# -- helpers -----------------------------------------------------------------

@pytest.fixture
def scratch():
    """A shared scratch folder as /tmp is one (1777), in /tmp itself so
    that every user can reach it (pytest's folders are their user's
    alone); removed afterwards, whoever made what is in it."""
    path = Path(tempfile.mkdtemp(prefix="flowfs-scratch-", dir="/tmp"))
    os.chmod(path, 0o1777)
    yield path
    # an ordinary user cannot remove other users' folders: there are none
    # then; root can
    for dirpath, dirnames, _ in os.walk(path):
        for d in dirnames:
            try:
                os.chmod(os.path.join(dirpath, d), 0o700)
            except OSError:
                pass
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def mount(make_flowfs, isolated_config):
    """Factory: mount(tools, *flowfs args, env=...) mounts with the local
    executor and the tool map `tools`; a test that failed half way leaves
    no job going."""
    made = []

    def make(tools, *args, env=None):
        write_tools(isolated_config, tools)
        fs = make_flowfs(extra_args=["--executor=local", "--jobs=4", *args],
                         env=env)
        made.append(fs)
        return fs
    yield make
    for fs in made:
        if os.path.ismount(fs.mnt):
            for name in os.listdir(fs.mnt):
                if (fs.mnt / name / "ctl").exists():
                    ctl(fs.mnt / name, "cancel")


def me():
    return pwd.getpwuid(os.geteuid()).pw_name


def shell_submit(s):
    """`echo submit > SESSION/ctl` in bash: (exit status, what bash said)."""
    r = subprocess.run(["bash", "-c", 'echo submit > "$1"', "bash",
                        str(s / "ctl")], capture_output=True, text=True,
                       timeout=60)
    return r.returncode, r.stderr


def alive(pid):
    """Whether process `pid` is there and not a zombie."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return text[text.rindex(")") + 2] != "Z"


def read_pid(path, timeout=30):
    wait_until(lambda: path.exists() and path.read_text().endswith("\n"),
               f"{path} is written", timeout)
    return int(path.read_text())


def kill_quietly(*pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def user_with_home():
    """The user tools/test makes, with a passwd entry and a home."""
    name = os.environ.get("FLOWFS_TEST_USER", "flowfs-test")
    try:
        pw = pwd.getpwnam(name)
    except KeyError:
        pytest.skip(f"no user {name} (tools/test makes it)")
    if not os.path.isdir(pw.pw_dir):
        pytest.skip(f"{name} has no home {pw.pw_dir}")
    return pw


def submit_as(uid, gid, s):
    """`echo submit > ctl` as user uid (the session's owner, on a mount
    shared with allow_other): the errno of the write, 0 when taken."""
    def child():
        return put("ctl", "submit\n")
    return run_as_in(uid, gid, s, child)


def last_log(s):
    return log_of(s)[-1]


# -- 1. a shared work folder -----------------------------------------------------

def test_a_planted_job_folder_is_not_followed(mount, tmp_path):
    """In a shared scratch (1777), the folder a job would have had is
    planted beforehand, its script's temporary name a link to a file of
    the user's: the old daemon wrote the script through it.  The jobs now
    go in a folder of the user's own, <scratch>/<user>, and what was
    planted is never opened."""
    shared = tmp_path / "scratch"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    os.chmod(victim, 0o600)
    planted = shared / "s-1" / "run-1" / "n"
    planted.mkdir(parents=True)
    (planted / ".flowfs-job.sh.tmp").symlink_to(victim)
    (planted / ".flowfs-stdout").symlink_to(victim)
    fs = mount({"t": {"command": ["sh", "-c", "echo ran > out.txt"],
                      "outputs": {"out": "out.txt"}}}, f"--work-dir={shared}")
    s = fs.mnt / "s"
    os.mkdir(s)
    build_graph(s, {"n": ("t", {})})
    assert ctl(s, "submit") == 0
    wait_graph(s)
    assert victim.read_text() == "keep me\n"
    assert wait_graph(s)["state"] == "done"
    assert ("ctl", f"graph submitted: 1 jobs (local), in "
                   f"{shared}/{me()}/s-1/run-1") in log_of(s)
    own = shared / me()
    assert stat.S_IMODE(own.stat().st_mode) == 0o700
    assert (own / "s-1" / "run-1" / "n" / "out.txt").read_text() == "ran\n"
    assert sorted(os.listdir(planted)) == [".flowfs-job.sh.tmp",
                                           ".flowfs-stdout"]


def test_a_link_for_the_users_folder_is_refused(mount, tmp_path):
    """<scratch>/<user> made a link to elsewhere before the daemon made
    it: the submit is refused, saying so, and nothing is made there."""
    shared = tmp_path / "scratch"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (shared / me()).symlink_to(elsewhere)
    fs = mount({"t": {"command": ["true"]}}, f"--work-dir={shared}")
    s = fs.mnt / "s"
    os.mkdir(s)
    build_graph(s, {"n": ("t", {})})
    assert shell_submit(s) == (1, "bash: line 1: echo: write error: "
                                  "Permission denied\n")
    assert last_log(s) == (
        "ctl", f"no folder for the jobs: {shared}/{me()} is a symbolic link,"
               f" or one is on its way (a job's folder is never reached"
               f" through one)")
    assert os.listdir(elsewhere) == []
    assert ls(s / "jobs") == set()
    assert settled(s / "status") == b"ready\n"


def test_a_work_dir_others_may_write_needs_the_sticky_bit(mount, tmp_path):
    """Without the sticky bit anyone may rename the user's folder in it
    away and put another in its place: refused."""
    shared = tmp_path / "scratch"
    shared.mkdir()
    os.chmod(shared, 0o777)
    fs = mount({"t": {"command": ["true"]}}, f"--work-dir={shared}")
    s = fs.mnt / "s"
    os.mkdir(s)
    build_graph(s, {"n": ("t", {})})
    assert ctl(s, "submit") == errno.EACCES
    assert last_log(s) == (
        "ctl", f"no folder for the jobs: {shared} can be written by others"
               f" and has no sticky bit (mode 0777): they could move the job"
               f" folders in it away (chmod +t {shared}, as /tmp has)")
    assert os.listdir(shared) == []
    os.chmod(shared, 0o1777)
    assert ctl(s, "submit") == 0
    assert wait_graph(s)["state"] == "done"


@pytest.mark.root      # another user plants the folder
def test_another_users_folder_is_refused(mount, scratch):
    """Root's jobs on a shared scratch: another user made <scratch>/root
    first.  The submit is refused, naming its owner."""
    (scratch / "root").mkdir()
    os.chown(scratch / "root", ATTACKER, ATTACKER)
    fs = mount({"t": {"command": ["true"]}}, f"--work-dir={scratch}")
    s = fs.mnt / "s"
    os.mkdir(s)
    build_graph(s, {"n": ("t", {})})
    assert ctl(s, "submit") == errno.EACCES
    assert last_log(s) == (
        "ctl", f"no folder for the jobs: {scratch}/root belongs to uid"
               f" {ATTACKER}, not to root (uid 0), whose jobs would run in"
               f" it")
    assert os.listdir(scratch / "root") == []


@pytest.mark.root      # another user plants the folder; root's file
def test_a_planted_link_does_not_overwrite_roots_file(mount, scratch,
                                                      tmp_path):
    """The issue's attack: on a root daemon, another user pre-creates
    <scratch>/s-1/run-1/n/ with the script's temporary name a link to a
    root-only file; the old daemon's fopen() followed it and overwrote
    the file.  Now root's jobs go in <scratch>/root/ and the file stays."""
    secret = tmp_path / "root-only"
    secret.write_text("root's own\n")
    os.chmod(secret, 0o600)
    planted = scratch / "s-1" / "run-1" / "n"
    planted.mkdir(parents=True)
    (planted / ".flowfs-job.sh.tmp").symlink_to(secret)
    for p in (planted / ".flowfs-job.sh.tmp", planted, planted.parent,
              planted.parent.parent):
        os.lchown(p, ATTACKER, ATTACKER)
    fs = mount({"t": {"command": ["sh", "-c", "echo ran > out.txt"],
                      "outputs": {"out": "out.txt"}}},
               f"--work-dir={scratch}")
    s = fs.mnt / "s"
    os.mkdir(s)
    build_graph(s, {"n": ("t", {})})
    assert ctl(s, "submit") == 0
    wait_graph(s)
    assert secret.read_text() == "root's own\n"
    assert wait_graph(s)["state"] == "done"
    assert read_bytes(s / "jobs" / "n" / "out.txt") == b"ran\n"
    assert ("ctl", f"graph submitted: 1 jobs (local), in "
                   f"{scratch}/root/s-1/run-1") in log_of(s)
    assert os.listdir(planted) == [".flowfs-job.sh.tmp"]


# The attacker's side of the FIFO attack: drain what the daemon writes into
# the FIFO at the script's temporary name, then, once it is renamed to the
# script, hand the shell that reads it a script of one's own.
FIFO_ATTACK = r"""
import os, signal, sys, time
signal.alarm(int(sys.argv[3]))
folder, pwned = sys.argv[1], sys.argv[2]
tmp = os.path.join(folder, ".flowfs-job.sh.tmp")
script = os.path.join(folder, ".flowfs-job.sh")
os.mkfifo(tmp, 0o666)
with open(tmp, "rb") as f:          # the daemon writes its script here
    f.read()
while not os.path.exists(script):   # renamed: the FIFO is the script now
    time.sleep(0.01)
with open(script, "w") as f:        # waits for the shell to read it
    f.write(f"id -u > {pwned}\n")
"""


@pytest.mark.root      # another user's process plays the attacker
def test_a_planted_fifo_script_never_runs(mount, scratch):
    """The issue's second attack: a FIFO at the script's temporary name;
    the attacker read the daemon's script out of it and wrote their own
    into it once it was renamed, and the old daemon ran it as root."""
    planted = scratch / "s-1" / "run-1" / "n"
    planted.mkdir(parents=True)
    for p in (planted, planted.parent, planted.parent.parent):
        os.chown(p, ATTACKER, ATTACKER)
    pwned = scratch / "pwned"
    attacker = subprocess.Popen(
        ["setpriv", f"--reuid={ATTACKER}", f"--regid={ATTACKER}",
         "--clear-groups", PY, "-c", FIFO_ATTACK, str(planted), str(pwned),
         "60"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: (planted / ".flowfs-job.sh.tmp").exists(),
                   "the attacker's FIFO is there")
        fs = mount({"t": {"command": ["sh", "-c", "echo ran > out.txt"],
                          "outputs": {"out": "out.txt"}}},
                   f"--work-dir={scratch}")
        s = fs.mnt / "s"
        os.mkdir(s)
        build_graph(s, {"n": ("t", {})})
        assert ctl(s, "submit") == 0
        wait_graph(s)
        assert not pwned.exists(), f"ran as uid {pwned.read_text()}"
        assert wait_graph(s)["state"] == "done"
        assert read_bytes(s / "jobs" / "n" / "out.txt") == b"ran\n"
    finally:
        attacker.kill()
        attacker.wait()


# -- 4. who a job runs as ----------------------------------------------------------

WHO = {"who": {"command": [
    "sh", "-c", "id -u > uid.txt; id -G > groups.txt;"
    " grep CapEff /proc/self/status > caps.txt; env > env.txt;"
    " cp /etc/shadow shadow.txt"],
    "outputs": {"uid": "uid.txt", "groups": "groups.txt",
                "caps": "caps.txt", "env": "env.txt",
                "shadow": "shadow.txt"}}}


def given_to(s, uid, gid):
    os.chown(s, uid, gid)
    assert os.stat(s / "ctl").st_uid == uid


@pytest.mark.root      # a root daemon, the session of another user
def test_a_users_jobs_run_as_that_user(mount):
    """The issue's attack: `echo submit` in a session of hers ran her
    job as root, and its `cp /etc/shadow` landed in her session, readable
    by a third user.  Now the job runs as her, with her groups and no
    capability, in her home's state folder: cp is refused."""
    pw = user_with_home()
    fs = mount(WHO, "-o", "allow_other",
               env={"ROOTS_OWN_SECRET": "hunter2"})
    name = f"hers{os.getpid()}"
    s = fs.mnt / name
    os.mkdir(s)
    build_graph(s, {"n": ("who", {})})
    given_to(s, pw.pw_uid, pw.pw_gid)
    jobs_home = Path(pw.pw_dir) / ".local" / "state" / "flowfs" / "jobs"
    try:
        assert submit_as(pw.pw_uid, pw.pw_gid, s) == 0
        wait_graph(s)
        assert "shadow.txt" not in ls(s / "jobs" / "n")
        assert read_bytes(s / "jobs" / "n" / "uid.txt") == \
            f"{pw.pw_uid}\n".encode()
        assert wait_graph(s)["state"] == "failed"
        state, keys, nb = job_state(s, "n")
        assert (state, keys["message"]) == ("failed", "exited with 1"), keys
        assert nb == ["shadow (no such file)"], nb
        assert read_bytes(s / "jobs" / "n" / "stderr") == \
            b"cp: cannot open '/etc/shadow' for reading: Permission denied\n"
        assert "shadow.txt" not in ls(s / "jobs" / "n")
        job = s / "jobs" / "n"
        assert read_bytes(job / "uid.txt") == f"{pw.pw_uid}\n".encode()
        groups = sorted(os.getgrouplist(pw.pw_name, pw.pw_gid))
        assert sorted(map(int, read_bytes(job / "groups.txt").split())) == \
            groups
        assert read_bytes(job / "caps.txt") == b"CapEff:\t0000000000000000\n"
        env = read_bytes(job / "env.txt").decode().splitlines()
        assert f"HOME={pw.pw_dir}" in env and f"USER={pw.pw_name}" in env
        assert not [v for v in env if "hunter2" in v], env
        # her folders, in her home
        folder = jobs_home / f"{name}-1"
        assert ("ctl", f"graph submitted: 1 jobs (local), in "
                       f"{folder}/run-1") in log_of(s)
        for p in (folder, folder / "run-1", folder / "run-1" / "n",
                  folder / "run-1" / "n" / ".flowfs-job.sh"):
            assert os.lstat(p).st_uid == pw.pw_uid, p
    finally:
        shutil.rmtree(jobs_home / f"{name}-1", ignore_errors=True)


@pytest.mark.root      # a root daemon, a uid without a passwd entry
def test_a_uid_without_passwd_entry(mount, scratch):
    """A session of uid 4242, which has no passwd entry: no home to run
    its jobs in without --work-dir (refused, saying so); with it, they run
    as 4242 with its gid alone, in <work>/4242, 0700."""
    fs = mount(WHO, "-o", "allow_other")
    s = fs.mnt / "s"
    os.mkdir(s)
    build_graph(s, {"n": ("who", {})})
    given_to(s, NOBODY_KNOWN, NOBODY_KNOWN)
    assert submit_as(NOBODY_KNOWN, NOBODY_KNOWN, s) == errno.EACCES
    assert last_log(s) == (
        "ctl", f"no folder for the jobs: {NOBODY_KNOWN} (uid {NOBODY_KNOWN})"
               f" has no home folder to run jobs in (start flowfs with"
               f" --work-dir)")
    fs.remount(["--executor=local", "-o", "allow_other",
                f"--work-dir={scratch}"])
    assert submit_as(NOBODY_KNOWN, NOBODY_KNOWN, s) == 0
    assert wait_graph(s)["state"] == "failed"
    job = s / "jobs" / "n"
    assert read_bytes(job / "uid.txt") == b"4242\n"
    assert read_bytes(job / "groups.txt") == b"4242\n"
    assert read_bytes(job / "caps.txt") == b"CapEff:\t0000000000000000\n"
    assert "shadow.txt" not in ls(job)
    own = os.lstat(scratch / str(NOBODY_KNOWN))
    assert (own.st_uid, stat.S_IMODE(own.st_mode)) == (NOBODY_KNOWN, 0o700)


@pytest.mark.root      # a root daemon, the session of another user
def test_a_users_slurm_jobs_are_submitted_as_that_user(
        make_flowfs, isolated_config, slurm):
    """On Slurm, the job of her session is hers too: sbatch runs as her,
    so Slurm runs the job as her."""
    pw = user_with_home()
    write_tools(isolated_config, {"who": {
        "command": ["sh", "-c", "id -u > uid.txt"],
        "outputs": {"uid": "uid.txt"},
        "resources": {"cpus": 1, "memory_mib": 256}}})
    fs = make_flowfs(extra_args=["--executor=slurm", "-o", "allow_other"],
                     env=slurm.env)
    name = f"hers{os.getpid()}"
    s = fs.mnt / name
    os.mkdir(s)
    build_graph(s, {"n": ("who", {})})
    given_to(s, pw.pw_uid, pw.pw_gid)
    jobs_home = Path(pw.pw_dir) / ".local" / "state" / "flowfs" / "jobs"
    try:
        assert submit_as(pw.pw_uid, pw.pw_gid, s) == 0
        assert wait_graph(s, timeout=120)["state"] == "done"
        assert read_bytes(s / "jobs" / "n" / "uid.txt") == \
            f"{pw.pw_uid}\n".encode()
        jid = job_state(s, "n")[1]["scheduler_id"]
        r = slurm.run("squeue", "-h", "-t", "all", f"-j{jid}", "-o", "%U")
        assert r.stdout.strip() in ("", str(pw.pw_uid)), r
    finally:
        shutil.rmtree(jobs_home / f"{name}-1", ignore_errors=True)


# -- 7. cancel takes everything -----------------------------------------------------

# A job whose processes leave its process group: one calls setsid, one
# is daemonized (a double fork and setsid); each writes its pid.
ESCAPES = {"escape": {"command": [
    "sh", "-c",
    "setsid sh -c 'echo $$ > esc1.pid; exec sleep 300' </dev/null"
    " >/dev/null 2>&1 &"
    " ( setsid sh -c 'echo $$ > esc2.pid; exec sleep 301' </dev/null"
    " >/dev/null 2>&1 & );"
    " while [ ! -s esc1.pid ] || [ ! -s esc2.pid ]; do sleep 0.05; done;"
    " exec sleep 302"]},
    # the same, then fails
    "escape_fail": {"command": [
        "sh", "-c",
        "setsid sh -c 'echo $$ > esc1.pid; exec sleep 300' </dev/null"
        " >/dev/null 2>&1 &"
        " while [ ! -s esc1.pid ]; do sleep 0.05; done; exit 3"]}}


def escapees(work, s_name, names=("esc1.pid", "esc2.pid")):
    """The pids the job wrote into its folder."""
    wait_until(lambda: list(work.glob(f"{s_name}-*/run-1/n")),
               "the job's folder is made")
    folder = next(work.glob(f"{s_name}-*/run-1/n"))
    return [read_pid(folder / n) for n in names]


def test_cancel_ends_processes_that_left_the_group(mount, tmp_path):
    """The issue's attack: after `echo cancel > ctl` a job's setsid
    process ran on while `state` said cancelled.  Now every process of the
    job ends, and `state` says cancelled only once none is left."""
    work = tmp_path / "work"
    fs = mount(ESCAPES, f"--work-dir={work}")
    s = fs.mnt / "s"
    os.mkdir(s)
    build_graph(s, {"n": ("escape", {})})
    assert ctl(s, "submit") == 0
    wait_job(s, "n", "running")
    pids = escapees(work, "s")
    try:
        assert all(alive(p) for p in pids)
        assert ctl(s, "cancel") == 0
        wait_job(s, "n", "cancelled", timeout=20)
        left = [p for p in pids if alive(p)]
        assert left == [], f"still running after 'cancelled': {left}"
        assert ("jobs/n", "running: stopping: cancelled") in log_of(s)
        assert log_of(s)[-2:] == [("jobs/n", "cancelled"),
                                  ("ctl", "graph cancelled")]
    finally:
        kill_quietly(*pids)


def test_a_failed_job_leaves_nothing_running(mount, tmp_path):
    """A job that starts a setsid process and fails: when its state says
    failed, that process is gone too."""
    work = tmp_path / "work"
    fs = mount(ESCAPES, f"--work-dir={work}")
    s = fs.mnt / "s"
    os.mkdir(s)
    build_graph(s, {"n": ("escape_fail", {})})
    assert ctl(s, "submit") == 0
    pids = escapees(work, "s", ("esc1.pid",))
    try:
        wait_job(s, "n", "failed")
        assert [p for p in pids if alive(p)] == []
        assert job_state(s, "n")[1]["message"] == "exited with 3"
    finally:
        kill_quietly(*pids)


def test_trashing_the_session_ends_every_process(mount, tmp_path):
    """A session moved to the trash (as `gio trash` does) while a job of
    it whose processes left its group runs: within the grace (5 s),
    nothing of the job runs on."""
    work = tmp_path / "work"
    fs = mount(ESCAPES, f"--work-dir={work}")
    s = fs.mnt / "s"
    os.mkdir(s)
    build_graph(s, {"n": ("escape", {})})
    assert ctl(s, "submit") == 0
    wait_job(s, "n", "running")
    pids = escapees(work, "s")
    try:
        trash = fs.mnt / f".Trash-{os.getuid()}" / "files"
        trash.mkdir(parents=True)
        os.rename(s, trash / "s")
        assert not s.exists()
        wait_until(lambda: not any(alive(p) for p in pids),
                   f"the job's processes {pids} end", timeout=15)
    finally:
        kill_quietly(*pids)


# -- 8. outputs that are hard links ---------------------------------------------------

def test_a_hard_link_output_is_not_brought(mount, tmp_path):
    """An output that is a hard link to a file outside the job's folder
    (here the user's own 0600 file) is not brought: `state` says why."""
    secret = tmp_path / "secret"
    secret.write_text("private\n")
    os.chmod(secret, 0o600)
    fs = mount({"ln": {
        "command": ["sh", "-c", 'ln "$1" out.txt; echo ok > ok.txt', "ln",
                    str(secret)],
        "outputs": {"out": "out.txt", "ok": "ok.txt"}}},
        f"--work-dir={tmp_path / 'work'}")
    s = fs.mnt / "s"
    os.mkdir(s)
    build_graph(s, {"n": ("ln", {})})
    assert ctl(s, "submit") == 0
    assert wait_graph(s)["state"] == "done"
    state, _, nb = job_state(s, "n")
    assert (state, nb) == ("done", ["out (a hard link)"])
    assert ls(s / "jobs" / "n") == {"script", "state", "stdout", "stderr",
                                    "ok.txt"}


@pytest.mark.root      # /etc/shadow, and a third user reading
def test_a_hard_link_to_shadow_is_not_brought(mount, tmp_path):
    """The issue's attack: root's job hard-links /etc/shadow as its
    output, which came into the session 0644, readable by any user of an
    allow_other mount.  It is not brought now."""
    fs = mount({"ln": {
        "command": ["ln", "/etc/shadow", "shadow.txt"],
        "outputs": {"shadow": "shadow.txt"}}}, "-o", "allow_other",
        f"--work-dir={tmp_path / 'work'}")
    s = fs.mnt / "s"
    os.mkdir(s)
    build_graph(s, {"n": ("ln", {})})
    assert ctl(s, "submit") == 0
    assert wait_graph(s)["state"] == "done"
    state, _, nb = job_state(s, "n")
    assert (state, nb) == ("done", ["shadow (a hard link)"])
    assert "shadow.txt" not in ls(s / "jobs" / "n")

    def third():
        try:
            os.stat("jobs/n/shadow.txt")
        except FileNotFoundError:
            return 0
        return 1
    assert run_as_in(ATTACKER, ATTACKER, s, third) == 0
