"""Issue 12, the experiment sandbox: each attack of the issue's findings,
run as the experiment of a scientific-workflow round (the fake engine's
reply carries the code) on a mount started with --allow-exec, and shown
to fail now.  What the experiment saw is its observation, read back
from rounds/1.json; what it could do to the host is looked at on the
host.
"""
import contextlib
import json
import os
import platform
import pwd
import re
import signal
import subprocess
import time

import pytest

from conftest import flowfs_bin, read_bytes, status_of, wait_until
# engine and run_mount are fixtures: imported, pytest finds them here
from test_engine import (KEY, ROUND1, engine, run_mount, science,  # noqa: F401
                         wait_run, write_line)


@pytest.fixture
def exec_mount(run_mount):
    """A mount whose experiments run (--allow-exec), with the key in the
    daemon's environment as a user would give it."""
    return run_mount("--allow-exec")


def start(fs, engine, code, uploads=None, name="t"):
    """Start a run whose round 1 experiment is `code`, in a new session
    `name` (its uploads/ holding `uploads`: {name: bytes, or ("link",
    target)}); the session."""
    s = fs.mnt / name
    os.mkdir(s)
    science(s, 1)
    for upload, data in (uploads or {}).items():
        if isinstance(data, tuple):
            os.symlink(data[1], s / "uploads" / upload)
        else:
            (s / "uploads" / upload).write_bytes(data)
    engine.reply(content=ROUND1.replace(
        "print(open('fares.txt').read().split()[0])", code))
    assert write_line(s / "ctl", "run\n") == 0
    return s


def experiment(fs, engine, code, uploads=None, name="t"):
    """start() and wait for the run: the session, the run's last line and
    the observation."""
    s = start(fs, engine, code, uploads, name)
    line = wait_run(s)
    rounds = os.listdir(s / "rounds")
    observation = (json.loads(read_bytes(s / "rounds" / "1.json")).get("observation")
                   if "1.json" in rounds else None)
    return s, line, observation


# what an experiment prints of a path: its first bytes, or the error's name
PROBE = """
import errno, os
def probe(path):
    try:
        with open(path, 'rb') as f:
            return 'read ' + repr(f.read(12))
    except OSError as e:
        return errno.errorcode[e.errno]
"""


def status_fields(observation):
    return dict(line.split(":\t", 1) for line in observation.splitlines()
                if ":\t" in line)


def test_experiment_runs_unprivileged(exec_mount, engine):
    """No capability, no_new_privs, a uid that is not the daemon's, signals
    neither blocked nor ignored; the sandbox's host uid is not root."""
    _, line, obs = experiment(exec_mount, engine, (
        "import os\nprint(open('/proc/self/status').read())\n"
        "print(f'uid:\\t{os.getuid()} {os.getgid()} {os.getgroups()}')"))
    assert line == "run: done"
    f = status_fields(obs)
    for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert f[cap] == "0000000000000000", (cap, f[cap])
    assert f["NoNewPrivs"] == "1"
    # python ignores SIGPIPE and SIGXFSZ itself; nothing else is
    assert f["SigBlk"] == "0000000000000000"
    assert f["SigIgn"] == "0000000001001000"
    uid = f["uid"].split()
    assert uid[0] != str(os.getuid()) and uid[0] == "65534"


def experiment_pids():
    """pids of the host's processes running an experiment's file."""
    return [pid for pid in sleepers(".flowfs-experiment-")
            if not open(f"/proc/{pid}/cmdline", "rb").read().startswith(b"bwrap")]


def sandbox_ids():
    """The host uid and gid a root daemon's sandbox runs as by default:
    flowfs-sandbox's (tools/setup makes it), else nobody's."""
    try:
        pw = pwd.getpwnam("flowfs-sandbox")
        return pw.pw_uid, pw.pw_gid
    except KeyError:
        return 65534, 65534


@pytest.mark.root
def test_root_daemon_experiment_is_nobody(exec_mount, engine):
    """As root, the experiment has no capability, and on the host it runs
    as the sandbox's user (flowfs-sandbox, else nobody), not as root:
    looked at from the host while it waits for a file the test puts in
    its folder."""
    uid, gid = sandbox_ids()
    s = start(exec_mount, engine, (
        "import os, time\nwhile not os.path.exists('go'):\n    time.sleep(0.02)\n"
        "print(open('/proc/self/status').read())"))
    wait_until(experiment_pids, "the experiment running")
    pid = experiment_pids()[0]
    with open(f"/proc/{pid}/status") as f:
        host = status_fields(f.read())
    cwd = os.readlink(f"/proc/{pid}/cwd")
    open(os.path.join(cwd, "go"), "w").close()
    assert wait_run(s) == "run: done"
    assert host["Uid"].split() == [str(uid)] * 4
    assert host["Gid"].split() == [str(gid)] * 4
    assert host["Groups"].strip() == ""
    obs = json.loads(read_bytes(s / "rounds" / "1.json"))["observation"]
    f = status_fields(obs)
    assert f["CapEff"] == "0000000000000000" and f["NoNewPrivs"] == "1"


