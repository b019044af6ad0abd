"""The job graph runs (issue 16): `echo submit > SESSION/ctl` runs the
session's nodes with the commands of the tool map, on this machine
(--executor=local) or on the test Slurm cluster (--executor=slurm), and
jobs/<node>/ shows what each did.

Everything goes through the mount with plain file I/O and real commands
(sh, /usr/bin/python3, sleep); a state is waited for by polling the files
flowfs shows (status.json, jobs/<id>/state) with a bounded timeout, never by
timing.  The tests that make sense for both executors are parametrized
over them; the Slurm ones skip, saying why, without the test cluster.
"""

import errno
import json
import os
import re
import stat
import subprocess
import time
from pathlib import Path

import pytest

from conftest import (STATUS_TIME_RE, expect, flowfs_bin, log_entries, put,
                      put_json, read_bytes, settled, status_json, status_of,
                      wait_until)

PY = "/usr/bin/python3"
ISO = re.compile(rf"^{STATUS_TIME_RE}$")
STATES = ("queued", "submitted", "running", "done", "failed", "cancelled",
          "skipped")
ENDED = ("done", "failed", "cancelled", "skipped")
# a job of these tests ends within seconds; the margin is for a busy machine
JOB_TIMEOUT = 90

# A step reads the files it is given (its upstream's outputs, in order),
# adds its own name and writes out.txt; times.txt says when it started and
# ended (the clock of the machine every job of these tests runs on).
STEP = """\
import sys, time
t0 = time.time()
name, srcs = sys.argv[1], sys.argv[2:]
data = b"".join(open(p, "rb").read() for p in srcs)
time.sleep(0.2)
open("out.txt", "wb").write(data + name.encode() + b"\\n")
open("times.txt", "w").write("%r %r\\n" % (t0, time.time()))
"""

STEP_OUTPUTS = {"data": "out.txt", "times": "times.txt"}

# The tool map of most tests: a root step, steps with one and two inputs,
# a failing tool, a tool that waits for a file (the test ends it by
# making that file) and a long sleeper.
TOOLS = {
    "root": {"command": [PY, "-c", STEP, "{{ node.id }}"],
             "outputs": STEP_OUTPUTS},
    "step": {"command": [PY, "-c", STEP, "{{ node.id }}", "{{ src }}"],
             "outputs": STEP_OUTPUTS},
    "join": {"command": [PY, "-c", STEP, "{{ node.id }}", "{{ left }}",
                         "{{ right }}"],
             "outputs": STEP_OUTPUTS},
    "fail": {"command": ["sh", "-c", "echo oops on stderr >&2; exit 3"]},
    # fails once the flag is there (bounded as "wait" is)
    "failwait": {"command": ["sh", "-c",
                             'i=0; while [ ! -e "$1" ] && [ $i -lt 1200 ]; '
                             'do sleep 0.05; i=$((i+1)); done; '
                             'echo oops on stderr >&2; exit 3', "failwait",
                             "{{ flag }}"]},
    # bounded (60 s): a test that fails must not leave it holding a CPU
    "wait": {"command": ["sh", "-c",
                         'i=0; while [ ! -e "$1" ] && [ $i -lt 1200 ]; do '
                         'sleep 0.05; i=$((i+1)); done; [ -e "$1" ] || exit 9;'
                         ' echo "waited for $1" > out.txt', "wait",
                         "{{ flag }}"],
             "outputs": {"data": "out.txt"}},
    "sleep": {"command": ["sleep", "{{ seconds }}"]},
    # ignores SIGTERM (the ignored signal stays ignored in sleep too):
    # only the SIGKILL after the grace stops it
    "stubborn": {"command": ["sh", "-c", "trap '' TERM; sleep 60"]},
}

# One CPU each: without resources a node's machine type (c2_m4_cpu by
# default) asks for 2 CPUs, all the test cluster has, and its jobs would
# run one at a time.
SMALL = {"cpus": 1, "memory_mib": 256}


def small(tools):
    return {label: dict(entry, resources=dict(SMALL,
                                              **entry.get("resources", {})))
            for label, entry in tools.items()}


# -- helpers -----------------------------------------------------------------

def write_tools(isolated_config, tools):
    """Write the tool map ($XDG_CONFIG_HOME/flowfs/tools.json); a change
    within the same clock tick still looks like a change."""
    path = isolated_config / "flowfs" / "tools.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    old = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(json.dumps(tools))
    st = path.stat()
    if st.st_mtime_ns <= old:
        os.utime(path, ns=(st.st_atime_ns, old + 1_000_000_000))
    return path


@pytest.fixture(params=["local", "slurm"])
def executor(request):
    """The executor's name; "slurm" needs (and skips without) the test
    cluster."""
    if request.param == "slurm":
        request.getfixturevalue("slurm")
    return request.param


