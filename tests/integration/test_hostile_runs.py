"""Issue 25, runs against hostile input: what an experiment, an engine or a
name can do to what flowfs shows and keeps.  Each attack of the issue's
findings is run through the mount and shown to fail now (each test says
what the old code did).
"""
import json
import os
import time

import pytest

from conftest import read_bytes, status_json
# engine and run_mount are fixtures: imported, pytest finds them here
from test_engine import (ROUND1, engine, run_mount, science,  # noqa: F401
                         wait_run, write_line)
from test_sandbox import experiment


@pytest.fixture
def secret_mount(run_mount, monkeypatch):
    """A mount with experiments, whose daemon holds a secret in its
    environment besides the engine's key."""
    monkeypatch.setenv("SOME_OTHER_SECRET", "hunter2")
    return run_mount("--allow-exec")


def test_the_sandbox_sees_none_of_the_daemons_environment(secret_mount,
                                                           engine):
    """/proc/1/environ inside the sandbox was bwrap's, i.e. the daemon's
    whole environment: SOME_OTHER_SECRET went back to the engine in the
    observation.  Now bwrap runs with flowfs's own two variables, and the
    experiment with its own four."""
    _, line, obs = experiment(secret_mount, engine, (
        "import json, os\n"
        "seen = {}\n"
        "for pid in os.listdir('/proc'):\n"
        "    if pid.isdigit():\n"
        "        env = open(f'/proc/{pid}/environ', 'rb').read()\n"
        "        seen[pid] = [v.decode(errors='replace') for v in env.split(b'\\0') if v]\n"
        "print(json.dumps({'procs': seen, 'self': sorted(os.environ)}))"))
    assert line == "run: done"
    assert "hunter2" not in obs and "FLOWFS_ENGINE_KEY" not in obs, obs
    got = json.loads(obs.strip().splitlines()[-1])
    # bwrap (the namespace's init) runs with flowfs's two variables
    assert sorted(got["procs"]["1"]) == ["LANG=C.UTF-8",
                                         "PATH=/usr/local/bin:/usr/bin:/bin"]
    assert set(got["self"]) <= {"HOME", "LANG", "PATH", "PWD"}, got["self"]