def host_side(fs, engine, name="t"):
    """Start an experiment that waits for `go` in its folder; the host's
    view of it: (Uid, Gid of its process, its folder's lstat), then let it
    end; the run's last line."""
    s = start(fs, engine, (
        "import os, time\nopen('made', 'w').close()\n"
        "while not os.path.exists('go'):\n    time.sleep(0.02)\nprint('ok')\n"),
        name=name)
    wait_until(experiment_pids, "the experiment running")
    pid = experiment_pids()[0]
    with open(f"/proc/{pid}/status") as f:
        host = status_fields(f.read())
    cwd = os.readlink(f"/proc/{pid}/cwd")
    wait_until(lambda: os.path.exists(os.path.join(cwd, "made")), "made")
    st = os.lstat(cwd), os.lstat(os.path.join(cwd, "made"))
    open(os.path.join(cwd, "go"), "w").close()
    assert wait_run(s) == "run: done"
    return host["Uid"].split(), host["Gid"].split(), cwd, st


@pytest.mark.root
def test_root_daemon_sandbox_has_a_user_of_its_own(exec_mount, engine):
    """With the user flowfs-sandbox there (tools/setup adds it), a root
    daemon's experiment runs as it, not as nobody whom other services
    share: its process, its folder and what it makes there are
    flowfs-sandbox's on the host."""
    try:
        pw = pwd.getpwnam("flowfs-sandbox")
    except KeyError:
        pytest.skip("no user flowfs-sandbox (tools/setup adds it)")
    uids, gids, cwd, (d, made) = host_side(exec_mount, engine)
    assert pw.pw_uid not in (0, 65534)
    assert uids == [str(pw.pw_uid)] * 4 and gids == [str(pw.pw_gid)] * 4
    assert (d.st_uid, d.st_gid) == (pw.pw_uid, pw.pw_gid)
    assert (made.st_uid, made.st_gid) == (pw.pw_uid, pw.pw_gid)
    # in the daemon's own folder, which it reaches through
    assert os.path.dirname(os.path.dirname(cwd)) == os.path.join(
        os.environ.get("TMPDIR") or "/tmp", "flowfs-0")


@pytest.mark.root
def test_root_daemon_sandbox_user_by_number(run_mount, engine):
    """--sandbox-user=4321, a uid with no user: the sandbox is 4321:4321."""
    fs = run_mount("--allow-exec", "--sandbox-user=4321")
    uids, gids, _, (d, made) = host_side(fs, engine)
    assert uids == ["4321"] * 4 and gids == ["4321"] * 4
    assert (made.st_uid, made.st_gid) == (4321, 4321)


@pytest.mark.parametrize("value,line", [
    ("0", "flowfs: --sandbox-user takes a user name or a uid from 1 to 4294967294,"
          " not \"0\" (never root: the sandbox would own root's files)\n"),
    ("4294967295", "flowfs: --sandbox-user takes a user name or a uid from 1 to"
                   " 4294967294, not \"4294967295\" (never root: the sandbox"
                   " would own root's files)\n"),
    ("root", "flowfs: --sandbox-user cannot be root (uid or gid 0): the sandbox"
             " would own root's files\n"),
    ("no-such-user-flowfs", "flowfs: --sandbox-user: no user named"
                            " \"no-such-user-flowfs\"\n"),
])
def test_sandbox_user_is_checked(tmp_path, value, line):
    rc, err = refused_start(tmp_path, os.environ["PATH"], f"--sandbox-user={value}")
    assert (rc, err) == (2, line)


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x86_64's call numbers")
def test_seccomp_and_no_nested_namespaces(exec_mount, engine):
    """A seccomp filter is on; a user namespace inside (all of the kernel's
    namespace code open to it again), keys, ptrace and io_uring are
    refused."""
    _, line, obs = experiment(exec_mount, engine, (
        "import ctypes, errno, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "def call(name, *args):\n"
        "    r = getattr(libc, name)(*args)\n"
        "    return name + ' ' + (errno.errorcode[ctypes.get_errno()] if r == -1 else 'ok')\n"
        "print([l.split()[1] for l in open('/proc/self/status') if l.startswith('Seccomp:')][0])\n"
        # forks still work (before ptrace: traced, the old daemon's would stop)
        "pid = os.fork()\nif pid == 0:\n    os._exit(7)\n"
        "print('fork', os.waitpid(pid, 0)[1] >> 8)\n"
        "print(call('unshare', 0x10000000))\n"                 # CLONE_NEWUSER
        "print(call('syscall', 250, 0, 0, 0, 0))\n"             # keyctl
        "print(call('ptrace', 0, 0, 0, 0))\n"                   # PTRACE_TRACEME
        "print(call('syscall', 425, 8, ctypes.create_string_buffer(120)))\n"))  # io_uring_setup
    assert line == "run: done"
    assert obs.splitlines() == ["2", "fork 7", "unshare EPERM", "syscall EPERM",
                                "ptrace EPERM", "syscall EPERM"]