@pytest.fixture
def mount_jobs(make_flowfs, isolated_config, tmp_path, request):
    """Factory: mount_jobs(executor, tools=TOOLS, jobs=4, name=...) mounts
    with --executor, --work-dir=<tmp>/work (and --jobs for local) and the
    tool map written; a Slurm mount gets SLURM_CONF in the daemon's
    environment."""
    def mount(executor, tools=TOOLS, jobs=4, name="mnt", extra_args=()):
        write_tools(isolated_config, small(tools))
        args = [f"--executor={executor}", f"--work-dir={tmp_path / 'work'}"]
        env = {}
        if executor == "local":
            args.append(f"--jobs={jobs}")
        else:
            env = request.getfixturevalue("slurm").env
        fs = make_flowfs(name=name, extra_args=args + list(extra_args),
                         env=env)
        made.append(fs)
        return fs
    made = []
    yield mount
    # a test that failed half way leaves no job going (on a shared
    # cluster above all); a session with nothing going refuses: ignored
    for fs in made:
        if os.path.ismount(fs.mnt):
            for name in os.listdir(fs.mnt):
                if (fs.mnt / name / "ctl").exists():
                    ctl(fs.mnt / name, "cancel")


def build_graph(s, nodes, edges=()):
    """Write nodes/<id>.json for each of `nodes` ({id: (label, {input:
    value})}) and edges/e<i>.json for each (source, output, target,
    input) of `edges` (output None: the default out_<label>).  The README's
    walk-through builds its small graph this way too."""
    for nid, (label, inputs) in nodes.items():
        doc = {"label": label, "input_parameters": [
            {"name": k, "type": "str", "value": v} for k, v in inputs.items()]}
        assert put_json(s / "nodes" / f"{nid}.json", doc) == 0, nid
    for i, (src, out, dst, inp) in enumerate(edges, 1):
        doc = {"source_node_id": src, "target_node_id": dst,
               "target_parameter_name": inp}
        if out is not None:
            doc["source_parameter_name"] = out
        assert put_json(s / "edges" / f"e{i}.json", doc) == 0, (src, dst)


def diamond(s):
    """a -> (b, c) -> d -> e, each passing its out.txt on."""
    build_graph(s, {"a": ("root", {}),
                    "b": ("step", {"src": ""}),
                    "c": ("step", {"src": ""}),
                    "d": ("join", {"left": "", "right": ""}),
                    "e": ("step", {"src": ""})},
                [("a", "data", "b", "src"), ("a", "data", "c", "src"),
                 ("b", "data", "d", "left"), ("c", "data", "d", "right"),
                 ("d", "data", "e", "src")])


def ctl(s, command):
    """`echo COMMAND > SESSION/ctl`: the errno of the write (0: taken)."""
    return put(s / "ctl", command + "\n")


def job_state(s, nid):
    """jobs/<nid>/state as (state word, {key: value}, [not_brought
    lines]); every line after the first is "key value"."""
    text = settled(s / "jobs" / nid / "state").decode()
    assert text.endswith("\n"), repr(text)
    lines = text.splitlines()
    assert lines[0] in STATES, text
    keys, not_brought = {}, []
    for line in lines[1:]:
        key, _, value = line.partition(" ")
        assert key and value, (line, text)
        if key == "not_brought":
            not_brought.append(value)
        else:
            assert key not in keys, text
            keys[key] = value
    return lines[0], keys, not_brought


def word(s, nid):
    try:
        return job_state(s, nid)[0]
    except FileNotFoundError:
        return None


def wait_job(s, nid, *states, timeout=JOB_TIMEOUT):
    wait_until(lambda: word(s, nid) in states,
               f"jobs/{nid}/state in {states} (it is {word(s, nid)})",
               timeout)
    return job_state(s, nid)


def graph_report(s):
    return status_json(s)["graph"]


def wait_graph(s, timeout=JOB_TIMEOUT):
    """status.json's graph once its run has ended."""
    def ended():
        g = graph_report(s)
        return g is not None and g["state"] != "running"
    wait_until(ended, f"the graph of {s.name} ends ({graph_report(s)})",
               timeout)
    return graph_report(s)


def log_of(s):
    """[(path, message)] of the session's log."""
    return [(p, m) for _, p, m in log_entries(s / "log")]


def times(s, nid):
    start, end = read_bytes(s / "jobs" / nid / "times.txt").split()
    return float(start), float(end)


def ls(path):
    return set(os.listdir(path))