def wait_failed(session, timeout=30):
    """The run's state once it ended (status.json, which must parse)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = status_json(session)["run"]
        if run and run["state"] != "running":
            return run
        time.sleep(0.05)
    pytest.fail("the run did not end")


@pytest.mark.parametrize("body", [
    b"upstream said \xff\xfe no",          # not UTF-8 at all
    b"cut in the middle of a euro \xe2\x82",  # a sequence cut short
])
def test_an_engine_error_that_is_not_utf8_is_shown(run_mount, engine, body):
    """An engine's error body with invalid UTF-8 (or a cut sequence) made
    status, status.json and `ls SESSION` fail with ENOMEM, across remounts,
    until another run.  Now the bytes that are no character read U+FFFD."""
    fs = run_mount("--engine-retries=0")
    s = fs.mnt / "t"
    os.mkdir(s)
    science(s, 1)
    for _ in range(4):
        engine.fail(400, body)
    assert write_line(s / "ctl", "run\n") == 0
    run = wait_failed(s)
    assert run["state"] == "failed"
    assert "\ufffd" in run["message"], run
    assert "HTTP 400" in run["message"], run
    # every view of the session works, and keeps working after a remount
    for _ in range(2):
        assert "status" in os.listdir(s)
        read_bytes(s / "status").decode()
        json.loads(read_bytes(s / "status.json"))
        os.stat(s / "status")
        fs.remount()


def test_a_line_separator_in_a_name_makes_no_line(run_mount):
    """U+2028, U+2029 and U+061C in a name were shown raw in status and
    the log: Python's splitlines() read an extra "ready" line.  Now they
    are escaped like the bidi marks."""
    fs = run_mount()
    s = fs.mnt / "t"
    os.mkdir(s)
    (s / "nodes" / "a.json").write_text('{"label": "t"}')
    node = "x\u2028ready\u2029\u061cy"
    (s / "edges" / "e.json").write_text(json.dumps({
        "source_node_id": "a", "source_parameter_name": "out",
        "target_node_id": node, "target_parameter_name": "input"}))
    text = read_bytes(s / "status").decode()
    assert "ready" not in text.splitlines(), text
    assert "\\u2028ready\\u2029\\u061cy" in text, text
    for line in text.splitlines():
        assert "\u2028" not in line and "\u061c" not in line
    # a name written to in parameters_output/ (the log names it)
    with open(s / "parameters_output" / f"p{node}", "w") as f:
        f.write("dropped")
    log = read_bytes(s / "log").decode()
    assert "ready" not in [l.strip() for l in log.splitlines()], log
    assert "px\\u2028ready\\u2029\\u061cy" in log, log


def status_text(session):
    return read_bytes(session / "status").decode()


def test_runs_past_the_bound_wait_their_turn(run_mount, engine):
    """Nothing bounded the runs going on at once (each may run
    experiments and hold an engine's reply).  Now --runs=N of them go on
    and the others wait, FIFO, saying so; a queued run can be taken back."""
    fs = run_mount("--runs=1")
    a, b, c = (fs.mnt / n for n in "abc")
    for s in (a, b, c):
        os.mkdir(s)
        science(s, 1)
    engine.hold(content="no tags")      # a's run waits on the engine
    assert write_line(a / "ctl", "run\n") == 0
    engine.held.wait(10)
    assert write_line(b / "ctl", "run\n") == 0
    assert write_line(c / "ctl", "run\n") == 0
    queued = "run: queued: waiting for one of the 1 runs going on (--runs)"
    assert queued in status_text(b).splitlines(), status_text(b)
    assert status_json(c)["run"]["state"] == "queued"
    # asked again while it waits: refused, the reason in the log
    assert write_line(b / "ctl", "run\n") == 22
    # taken back: it never starts
    assert write_line(c / "ctl", "cancel\n") == 0
    assert status_json(c)["run"]["state"] == "cancelled"
    assert len(engine.requests) == 1
    engine.reply(content="no tags either")
    engine.release()
    wait_run(a)
    line = wait_run(b)
    assert line.startswith("run: "), line
    assert status_json(c)["run"]["state"] == "cancelled"


def hwm_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def test_flooding_experiments_do_not_take_the_daemons_memory(run_mount,
                                                              engine):
    """Three experiments flooding stdout and stderr took the daemon from
    153 MB to 687 MB (64 MiB kept of each stream).  Now each keeps the
    first and last 256 KiB of each (the observation shows at most 16,000
    characters of them anyway)."""
    fs = run_mount("--allow-exec")   # --runs is 4: all three at once
    flood = ("import sys\n"
             "chunk = 'x' * 65535 + '\\n'\n"
             "for i in range(1600):\n"
             "    sys.stdout.write(chunk)\n"
             "    sys.stderr.write(chunk)\n"
             "print('the end')")
    before = hwm_kib(fs.proc.pid)
    sessions = []
    for n in range(3):
        s = fs.mnt / f"f{n}"
        os.mkdir(s)
        science(s, 1)
        engine.reply(content=ROUND1.replace(
            "print(open('fares.txt').read().split()[0])", flood))
        assert write_line(s / "ctl", "run\n") == 0
        sessions.append(s)
    for s in sessions:
        assert wait_run(s) == "run: done", status_text(s)
        obs = json.loads(read_bytes(s / "rounds" / "1.json"))["observation"]
        # the observation shows the start and the true end (what was
        # kept of the middle is cut from it as before)
        assert obs.startswith("xxx") and obs.rstrip().endswith(
            "the end"), obs[-300:]
    grown = hwm_kib(fs.proc.pid) - before
    # 3 x 2 streams x 2 x 256 KiB kept, and their copies: far under 100 MiB
    # (the old code kept 3 x 2 x 100 MiB)
    assert grown < 100 * 1024, f"the daemon grew by {grown} KiB"