def test_environment_is_built_from_scratch(exec_mount, engine):
    _, line, obs = experiment(exec_mount, engine, (
        "import os\nprint(sorted(os.environ.items()))"))
    assert line == "run: done"
    env = dict(eval(obs))      # noqa: S307 - the experiment's own repr
    assert KEY not in obs and "FLOWFS" not in obs
    # bwrap adds PWD; python may set LC_CTYPE
    assert set(env) <= {"PATH", "HOME", "LANG", "PWD", "LC_CTYPE"}, env
    assert env["PATH"] == "/usr/local/bin:/usr/bin:/bin"


def test_host_files_out_of_sight(exec_mount, engine, tmp_path):
    """A file only the daemon's user may read, the database, the mountpoint
    (other sessions), /home and /root: none is there; a file written
    where the daemon's user may write does not reach the host."""
    fs = exec_mount
    secret = tmp_path / "secret.txt"
    secret.write_text("only mine")
    os.chmod(secret, 0o600)
    os.mkdir(fs.mnt / "other")
    planted = tmp_path / "planted.txt"
    code = PROBE + (
        f"print('secret', probe({str(secret)!r}))\n"
        f"print('db', probe({str(fs.db)!r}))\n"
        f"try:\n    print('mnt', sorted(os.listdir({str(fs.mnt)!r})))\n"
        "except OSError as e:\n    print('mnt', errno.errorcode[e.errno])\n"
        "print('home', os.path.exists('/home'), os.path.exists('/root'))\n"
        f"try:\n    open({str(planted)!r}, 'w').write('x')\n    print('wrote')\n"
        "except OSError as e:\n    print('write', errno.errorcode[e.errno])\n")
    _, line, obs = experiment(fs, engine, code)
    assert line == "run: done"
    assert obs.splitlines() == ["secret ENOENT", "db ENOENT", "mnt ENOENT",
                                "home False False", "write ENOENT"]
    assert not planted.exists()
    assert secret.read_text() == "only mine"


@pytest.mark.root
def test_root_cannot_read_or_link_etc_shadow(exec_mount, engine):
    s, line, obs = experiment(exec_mount, engine, PROBE + (
        "print('shadow', probe('/etc/shadow'))\n"
        "try:\n    os.link('/etc/shadow', 'x')\n    print('linked')\n"
        "except OSError as e:\n    print('link', errno.errorcode[e.errno])\n"))
    assert line == "run: done"
    assert obs.splitlines() == ["shadow ENOENT", "link ENOENT"]
    assert "x" not in os.listdir(s / "output")


def test_hard_link_of_a_host_file_does_not_come_out(exec_mount, engine, tmp_path):
    """os.link of a host file into the scratch folder (the daemon's user
    owns it: protected_hardlinks lets the link be made outside a sandbox)
    brings nothing into output/; neither does a hard link the experiment
    makes of its own file, nor a symbolic link."""
    secret = tmp_path / "secret.txt"
    secret.write_text("only mine")
    os.chmod(secret, 0o600)
    s, line, obs = experiment(exec_mount, engine, (
        "import errno, os\n"
        f"try:\n    os.link({str(secret)!r}, 'x')\n    print('linked')\n"
        "except OSError as e:\n    print('link', errno.errorcode[e.errno])\n"
        "open('mine', 'w').write('m')\nos.link('mine', 'mine2')\n"
        "open('plain', 'w').write('p')\nos.symlink('plain', 'sym')\n"))
    assert line == "run: done"
    assert obs == "link ENOENT"
    made = set(os.listdir(s / "output")) & {"x", "mine", "mine2", "plain", "sym"}
    assert made == {"plain"}
    assert read_bytes(s / "output" / "plain") == b"p"