def group_alive(pgid):
    """Whether a process of group `pgid` runs: a zombie does not (the
    process that takes up an orphan, a container's init, may be slow to
    reap it)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            text = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        state, _ppid, pgrp = text[text.rindex(")") + 2:].split()[:3]
        if int(pgrp) == pgid and state != "Z":
            return True
    return False


def squeue_ids(cluster, ids):
    """Which of the Slurm job ids squeue still lists (pending, running,
    completing...: its default states)."""
    r = cluster.run("squeue", "-h", "-o", "%i", "-j", ",".join(ids))
    if r.returncode != 0 and "Invalid job id" in r.stderr:
        return set()
    assert r.returncode == 0, (r.returncode, r.stderr)
    return set(r.stdout.split()) & set(ids)


def session_files(s):
    """The documents of a session a refused submit must leave alone."""
    out = {}
    for name in ("parameters.json", "session.json"):
        out[name] = read_bytes(s / name)
    for folder in ("nodes", "edges"):
        for name in sorted(os.listdir(s / folder)):
            out[f"{folder}/{name}"] = read_bytes(s / folder / name)
    return out


# -- 1. a graph runs ---------------------------------------------------------

def test_diamond_runs_in_dependency_order(mount_jobs, executor):
    fs = mount_jobs(executor)
    s = fs.mnt / "s"
    os.mkdir(s)
    diamond(s)
    assert graph_report(s) is None
    assert ls(s / "jobs") == set()
    assert ctl(s, "submit") == 0
    g = wait_graph(s)
    assert g == {"state": "done", "executor": executor, "jobs": 5, "done": 5,
                 "failed": 0, "skipped": 0, "cancelled": 0, "running": 0,
                 "started": g["started"], "ended": g["ended"]}, g
    assert ISO.match(g["started"]) and ISO.match(g["ended"]), g
    assert g["started"] <= g["ended"]

    # the files went along the edges
    assert read_bytes(s / "jobs" / "e" / "out.txt") == b"a\nb\na\nc\nd\ne\n"
    assert read_bytes(s / "jobs" / "b" / "out.txt") == b"a\nb\n"
    # each job started after every job it needs had ended
    needs = {"b": ["a"], "c": ["a"], "d": ["b", "c"], "e": ["d"]}
    for nid, ups in needs.items():
        for up in ups:
            assert times(s, nid)[0] >= times(s, up)[1], (nid, up)

    assert ls(s / "jobs") == set("abcde")
    for nid in "abcde":
        assert ls(s / "jobs" / nid) == {"script", "state", "stdout", "stderr",
                                        "out.txt", "times.txt"}, nid
        state, keys, nb = job_state(s, nid)
        assert (state, nb) == ("done", []), (nid, state, nb)
        assert keys["exit_code"] == "0"
        assert set(keys) == {"scheduler_id", "exit_code", "queued",
                             "started", "ended"}, keys
        assert re.fullmatch(r"[0-9]+", keys["scheduler_id"]), keys
        for k in ("queued", "started", "ended"):
            assert ISO.match(keys[k]), keys
        assert keys["queued"] <= keys["started"] <= keys["ended"], keys
        assert read_bytes(s / "jobs" / nid / "stdout") == b""
        assert read_bytes(s / "jobs" / nid / "stderr") == b""
        script = read_bytes(s / "jobs" / nid / "script").decode()
        assert script.startswith("#!/bin/bash\n"), script
        assert STEP.splitlines()[1] in script, script
        # the files are plain read-only-for-others files of the user
        st = os.stat(s / "jobs" / nid / "out.txt")
        assert stat.S_ISREG(st.st_mode)
    # stdout and stderr of a job that prints: see the failure test

    log = log_of(s)
    assert log[0][0] == "ctl"
    assert re.fullmatch(rf"graph submitted: 5 jobs \({executor}\), in /.+",
                        log[0][1]), log[0]
    assert log[-1] == ("ctl", "graph done"), log
    for nid in "abcde":
        mine = [m for p, m in log if p == f"jobs/{nid}"]
        want = ["running", "done"]
        if executor == "slurm":
            # squeue may never see a short job running
            want = ["submitted"] + [m for m in mine if m == "running"] + \
                ["done"]
        assert mine == want, (nid, mine)
    # the status line is gone once the run ended
    problems, _ = status_of(s)
    assert not any(p.startswith("graph:") for p in problems), problems


def start_held(fs, tmp_path, root):
    """Session s of `fs` running a graph held up: a waits on a flag file
    (touch it to let a end), b waits on a, and `root`, on its own, is
    done."""
    s = fs.mnt / "s"
    os.mkdir(s)
    flag = tmp_path / "flag"
    build_graph(s, {"a": ("wait", {"flag": str(flag)}),
                    "b": ("step", {"src": ""}),
                    root: ("root", {})},
                [("a", "data", "b", "src")])
    assert ctl(s, "submit") == 0
    wait_job(s, "a", "running")
    wait_job(s, root, "done")
    return s, flag


def test_status_says_running(mount_jobs, executor, tmp_path):
    s, flag = start_held(mount_jobs(executor), tmp_path, "c")
    lines = settled(s / "status").decode().splitlines()
    assert "graph: running: 1 of 3 done" in lines, lines
    g = graph_report(s)
    assert (g["state"], g["jobs"], g["done"], g["running"], g["ended"]) == \
        ("running", 3, 1, 1, None), g
    assert word(s, "b") == ("queued" if executor == "local" else "submitted")
    flag.touch()
    assert wait_graph(s)["state"] == "done"
    assert read_bytes(s / "jobs" / "b" / "out.txt") == \
        f"waited for {flag}\nb\n".encode()
    assert "graph: running" not in settled(s / "status").decode()


# -- 2. a failing node ---------------------------------------------------------

def test_failed_node_skips_its_descendants(mount_jobs, executor, request,
                                           tmp_path):
    fs = mount_jobs(executor)
    s = fs.mnt / "s"
    os.mkdir(s)
    flag = tmp_path / "flag"
    build_graph(s, {"a": ("root", {}),
                    "f": ("failwait", {"src": "", "flag": str(flag)}),
                    "g": ("step", {"src": ""}),
                    "h": ("step", {"src": ""}),
                    "u": ("root", {}),
                    "v": ("step", {"src": ""})},
                [("a", "data", "f", "src"), ("f", None, "g", "src"),
                 ("g", "data", "h", "src"), ("u", "data", "v", "src")])
    assert ctl(s, "submit") == 0
    # f fails last: the run ends with its failure
    wait_job(s, "v", "done")
    flag.touch()
    g = wait_graph(s)
    assert {k: g[k] for k in ("state", "jobs", "done", "failed", "skipped",
                              "cancelled", "running")} == \
        {"state": "failed", "jobs": 6, "done": 3, "failed": 1, "skipped": 2,
         "cancelled": 0, "running": 0}, g

    state, keys, _ = job_state(s, "f")
    assert (state, keys["exit_code"], keys["message"]) == \
        ("failed", "3", "exited with 3"), keys
    assert read_bytes(s / "jobs" / "f" / "stderr") == b"oops on stderr\n"
    assert read_bytes(s / "jobs" / "f" / "stdout") == b""
    for nid in "gh":
        state, keys, _ = job_state(s, nid)
        assert state == "skipped", (nid, state)
        assert keys["message"] == "upstream node f failed", keys
        assert "exit_code" not in keys and "started" not in keys, keys
        # a skipped job never ran: nothing of it comes
        assert ls(s / "jobs" / nid) == {"script", "state"}, nid
    for nid in "auv":
        assert word(s, nid) == "done", nid
    assert read_bytes(s / "jobs" / "v" / "out.txt") == b"u\nv\n"
    log = log_of(s)
    assert ("jobs/f", "failed: exited with 3") in log
    assert ("jobs/g", "skipped: upstream node f failed") in log
    assert log[-1] == ("ctl", "graph failed")
    if executor == "slurm":
        # the skipped jobs were waiting in Slurm's queue (afterok on f):
        # they leave it, or they would wait there for ever
        ids = [job_state(s, n)[1]["scheduler_id"] for n in "gh"]
        cluster = request.getfixturevalue("slurm")
        wait_until(lambda: not squeue_ids(cluster, ids),
                   f"squeue no longer lists the skipped jobs {ids}")


def test_missing_command_fails_with_127(mount_jobs, executor):
    tools = dict(TOOLS, nosuch={"command": ["flowfs-no-such-command", "x"]})
    fs = mount_jobs(executor, tools=tools)
    s = fs.mnt / "s"
    os.mkdir(s)
    build_graph(s, {"n": ("nosuch", {})})
    assert ctl(s, "submit") == 0
    assert wait_graph(s)["state"] == "failed"
    state, keys, _ = job_state(s, "n")
    assert (state, keys["exit_code"]) == ("failed", "127"), keys
    assert b"flowfs-no-such-command" in read_bytes(s / "jobs" / "n" / "stderr")


# -- 3. cancel -------------------------------------------------------------------

def test_cancel_stops_every_job(mount_jobs, executor, request):
    fs = mount_jobs(executor)
    s = fs.mnt / "s"
    os.mkdir(s)
    build_graph(s, {"a": ("sleep", {"seconds": "60"}),
                    "b": ("stubborn", {}),
                    "c": ("step", {"src": ""})},
                [("a", None, "c", "src")])
    assert ctl(s, "submit") == 0
    ids = {}
    for nid in "ab":
        _, keys, _ = wait_job(s, nid, "running")
        ids[nid] = keys["scheduler_id"]
    if executor == "local":
        # the stubborn job must have set its trap before SIGTERM comes
        wait_until(lambda: any(
            Path(f"/proc/{p}/comm").read_text().strip() == "sleep"
            for p in os.listdir("/proc") if p.isdigit() and _in_group(
                int(p), int(ids["b"]))), "b's sleep started")
    assert "graph: running: 0 of 3 done" in settled(s / "status").decode()
    assert ctl(s, "cancel") == 0
    if executor == "local":
        # a local job is "cancelled" once nothing of it is left: b
        # ignores SIGTERM, and says it is stopping until the SIGKILL
        # 5 s later
        state, keys, _ = job_state(s, "b")
        assert (state, keys["message"]) == ("running",
                                            "stopping: cancelled"), keys
        assert ("jobs/b", "running: stopping: cancelled") in log_of(s)
        assert word(s, "c") == "cancelled"
        for nid in "ab":
            wait_job(s, nid, "cancelled", timeout=15)
            # nothing of it is left when it says so
            assert not group_alive(int(ids[nid])), nid
    for nid in "abc":
        state, keys, _ = job_state(s, nid)
        assert state == "cancelled", (nid, state)
        assert ISO.match(keys["ended"]), keys
        assert "message" not in keys, keys
    g = graph_report(s)
    assert {k: g[k] for k in ("state", "jobs", "cancelled", "done",
                              "running")} == \
        {"state": "cancelled", "jobs": 3, "cancelled": 3, "done": 0,
         "running": 0}, g
    assert ISO.match(g["ended"]), g
    assert ("ctl", "graph cancelled") in log_of(s)
    assert ("jobs/a", "cancelled") in log_of(s)
    # the processes are gone: SIGTERM, and SIGKILL 5 s later for b
    if executor == "local":
        for nid, pid in ids.items():
            wait_until(lambda: not group_alive(int(pid)),
                       f"process group {pid} of {nid} is gone", timeout=12)
    else:
        cluster = request.getfixturevalue("slurm")
        wait_until(lambda: not squeue_ids(cluster, list(ids.values())),
                   f"squeue no longer lists {ids}", timeout=30)
    # they stay cancelled; nothing else is going on
    assert ctl(s, "cancel") == errno.EINVAL
    for nid in "abc":
        assert word(s, nid) == "cancelled", nid


def test_cancel_while_jobs_start(mount_jobs, executor, request):
    """A cancel that comes while the monitor is starting the jobs (forks,
    sbatch) stops them all: none it was starting just then goes on."""
    fs = mount_jobs(executor, jobs=64)
    name = f"race{os.getpid()}"
    s = fs.mnt / name
    os.mkdir(s)
    nodes = {f"n{i:02}": ("sleep", {"seconds": "60"}) for i in range(40)}
    build_graph(s, nodes)
    assert ctl(s, "submit") == 0
    wait_until(lambda: any(word(s, n) in ("submitted", "running")
                           for n in nodes), "a job started")
    assert ctl(s, "cancel") == 0

    def ours():
        """Jobs of this session still going: processes, or Slurm jobs."""
        if executor == "local":
            return [n for n in nodes
                    if "scheduler_id" in job_state(s, n)[1] and
                    group_alive(int(job_state(s, n)[1]["scheduler_id"]))]
        r = request.getfixturevalue("slurm").run("squeue", "-h", "-o", "%j")
        assert r.returncode == 0, r.stderr
        return [j for j in r.stdout.split()
                if j.startswith(f"flowfs-{name}-")]

    def settled_down():
        return not ours() and all(word(s, n) == "cancelled" for n in nodes)
    wait_until(settled_down, "every job cancelled and gone", timeout=30)
    assert graph_report(s)["state"] == "cancelled"
    assert {n: word(s, n) for n in nodes} == {n: "cancelled" for n in nodes}


def _in_group(pid, pgid):
    try:
        return os.getpgid(pid) == pgid
    except ProcessLookupError:
        return False


# -- 4. a remount re-attaches ------------------------------------------------------

def test_remount_reattaches(mount_jobs, executor, tmp_path, request):
    fs = mount_jobs(executor)
    s = fs.mnt / "s"
    os.mkdir(s)
    flag_a, flag_c = tmp_path / "flag-a", tmp_path / "flag-c"
    build_graph(s, {"a": ("wait", {"flag": str(flag_a)}),
                    "b": ("step", {"src": ""}),
                    "c": ("wait", {"flag": str(flag_c)})},
                [("a", "data", "b", "src")])
    assert ctl(s, "submit") == 0
    _, keys_a, _ = wait_job(s, "a", "running")
    _, keys_c, _ = wait_job(s, "c", "running")
    fs.stop()
    fs.check()
    # the jobs go on without the daemon; c ends meanwhile
    if executor == "local":
        assert group_alive(int(keys_a["scheduler_id"]))
        assert group_alive(int(keys_c["scheduler_id"]))
    flag_c.touch()
    work = tmp_path / "work"
    wait_until(lambda: list(work.glob("s-*/run-1/c/out.txt")),
               "c wrote its output while unmounted")
    if executor == "local":
        wait_until(lambda: not group_alive(int(keys_c["scheduler_id"])),
                   "c's process ended")
    else:
        cluster = request.getfixturevalue("slurm")
        wait_until(lambda: not squeue_ids(cluster,
                                          [keys_c["scheduler_id"]]),
                   "c left the queue")
    fs.start()
    state, keys, _ = wait_job(s, "c", "done")
    assert keys["scheduler_id"] == keys_c["scheduler_id"]
    assert read_bytes(s / "jobs" / "c" / "out.txt") == \
        f"waited for {flag_c}\n".encode()
    assert word(s, "a") == "running"
    flag_a.touch()
    assert wait_graph(s)["state"] == "done"
    assert read_bytes(s / "jobs" / "a" / "out.txt") == \
        f"waited for {flag_a}\n".encode()
    assert read_bytes(s / "jobs" / "b" / "out.txt") == \
        f"waited for {flag_a}\nb\n".encode()
    assert job_state(s, "a")[1]["scheduler_id"] == keys_a["scheduler_id"]


# -- 5. a big graph ----------------------------------------------------------------

FAN = 200


def test_wide_graph_completes(mount_jobs, executor):
    tools = dict(TOOLS, copy={
        "command": ["sh", "-c", 'cat "$1" > out.txt', "copy", "{{ src }}"],
        "outputs": {"data": "out.txt"}})
    fs = mount_jobs(executor, tools=tools)
    s = fs.mnt / "s"
    os.mkdir(s)
    nodes = {"root": ("root", {})}
    nodes.update({f"n{i:03}": ("copy", {"src": ""}) for i in range(FAN - 1)})
    # through parameters.json: one write for the whole graph
    doc = json.loads(read_bytes(s / "parameters.json"))
    doc["nodes"] = [{"id": nid, "label": label, "input_parameters": [
        {"name": k, "type": "str", "value": v} for k, v in inputs.items()]}
        for nid, (label, inputs) in nodes.items()]
    doc["edges"] = [{"id": f"e{i:03}", "source_node_id": "root",
                     "source_parameter_name": "data",
                     "target_node_id": f"n{i:03}",
                     "target_parameter_name": "src"} for i in range(FAN - 1)]
    assert put_json(s / "parameters.json", doc) == 0
    t0 = time.monotonic()
    assert ctl(s, "submit") == 0
    g = wait_graph(s, timeout=900)
    took = time.monotonic() - t0
    print(f"\n{FAN}-node graph on {executor}: {took:.1f} s")
    assert (g["state"], g["jobs"], g["done"]) == ("done", FAN, FAN), g
    assert len(ls(s / "jobs")) == FAN
    for i in (0, FAN // 2, FAN - 2):
        assert read_bytes(s / "jobs" / f"n{i:03}" / "out.txt") == b"root\n"


# -- 6. refusals ---------------------------------------------------------------------

BAD_GRAPHS = {
    "no_command": (
        {"a": ("nocmd", {})}, [],
        r'node "a": its label "nocmd" has no command in the tool map \(.+\)'),
    "unknown_label": (
        {"a": ("no_such_label", {})}, [],
        r'node "a": its label "no_such_label" has no command in the tool '
        r'map \(.+tools\.json\)'),
    "undeclared_output": (
        {"a": ("root", {}), "b": ("step", {"src": ""})},
        [("a", "energy", "b", "src")],
        r'edge "e1": node "a" \(root\) has no output "energy" \(it has: '
        r'data, out_root, times\)|'
        r'edge "e1": node "a" \(root\) has no output "energy" \(it has: '
        r'out_root, data, times\)'),
    "template": (
        {"a": ("badtpl", {})}, [],
        r'node "a": command\[1\]: .*\'missing_var\' is undefined'),
    # a value no argv can carry
    "nul": (
        {"a": ("echo", {"v": "x\0y"})}, [],
        r'node "a": command\[1\] renders with a NUL byte, which no '
        r'argument can hold'),
    "no_nodes": ({}, [], r"the graph has no nodes"),
}


@pytest.mark.parametrize("case", sorted(BAD_GRAPHS))
def test_graph_that_cannot_run_is_refused(mount_jobs, case):
    tools = dict(TOOLS, nocmd={"image": "x/y:1"},
                 badtpl={"command": ["echo", "{{ missing_var.x }}"]},
                 echo={"command": ["echo", "{{ v }}"]})
    fs = mount_jobs("local", tools=tools)
    s = fs.mnt / "s"
    os.mkdir(s)
    nodes, edges, why = BAD_GRAPHS[case]
    build_graph(s, nodes, edges)
    before = session_files(s)
    assert ctl(s, "submit") == errno.EINVAL
    path, msg = log_of(s)[-1]
    assert path == "ctl" and re.fullmatch(why, msg), (path, msg)
    assert ls(s / "jobs") == set()
    assert graph_report(s) is None
    assert session_files(s) == before
    assert not (fs.tmp / "work").exists() or \
        not any((fs.tmp / "work").iterdir())


def test_pending_edge_refuses_the_graph(mount_jobs):
    fs = mount_jobs("local")
    s = fs.mnt / "s"
    os.mkdir(s)
    build_graph(s, {"a": ("root", {})},
                [("a", "data", "ghost", "src")])
    before = session_files(s)
    assert ctl(s, "submit") == errno.EINVAL
    path, msg = log_of(s)[-1]
    assert path == "ctl", (path, msg)
    assert msg.startswith("the graph is not whole: edges/e1.json: waits for"
                          ), msg
    assert "ghost" in msg
    assert ls(s / "jobs") == set()
    assert graph_report(s) is None
    assert session_files(s) == before


def test_cycle_cannot_be_made(mount_jobs, tmp_path):
    """A cycle never reaches submit: the edge closing it is refused."""
    fs = mount_jobs("local")
    s = fs.mnt / "s"
    os.mkdir(s)
    seed = tmp_path / "seed.txt"
    seed.write_text("seed\n")
    build_graph(s, {"a": ("step", {"src": str(seed)}),
                    "b": ("step", {"src": ""})},
                [("a", "data", "b", "src")])
    assert put_json(s / "edges" / "back.json", {
        "source_node_id": "b", "source_parameter_name": "data",
        "target_node_id": "a", "target_parameter_name": "src"}) == \
        errno.EINVAL
    doc = json.loads(read_bytes(s / "parameters.json"))
    doc["edges"].append({"id": "back", "source_node_id": "b",
                         "source_parameter_name": "data",
                         "target_node_id": "a",
                         "target_parameter_name": "src"})
    assert put_json(s / "parameters.json", doc) == errno.EINVAL
    assert ctl(s, "submit") == 0
    assert wait_graph(s)["state"] == "done"
    assert read_bytes(s / "jobs" / "b" / "out.txt") == b"seed\na\nb\n"


def test_unusable_tool_map_refuses(mount_jobs, isolated_config):
    fs = mount_jobs("local")
    s = fs.mnt / "s"
    os.mkdir(s)
    build_graph(s, {"a": ("root", {})})
    path = isolated_config / "flowfs" / "tools.json"
    old = path.stat().st_mtime_ns
    path.write_text("{not json")
    os.utime(path, ns=(old + 1_000_000_000, old + 1_000_000_000))
    assert ctl(s, "submit") == errno.EINVAL
    assert log_of(s)[-1][1].startswith("the tool map cannot be used: ")
    assert ls(s / "jobs") == set()
    assert graph_report(s) is None


SBATCH_REFUSALS = {
    "partition": ({"partition": "nosuch"},
                  "invalid partition specified: nosuch"),
    "cpus": ({"cpus": 64}, "More processors requested than permitted"),
}


@pytest.mark.parametrize("case", sorted(SBATCH_REFUSALS))
def test_sbatch_refusal_fails_the_job(mount_jobs, case):
    resources, said = SBATCH_REFUSALS[case]
    tools = dict(TOOLS, big={"command": ["true"], "resources": resources})
    fs = mount_jobs("slurm", tools=tools)
    s = fs.mnt / "s"
    os.mkdir(s)
    build_graph(s, {"x": ("big", {}), "y": ("step", {"src": ""}),
                    "ok": ("root", {})},
                [("x", None, "y", "src")])
    before = session_files(s)
    assert ctl(s, "submit") == 0
    g = wait_graph(s)
    assert (g["state"], g["failed"], g["skipped"], g["done"]) == \
        ("failed", 1, 1, 1), g
    state, keys, _ = job_state(s, "x")
    assert state == "failed", state
    assert said in keys["message"], keys
    assert keys["message"].startswith("sbatch failed: "), keys
    assert "exit_code" not in keys and "scheduler_id" not in keys, keys
    assert job_state(s, "y")[1]["message"] == "upstream node x failed"
    assert read_bytes(s / "jobs" / "ok" / "out.txt") == b"ok\n"
    assert session_files(s) == before
    assert any(p == "jobs/x" and said in m for p, m in log_of(s))


# -- 7. a running node cannot change ------------------------------------------------

def test_running_nodes_cannot_change(mount_jobs, executor, tmp_path):
    s, flag = start_held(mount_jobs(executor), tmp_path, "z")
    before = session_files(s)
    node_a = read_bytes(s / "nodes" / "a.json")
    params = read_bytes(s / "parameters.json")
    new_a = {"label": "wait", "input_parameters": [
        {"name": "flag", "type": "str", "value": "/elsewhere"}]}

    # the running node and the one waiting for it
    for nid in "ab":
        n0 = len(log_of(s))
        assert put_json(s / "nodes" / f"{nid}.json", new_a) == errno.EBUSY
        new_log = log_of(s)[n0:]
        busy = (f"nodes/{nid}.json",
                f'node "{nid}" is in the running job graph (see '
                f'jobs/{nid}/state; echo cancel > ctl stops the graph)')
        assert busy in new_log, new_log
        n0 = len(log_of(s))
        expect(errno.EBUSY, os.unlink, s / "nodes" / f"{nid}.json")
        assert log_of(s)[n0:] == [busy]
        expect(errno.EBUSY, os.rename, s / "nodes" / f"{nid}.json",
               s / "nodes" / f"{nid}2.json")
        assert log_of(s)[n0:] == [busy, busy]
    # a node whose job ended may change, and a new node may come
    assert put_json(s / "nodes" / "new.json", {"label": "root"}) == 0
    assert put_json(s / "parameters.json", json.loads(params)) == errno.EBUSY
    assert ctl(s, "submit") == errno.EBUSY
    assert log_of(s)[-1] == ("ctl", "the job graph is running (echo cancel "
                                    "> ctl stops it)")
    assert read_bytes(s / "nodes" / "a.json") == node_a
    assert {k: v for k, v in session_files(s).items()
            if k != "nodes/new.json" and k != "parameters.json"} == \
        {k: v for k, v in before.items() if k != "parameters.json"}
    assert word(s, "a") == "running"

    flag.touch()
    assert wait_graph(s)["state"] == "done"
    assert put_json(s / "nodes" / "a.json", new_a) == 0
    os.rename(s / "nodes" / "b.json", s / "nodes" / "b2.json")
    os.unlink(s / "nodes" / "b2.json")
    assert put_json(s / "parameters.json", json.loads(params)) == 0
    assert ls(s / "nodes") == {"a.json", "b.json", "z.json"}


# -- 8. security -------------------------------------------------------------------

def test_values_are_one_argument_never_code(mount_jobs, executor, tmp_path):
    pwn = tmp_path / "pwned"
    value = (f"$(touch {pwn}-1) `touch {pwn}-2` ; touch {pwn}-3 && "
             f"'single' \"double\" \\back\nnew line\ttab | > {pwn}-4 "
             f"* ? ~ {{{{ job_dir }}}} {{% if 1 %}}x{{% endif %}} é")
    tools = dict(TOOLS, echo={
        "command": [PY, "-c", "import os, sys\n"
                    "open('arg.bin', 'wb').write(os.fsencode(sys.argv[1]))\n"
                    "open('argc.txt', 'w').write(str(len(sys.argv)))\n",
                    "{{ v }}"],
        "outputs": {"arg": "arg.bin", "argc": "argc.txt"}})
    fs = mount_jobs(executor, tools=tools)
    # a node id and a session name that would be code in a script
    s = fs.mnt / "s $(touch pwned-5)'"
    os.mkdir(s)
    build_graph(s, {"n';touch pwned-6;'": ("echo", {"v": value})})
    assert ctl(s, "submit") == 0
    assert wait_graph(s)["state"] == "done"
    job = s / "jobs" / "n';touch pwned-6;'"
    assert read_bytes(job / "arg.bin") == value.encode()
    assert read_bytes(job / "argc.txt") == b"2"
    assert not list(tmp_path.glob("pwned*"))
    assert not list((tmp_path / "work").rglob("pwned-*"))
    assert not list(Path.cwd().glob("pwned-*"))


def test_symlinked_outputs_are_not_brought(mount_jobs, executor, tmp_path,
                                           isolated_config):
    tools_path = isolated_config / "flowfs" / "tools.json"
    tools = dict(TOOLS, sly={
        "command": ["sh", "-c",
                    'ln -s "$1" map.json; ln -s /etc/passwd passwd.txt; '
                    'ln -s /etc sub; mkfifo fifo; echo ok > ok.txt',
                    "sly", str(tools_path)],
        "outputs": {"map": "map.json", "pw": "passwd.txt",
                    "through": "sub/passwd", "fifo": "fifo",
                    "missing": "missing.txt", "ok": "ok.txt"}})
    fs = mount_jobs(executor, tools=tools)
    s = fs.mnt / "s"
    os.mkdir(s)
    build_graph(s, {"n": ("sly", {})})
    assert ctl(s, "submit") == 0
    assert wait_graph(s)["state"] == "done"
    state, keys, nb = job_state(s, "n")
    assert state == "done"
    assert sorted(nb) == sorted([
        "map (a symbolic link)", "pw (a symbolic link)",
        "through (a symbolic link)", "fifo (not a regular file)",
        "missing (no such file)"]), nb
    assert ls(s / "jobs" / "n") == {"script", "state", "stdout", "stderr",
                                    "ok.txt"}
    assert read_bytes(s / "jobs" / "n" / "ok.txt") == b"ok\n"


def test_work_dir_inside_the_mount_is_refused(tmp_path, isolated_config):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    (tmp_path / "link").symlink_to(mnt)
    for work in (mnt, mnt / "jobs", mnt / "a" / "b", tmp_path / "link" / "w"):
        r = subprocess.run([str(flowfs_bin()), f"--db={tmp_path / 'db'}",
                            f"--work-dir={work}", "-f", str(mnt)],
                           capture_output=True, text=True, timeout=30,
                           stdin=subprocess.DEVNULL)
        assert r.returncode != 0, (work, r)
        assert not os.path.ismount(mnt)
        assert re.search(r"^flowfs: the work folder .+ is inside the mount "
                         r"point: jobs must run outside it \(--work-dir\)$",
                         r.stderr, re.M), (work, r.stderr)
        # nothing was made in the mount point's folder
        assert os.listdir(mnt) == [], (work, os.listdir(mnt))


def test_a_failed_graph_keeps_status_from_ready(mount_jobs):
    """Issue 29: status read "ready" after the job graph failed, so a
    script waiting for "ready" could not tell done from failed.  A failed
    or cancelled graph is now a problem in status until the graph is
    submitted again or changed."""
    fs = mount_jobs("local")
    s = fs.mnt / "s"
    os.mkdir(s)
    build_graph(s, {"a": ("root", {}), "count": ("fail", {})})
    assert ctl(s, "submit") == 0
    assert wait_graph(s)["state"] == "failed"
    lines = read_bytes(s / "status").decode().splitlines()
    assert "graph: failed: 1 of 2 jobs failed (count: exited with 3)" in \
        lines, lines
    assert "ready" not in lines
    assert status_json(s)["ready"] is False
    # the graph changed: what failed is history
    assert put_json(s / "nodes" / "count.json", {"label": "root"}) == 0
    assert read_bytes(s / "status") == b"ready\n"
    # submitted again and cancelled: "cancelled" until the next change
    build_graph(s, {"w": ("wait", {"flag": str(fs.tmp / "never")})})
    assert ctl(s, "submit") == 0
    wait_job(s, "w", "running")
    assert ctl(s, "cancel") == 0
    assert wait_graph(s)["state"] == "cancelled"
    lines = read_bytes(s / "status").decode().splitlines()
    assert any(l.startswith("graph: cancelled: ") for l in lines), lines