def test_the_daemon_cannot_be_killed(exec_mount, engine):
    """os.kill(<the daemon's pid>, 9) finds no such process; killing its
    parent kills the sandbox's own init, and the daemon goes on."""
    fs = exec_mount
    s, line, obs = experiment(fs, engine, (
        f"import os, errno\ntry:\n    os.kill({fs.proc.pid}, 9)\n    print('killed')\n"
        "except OSError as e:\n    print('kill', errno.errorcode[e.errno], flush=True)\n"
        "os.kill(os.getppid(), 9)\nimport time; time.sleep(5)\n"))
    assert fs.proc.poll() is None
    assert obs is not None and obs.splitlines()[0] == "kill ESRCH"
    assert line == "run: done"
    # the mount still answers
    os.mkdir(fs.mnt / "after")
    assert "after" in os.listdir(fs.mnt)


def test_no_way_back_to_the_host_network(exec_mount, engine):
    """setns() into its parent's network namespace is refused, and the
    engine (on the host's loopback) cannot be reached."""
    port = int(engine.url.split(":")[2].split("/")[0])
    _, line, obs = experiment(exec_mount, engine, (
        "import ctypes, os, socket\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "fd = os.open(f'/proc/{os.getppid()}/ns/net', os.O_RDONLY)\n"
        "print('setns', libc.setns(fd, 0x40000000), ctypes.get_errno())\n"
        f"try:\n    socket.create_connection(('127.0.0.1', {port}), 2)\n"
        "    print('network: yes')\nexcept OSError:\n    print('network: no')\n"))
    assert line == "run: done"
    assert obs.splitlines() == ["setns -1 1", "network: no"]   # EPERM


def new_token():
    """A number no other process has on its command line."""
    return f"{os.getpid() % 1000}.{time.monotonic_ns() % 10**6}"


@contextlib.contextmanager
def killed_after(token):
    """Kill what is left with `token` on its command line (the old daemon
    leaves them behind)."""
    try:
        yield
    finally:
        for pid in sleepers(token):
            os.kill(pid, signal.SIGKILL)


def gone(token):
    wait_until(lambda: not sleepers(token), "the experiment's processes gone",
               timeout=10)


def sleepers(token):
    """pids of processes whose command line holds `token`."""
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if token.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


def test_no_process_outlives_the_run(exec_mount, engine):
    """fork(); setsid(); fork() and setpgid(0, 0) descendants (their
    output elsewhere, so nothing waits for them) are gone after run: done;
    `timeout` stops what it runs (signals are not blocked)."""
    token = new_token()
    code = (
        "import os, subprocess\n"
        "def away(how):\n"
        "    if os.fork() == 0:\n"
        "        if how == 'setsid':\n"
        "            os.setsid()\n"
        "            if os.fork():\n"
        "                os._exit(0)\n"
        "        else:\n"
        "            os.setpgid(0, 0)\n"
        "        null = os.open('/dev/null', os.O_RDWR)\n"
        "        for fd in (0, 1, 2):\n"
        "            os.dup2(null, fd)\n"
        f"        os.execvp('sleep', ['sleep', '3{token}'])\n"
        "away('setsid')\naway('setpgid')\n"
        "print(subprocess.run(['timeout', '2', 'sleep', '8']).returncode)\n"
        "print(subprocess.run(['timeout', '--preserve-status', '2', 'sleep', '8'])"
        ".returncode)\n")
    with killed_after(token):
        _, line, obs = experiment(exec_mount, engine, code)
        assert line == "run: done"
        # timeout's own status, then sleep's: ended by SIGTERM
        assert obs.splitlines() == ["124", str(128 + signal.SIGTERM)]
        gone(token)


def test_nothing_runs_on_once_the_run_says_done(exec_mount, engine):
    """150 fork(); setsid(); fork() descendants that sleep on: none is
    left the moment status says run: done (no waiting), since the
    experiment's files are kept and its folder removed after that.  bwrap
    itself ends before the kernel has killed its PID namespace."""
    token = new_token()
    code = (
        "import os\n"
        "for _ in range(150):\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        os.setsid()\n"
        "        if os.fork() == 0:\n"
        "            null = os.open('/dev/null', os.O_RDWR)\n"
        "            for fd in (0, 1, 2):\n"
        "                os.dup2(null, fd)\n"
        f"            os.execvp('sleep', ['sleep', '7{token}'])\n"
        "        os._exit(0)\n"
        "    os.waitpid(pid, 0)\n"
        "print('left')\n")
    with killed_after(token):
        _, line, obs = experiment(exec_mount, engine, code)
        left = sleepers(token)
        assert line == "run: done"
        assert obs == "left"
        assert left == []


def test_memory_in_files_is_bounded(exec_mount, engine):
    """/tmp (256 MiB) and /dev/shm (64 MiB) are sized tmpfs, /dev is
    read-only: files in memory, which no rlimit counts, are bounded."""
    code = (
        "import errno, os\n"
        "def fill(path, mib):\n"
        "    try:\n"
        "        with open(path, 'wb') as f:\n"
        "            for _ in range(mib):\n"
        "                f.write(b'x' * (1 << 20))\n"
        "        return 'ok'\n"
        "    except OSError as e:\n"
        "        return errno.errorcode[e.errno]\n"
        "print(fill('/tmp/a', 200), fill('/tmp/b', 200),\n"
        "      (os.path.getsize('/tmp/a') + os.path.getsize('/tmp/b')) >> 20)\n"
        "os.unlink('/tmp/a')\nos.unlink('/tmp/b')\n"
        "print(fill('/dev/shm/big', 100), os.path.getsize('/dev/shm/big') >> 20)\n"
        "print(fill('/dev/new', 1))\n")
    _, line, obs = experiment(exec_mount, engine, code)
    assert line == "run: done"
    assert obs.splitlines() == ["ok ENOSPC 256", "ENOSPC 64", "EROFS"]


# writes 1 MiB files, 9 in 10 in a folder the daemon may not list (mode
# 300: the experiment may still make files in it), until it is stopped or
# has written 400
FILL_FOLDER = (
    "import os, time\nos.mkdir('shut')\nos.chmod('shut', 0o300)\n"
    "for i in range(400):\n"
    "    d = '.' if i % 10 == 0 else 'shut'\n"
    "    with open(f'{d}/f{i}', 'wb') as f:\n        f.write(os.urandom(1 << 20))\n"
    "    time.sleep(0.01)\n"
    "print('wrote 400 MiB')\n")


def test_what_an_experiment_writes_to_its_folder_is_capped(run_mount, engine):
    """Many files each under the file size limit: the folder's growth is
    measured as it runs (into a folder it may write but not list too) and the
    experiment stopped past --exec-disk, the observation saying why."""
    fs = run_mount("--allow-exec", "--exec-disk=32")
    s, line, obs = experiment(fs, engine, FILL_FOLDER, uploads={"big": b"u" * (8 << 20)})
    assert line == "run: done"
    assert obs == "(stopped: it wrote more than 32 MiB to its folder)", obs
    # stopped soon after: one file in 10 is at the top, kept in output/
    # (with the shut folder unmeasured, it would take 32 there)
    made = [n for n in os.listdir(s / "output") if n.startswith("f")]
    assert 3 <= len(made) < 20, len(made)


@pytest.mark.parametrize("code,why", [
    # more than 10,000 files and folders (empty: no blocks)
    ("import os, time\n"
     "for i in range(30000):\n"
     "    open(f'e{i}', 'w').close()\n"
     "    if i % 1000 == 0:\n        time.sleep(0.1)\n"
     "print('made 30000')\n",
     "it made more than 10000 files and folders in its folder"),
    # folders nested past what the daemon walks (what they hold would not
    # be measured)
    ("import os, time\n"
     "for i in range(100):\n    os.mkdir('d')\n    os.chdir('d')\n"
     "time.sleep(3)\nprint('nested 100')\n",
     "it nested folders more than 64 deep"),
])
def test_what_an_experiment_makes_in_its_folder_is_capped(exec_mount, engine,
                                                          code, why):
    _, line, obs = experiment(exec_mount, engine, code)
    assert line == "run: done"
    assert obs == f"(stopped: {why})", obs


# n processes, each holding `mib` MiB it has written to, at once
def hold_memory(n, mib):
    return (
        "import os, time\nkids = []\n"
        f"for _ in range({n}):\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        f"        x = b'\\x01' * ({mib} << 20)\n"
        "        time.sleep(3)\n"
        "        os._exit(0)\n"
        "    kids.append(pid)\n"
        "codes = [os.waitpid(pid, 0)[1] for pid in kids]\n"
        "print('held', codes)\n")


def own_cgroups(controller):
    """This process's cgroup folder in a v1 hierarchy."""
    for line in open("/proc/self/cgroup"):
        _, ctl, path = line.rstrip("\n").split(":", 2)
        if controller in ctl.split(","):
            return f"/sys/fs/cgroup/{controller}{path if path != '/' else ''}"
    return None


@pytest.mark.root
@pytest.mark.skipif(not os.path.isdir("/sys/fs/cgroup/memory/"), reason="cgroup v1")
def test_whole_sandbox_memory_is_capped_by_a_cgroup(run_mount, engine):
    """As root on a cgroup v1 machine: 4 processes of 300 MiB each (each
    under its own 2 GiB rlimit) pass the sandbox's 512 MiB in all and
    stop it, the observation saying so; one passes; the cgroups go."""
    fs = run_mount("--allow-exec", "--exec-memory=512")
    before = {ctl: set(os.listdir(own_cgroups(ctl))) for ctl in ("memory", "pids")}
    log = read_bytes(fs.mnt / ".flowfs" / "log").decode()
    assert ("experiments: a cgroup (v1) for each: 512 MiB of memory and 256"
            " processes for the whole sandbox") in log, log
    _, line, obs = experiment(fs, engine, hold_memory(1, 300), name="one")
    assert line == "run: done" and obs == "held [0]", obs
    _, line, obs = experiment(fs, engine, hold_memory(4, 300), name="four")
    assert line == "run: done"
    assert obs.endswith("(stopped: it ran out of memory, 512 MiB for all its"
                        " processes)"), obs
    # the experiments' cgroups are gone (the test once looked for a name
    # they no longer had, and could not fail)
    for ctl in ("memory", "pids"):
        left = set(os.listdir(own_cgroups(ctl))) - before[ctl]
        assert left == set(), (ctl, left)


@pytest.mark.skipif(os.geteuid() == 0, reason="root can make a v1 cgroup here")
def test_without_a_cgroup_the_rlimits_bound_it_and_the_log_says_so(exec_mount):
    """Not root, on a machine without a delegated cgroup v2 (this one):
    one line at start says the sandbox is bounded per process only."""
    log = read_bytes(exec_mount.mnt / ".flowfs" / "log").decode()
    lines = [ln for ln in log.splitlines() if "experiments:" in ln]
    assert len(lines) == 1, log
    assert re.search(r"experiments: no cgroup \(.+\): the sandbox is bounded per"
                     r" process only, 2048 MiB of address space each and 256"
                     r" processes$", lines[0]), lines[0]


def test_the_scratch_folder_goes_whatever_its_modes(exec_mount, engine):
    """An experiment that leaves folders it cannot be removed from (mode
    000, and 0400: listable, not enterable) does not keep its scratch
    folder, the copy of uploads/, on the host."""
    code = (
        "import os\n"
        "for d, mode in (('shut', 0), ('peek', 0o400)):\n"
        "    os.makedirs(d + '/deeper')\n"
        "    open(d + '/deeper/f', 'w').write('x')\n"
        "    os.chmod(d + '/deeper', mode)\n"
        "    os.chmod(d, mode)\n"
        "print(os.getcwd())\n")
    _, line, obs = experiment(exec_mount, engine, code)
    assert line == "run: done"
    tmp = re.escape(os.environ.get("TMPDIR") or "/tmp")
    assert re.fullmatch(rf"{tmp}/flowfs-{os.getuid()}/daemon-\w{{6}}/experiment-\w{{6}}",
                        obs), obs
    wait_until(lambda: not os.path.lexists(obs), "the scratch folder removed",
               timeout=10)


def test_cancel_kills_the_whole_sandbox(exec_mount, engine):
    """echo cancel > ctl while the experiment and a fork(); setsid();
    fork() descendant of it run: both are gone once the run reads
    cancelled."""
    token = new_token()
    with killed_after(token):
        s = start(exec_mount, engine, (
            "import os\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
            f"        os.execvp('sleep', ['sleep', '4{token}'])\n    os._exit(0)\n"
            f"os.execvp('sleep', ['sleep', '5{token}'])\n"))
        wait_until(lambda: len(sleepers(token)) == 2, "the experiment running")
        assert write_line(s / "ctl", "cancel\n") == 0
        assert wait_run(s) == "run: cancelled"
        gone(token)


def test_the_sandbox_dies_with_the_daemon(exec_mount, engine):
    """kill -9 of the daemon while an experiment runs: bwrap dies with it
    (--die-with-parent), and everything in its PID namespace."""
    token = new_token()
    with killed_after(token):
        start(exec_mount, engine, f"import os\nos.execvp('sleep', ['sleep', '6{token}'])\n")
        wait_until(lambda: sleepers(token), "the experiment running")
        exec_mount.kill9()
        gone(token)


def test_a_killed_daemons_scratch_folders_are_swept(run_mount, make_flowfs,
                                                    engine, tmp_path, monkeypatch):
    """kill -9 of the daemon while an experiment runs leaves its folder in
    $TMPDIR/flowfs-<uid>/; the next daemon started with --allow-exec
    removes it (its lock is free), without following the link the
    experiment left there or opening up what it points to, and leaves a
    live daemon's folder alone."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("keep")
    os.chmod(outside, 0o755)
    base = tmp / f"flowfs-{os.getuid()}"
    fs = run_mount("--allow-exec")
    assert os.lstat(base).st_mode & 0o7777 == 0o700
    token = new_token()
    with killed_after(token):
        start(fs, engine, (
            f"import os\nos.symlink({str(outside)!r}, 'out')\n"
            "os.mkdir('shut')\nopen('shut/x', 'w').write('x')\nos.chmod('shut', 0)\n"
            f"os.execvp('sleep', ['sleep', '7{token}'])\n"))
        wait_until(lambda: sleepers(token), "the experiment running")
        (dead,) = os.listdir(base)
        (scratch,) = os.listdir(base / dead)
        assert scratch.startswith("experiment-")
        fs.kill9()
        gone(token)
    assert os.path.islink(base / dead / scratch / "out")
    other = make_flowfs(name="other", extra_args=["--allow-exec"])
    assert not os.path.lexists(base / dead)
    assert (outside / "keep").read_text() == "keep"
    assert os.lstat(outside).st_mode & 0o7777 == 0o755
    (live,) = os.listdir(base)
    fs.start()
    assert live in os.listdir(base) and len(os.listdir(base)) == 2
    fs.stop()
    other.stop()
    # a daemon that ends removes its own folder
    assert os.listdir(base) == []


def test_process_count_is_capped(exec_mount, engine):
    _, line, obs = experiment(exec_mount, engine, (
        "import os, signal\nkids = []\n"
        "try:\n"
        "    for _ in range(400):\n"
        "        pid = os.fork()\n"
        "        if pid == 0:\n"
        "            signal.pause()\n"
        "            os._exit(0)\n"
        "        kids.append(pid)\n"
        "except OSError as e:\n    print('stopped', e.errno)\n"
        "for pid in kids:\n    os.kill(pid, 9)\n    os.waitpid(pid, 0)\n"
        "print(len(kids))\n"))
    assert line == "run: done"
    stopped, count = obs.splitlines()
    assert stopped == "stopped 11"         # EAGAIN
    assert int(count) < 256


def test_what_is_kept_in_output_is_capped(exec_mount, engine):
    """Up to 1000 files kept from one run; a FIFO does not hold the run."""
    s, line, obs = experiment(exec_mount, engine, (
        "import os\nos.mkfifo('a-fifo')\n"
        "for i in range(1005):\n    open(f'f{i:04}', 'w').write(str(i))\n"
        "print('made')\n"))
    assert line == "run: done" and obs == "made"
    kept = [n for n in os.listdir(s / "output") if n.startswith(("f", "a-"))]
    assert len(kept) == 1000 and "a-fifo" not in kept
    left = [m for p, m in status_of(s)[1] if p == "output"]
    assert len(left) == 1 and re.fullmatch(
        r"5 files the experiments made left out \(f\d{4}, …\): over 64 MiB,"
        r" past 256 MiB or 1000 files kept from one run, or a name flowfs"
        r" keeps", left[0]), left


def test_a_made_file_named_as_flowfs_keeps_is_left_out(exec_mount, engine):
    """A file the experiment names summary.json (flowfs shows its own
    output/summary.json) stays behind, as write_artifact refuses it: kept,
    it would be hidden under flowfs's file."""
    s, line, obs = experiment(exec_mount, engine, (
        "open('summary.json', 'w').write('forged')\n"
        "open('mine.txt', 'w').write('kept')\nprint('made')\n"))
    assert line == "run: done" and obs == "made"
    assert read_bytes(s / "output" / "mine.txt") == b"kept"
    assert read_bytes(s / "output" / "summary.json") != b"forged"
    left = [m for p, m in status_of(s)[1] if p == "output"]
    assert left == ["1 file the experiments made left out (summary.json):"
                    " over 64 MiB, past 256 MiB or 1000 files kept from one"
                    " run, or a name flowfs keeps"], left


def test_links_in_uploads_that_point_outside_are_left_out(exec_mount, engine,
                                                            tmp_path):
    """uploads/evil -> a host file only the user may read, and
    uploads/output.txt -> a host file the user may write (the README's
    Titanic experiment writes output.txt): neither is in the sandbox; a
    link inside uploads/ is."""
    secret = tmp_path / "secret.txt"
    secret.write_text("only mine")
    os.chmod(secret, 0o600)
    host = tmp_path / "host.txt"
    host.write_text("host file")
    s, line, obs = experiment(exec_mount, engine, PROBE + (
        "print('evil', probe('evil'), os.path.lexists('evil'))\n"
        "open('output.txt', 'w').write('32.20')\n"
        "print('inside', probe('inside'))\n"
        "print('up', os.path.lexists('up'))\n"), uploads={
            "evil": ("link", str(secret)), "output.txt": ("link", str(host)),
            "inside": ("link", "fares.txt"), "up": ("link", "../t")})
    assert line == "run: done"
    assert obs.splitlines() == ["evil ENOENT False", "inside read b'32.20 7.25\\n'",
                                "up False"]
    assert host.read_text() == "host file"
    log = status_of(s)[1]
    for name in ("evil", "output.txt", "up"):
        assert (f"uploads/{name}", "not in the experiment's folder: the link"
                " does not point inside uploads/") in log


def refused_start(tmp_path, path, *extra):
    """Start `flowfs --allow-exec` with PATH `path`, which must refuse:
    its exit status and stderr."""
    mnt = tmp_path / "mnt"
    mnt.mkdir(exist_ok=True)
    env = dict(os.environ, PATH=path)
    proc = subprocess.Popen([str(flowfs_bin()), f"--db={tmp_path / 'x.db'}", "-f",
                             "--allow-exec", *extra, str(mnt)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        subprocess.run(["fusermount3", "-u", str(mnt)], env=dict(os.environ))
        proc.kill()
        proc.communicate()
        pytest.fail("flowfs --allow-exec started")
    assert not os.path.ismount(mnt)
    return proc.returncode, err


def test_allow_exec_refuses_when_bwrap_cannot_make_a_sandbox(tmp_path):
    """bwrap on PATH but unable to make a sandbox (user namespaces off:
    a fake bwrap says what the real one says then): --allow-exec refuses
    to start, with bwrap's own words, instead of failing each run."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "bwrap").write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace,"
        " likely because the kernel does not allow non-privileged user"
        " namespaces.' >&2\nexit 1\n")
    os.chmod(fake / "bwrap", 0o755)
    rc, err = refused_start(tmp_path, f"{fake}:{os.environ['PATH']}")
    assert rc == 1
    assert err == ("flowfs: --allow-exec: the trial sandbox failed: cannot start"
                   " the experiment's sandbox (bwrap): bwrap: No permissions to"
                   " creating new namespace, likely because the kernel does not"
                   " allow non-privileged user namespaces.\n"), err
    # nothing of the trial is left in the folder it was made in
    assert not [n for n in os.listdir(os.environ.get("TMPDIR") or "/tmp")
                if n.startswith("flowfs-trial-") and
                os.stat(os.path.join(os.environ.get("TMPDIR") or "/tmp", n),
                        follow_symlinks=False).st_uid == os.getuid()]


def test_allow_exec_starts_with_a_working_bwrap(exec_mount):
    """The real bwrap makes the trial sandbox: the mount is up."""
    assert os.path.ismount(exec_mount.mnt)


def test_allow_exec_needs_bubblewrap(tmp_path):
    """With no bwrap on PATH, --allow-exec refuses to start: one line."""
    empty = tmp_path / "bin"
    empty.mkdir()
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    env = dict(os.environ, PATH=str(empty))
    proc = subprocess.Popen([str(flowfs_bin()), f"--db={tmp_path / 'x.db'}", "-f",
                             "--allow-exec", str(mnt)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        subprocess.run(["fusermount3", "-u", str(mnt)], env=dict(os.environ))
        proc.kill()
        proc.communicate()
        pytest.fail("flowfs --allow-exec started without bwrap")
    assert proc.returncode == 1
    assert err == ("flowfs: --allow-exec needs bubblewrap, and no bwrap is on PATH:"
                   " install it (Debian package bubblewrap)\n")
    assert not os.path.ismount(mnt)


@pytest.mark.parametrize("sig,name", [(9, "SIGKILL"), (15, "SIGTERM")])
def test_a_program_killed_by_a_signal_is_said_so(exec_mount, engine, sig, name):
    """bwrap passes on a program killed by signal N as exit status 128 + N:
    the observation names the signal, as a shell would, not the status."""
    _, line, obs = experiment(exec_mount, engine, (
        f"import os, sys\nprint('before', flush=True)\nos.kill(os.getpid(), {sig})\n"))
    assert line == "run: done"
    assert obs == f"before\nkilled by signal {sig} ({name})", obs
