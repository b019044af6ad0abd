"""Issue 7: runs against an OpenAI-compatible engine (`echo run > X/ctl`),
driven through libcurl for real against a loopback fake server
(fake_engine.py), with plain file I/O on a real mount.

What the fake answers is scripted per test; what flowfs sent is read back
from the fake; what flowfs shows (status, output/, rounds/, engine.log,
request.json) is read through the mount.
"""
import errno
import json
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import time
import urllib.parse

import pytest

from conftest import (bind, dumps, put, put_json, read_bytes, settled,
                      status_of, wait_until)
from fake_engine import FakeEngine
from test_datcom import PC9

KEY = "sk-test-0123456789abcdef"


@pytest.fixture
def engine():
    e = FakeEngine()
    yield e
    e.close()


@pytest.fixture
def run_mount(make_flowfs, skill_folder, isolated_config, engine, monkeypatch):
    """Factory: a mount whose runs go to the fake engine (and whose
    fetches may reach the loopback file server)."""
    monkeypatch.setenv("FLOWFS_ENGINE_KEY", KEY)

    def mount(*extra, url=None):
        return make_flowfs(extra_args=[
            f"--skills={skill_folder.root}", f"--engine-url={url or engine.url}",
            "--engine-model=test-model", "--engine-backoff-ms=20",
            "--engine-timeout=5", "--fetch-allow-private", *extra])
    return mount


def write_line(path, text):
    """Write one line to ctl as a program does; the errno of write/close."""
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError as e:
        return e.errno
    try:
        os.write(fd, text.encode())
    except OSError as e:
        os.close(fd)
        return e.errno
    os.close(fd)
    return 0


def state_lines(session):
    """The run's and the fetches' states as status.json has them, each as
    the line status shows while it goes on: "run: <state>[: <message>]",
    "fetch <path>: <state>[: <message>]".  status shows only the ones
    going on (and a failed fetch, as a problem): checked here too."""
    for _ in range(100):     # the two read alike, around nothing changing
        raw = settled(session / "status.json")
        text = settled(session / "status").decode().splitlines()
        if settled(session / "status.json") == raw:
            break
    doc = json.loads(raw)
    lines = []
    for label, state in ([("run", doc["run"])] if doc["run"] else []) + \
            [(f"fetch {f['path']}", f) for f in doc["fetches"]]:
        assert set(state) >= {"state", "message", "time"}, state
        line = f"{label}: {state['state']}" + \
            (f": {state['message']}" if state["message"] else "")
        shown = state["state"] in ("running", "fetching", "queued", "failed") and \
            not (label == "run" and state["state"] == "failed")
        assert (line in text) == shown, (line, text)
        lines.append(line)
    assert doc["ready"] == (text[0] == "ready"), (doc, text)
    return lines


def status_line(session, prefix):
    """The line of state_lines() starting with `prefix`, or None."""
    lines = [l for l in state_lines(session) if l.startswith(prefix)]
    return lines[-1] if lines else None


def wait_line(session, prefix, busy, timeout=30):
    """That line once it no longer says `busy` (one string, or a tuple)."""
    busy = (busy,) if isinstance(busy, str) else busy
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = status_line(session, prefix)
        if line and not any(b in line for b in busy):
            return line
        time.sleep(0.05)
    pytest.fail(f"still {busy} after {timeout} s: {status_line(session, prefix)}")


def run_line(session):
    return status_line(session, "run: ")


def wait_run(session):
    return wait_line(session, "run: ", "run: running")


def bind_with(session, skill, request=None):
    """Bind the session to skill and write its request; both must pass."""
    assert bind(session, skill) == 0, status_of(session)
    if request is not None:
        assert put_json(session / "request.json", request) == 0, status_of(session)


def engine_log(session):
    return [json.loads(l) for l in read_bytes(session / "engine.log").decode().splitlines()]


def report_skill(skill_folder, required_input=False):
    """A skill with an artifact and a JSON result."""
    skill_folder.add(
        "report", skill_md="# Report\nWrite a report.\n",
        input={"type": "object", "properties": {
            "data": {"type": "string"},
            "question": {"type": "string", "x-input-source": "inline"}},
            "required": ["data"] if required_input else []},
        output={"type": "object", "properties": {
            "answer": {"type": "integer"},
            "report": {"type": "string", "x-type": "artifact", "x-filename": "report.md"}},
            "required": ["answer"]},
        prompts={"gemini": "Answer {{ input.question | default('nothing') }}."})


def report_session(run_mount, skill_folder, *extra, **kw):
    """A mount with the report skill and a session "s" bound to it."""
    report_skill(skill_folder)
    fs = run_mount(*extra, **kw)
    s = fs.mnt / "s"
    os.mkdir(s)
    bind_with(s, "report")
    return fs, s


# -- configuration and refusals ----------------------------------------------

def test_nothing_is_sent_without_an_engine(make_flowfs, skill_folder, isolated_config,
                                           engine):
    report_skill(skill_folder)
    fs = make_flowfs(extra_args=[f"--skills={skill_folder.root}"])
    s = fs.mnt / "s"
    os.mkdir(s)
    bind_with(s, "report")
    assert write_line(s / "ctl", "run\n") == errno.EINVAL
    assert status_of(s)[1][-1] == (
        "ctl", "no engine is configured: start flowfs with --engine-url=URL")
    assert json.loads(read_bytes(fs.mnt / ".flowfs" / "config"))["engine"] is None
    assert engine.requests == []
    assert read_bytes(s / "engine.log") == b""


def test_run_refused_until_the_session_can_run(run_mount, skill_folder, engine):
    report_skill(skill_folder, required_input=True)
    fs = run_mount()
    s = fs.mnt / "s"
    os.mkdir(s)
    assert write_line(s / "ctl", "run\n") == errno.EINVAL
    assert status_of(s)[1][-1] == ("ctl", 'no skill is bound: set "skill" in session.json')
    bind_with(s, "report")
    assert write_line(s / "ctl", "run\n") == errno.EINVAL
    assert status_of(s)[1][-1] == ("ctl", "cannot run: missing required input files: data")
    assert write_line(s / "ctl", "cancel\n") == errno.EINVAL
    assert status_of(s)[1][-1] == ("ctl", "no run or job graph is going on")
    assert engine.requests == [] and run_line(s) is None


def test_key_never_shown_or_stored(run_mount, skill_folder, engine):
    fs, s = report_session(run_mount, skill_folder)
    engine.reply(content='{"answer": 1}')
    assert write_line(s / "ctl", "run\n") == 0
    assert wait_run(s) == "run: done"
    assert engine.headers[0]["Authorization"] == f"Bearer {KEY}"
    config = json.loads(read_bytes(fs.mnt / ".flowfs" / "config"))
    assert config["engine"] == {"url": engine.url, "model": "test-model",
                                "key": True, "allow_exec": False}
    fs.stop()
    for p in fs.tmp.iterdir():
        if p.is_file():
            assert KEY.encode() not in p.read_bytes(), p


# -- any skill -----------------------------------------------------------------

def test_any_skill_run(run_mount, skill_folder, engine):
    report_skill(skill_folder)
    fs = run_mount()
    s = fs.mnt / "s"
    os.mkdir(s)
    bind_with(s, "report", {"input": {"question": "the question"}})
    prompt = read_bytes(s / "prompt.txt").decode()
    engine.reply(content="writing", tool_calls=[
        ("write_artifact", {"name": "report.md", "content": "# Report\nall good\n"}),
        ("write_artifact", {"name": "../escape.md", "content": "x"}),
        ("shell", {"cmd": "rm -rf /"})])
    final = 'Here it is:\n```json\n{"answer": 42}\n```\n'
    engine.reply(content=final)
    assert write_line(s / "ctl", "run\n") == 0
    assert wait_run(s) == "run: done"
    # the log has the run's start and its end
    assert status_of(s)[1] == [("run", "started: skill report, model test-model"),
                               ("run", "done")]
    first = engine.requests[0]
    assert first["model"] == "test-model"
    assert first["messages"] == [{"role": "system", "content": "# Report\nWrite a report.\n"},
                                 {"role": "user", "content": prompt}]
    assert [t["function"]["name"] for t in first["tools"]] == ["write_artifact"]
    answers = [m for m in engine.requests[1]["messages"] if m["role"] == "tool"]
    assert [a["tool_call_id"] for a in answers] == ["call_0", "call_1", "call_2"]
    assert answers[0]["content"] == "written: output/report.md (18 bytes)"
    assert answers[1]["content"] == "refused: ../escape.md is not an artifact of this skill"
    assert answers[2]["content"] == "refused: there is no tool shell"
    assert read_bytes(s / "output" / "report.md") == b"# Report\nall good\n"
    assert read_bytes(s / "output" / "response.md") == final.encode()
    assert read_bytes(s / "output" / "result.json") == dumps({
        "status": "success", "data": {"answer": 42}, "artifacts": ["report.md"],
        "validation_warnings": [], "error": None}).encode()
    assert sorted(os.listdir(s / "output")) == [".manifest.json", "report.md",
                                                "response.md", "result.json"]
    log = engine_log(s)
    assert [(l["purpose"], l["model"], l["http_status"], l["error"]) for l in log] == [
        ("run", "test-model", 200, None)] * 2
    assert all(l["prompt_tokens"] == 12 and l["completion_tokens"] == 34 for l in log)
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", l["time"]) for l in log)
    assert list(log[0]) == ["time", "purpose", "model", "duration_ms", "prompt_tokens",
                            "completion_tokens", "http_status", "error"]


def test_result_that_does_not_match_the_schema(run_mount, skill_folder, engine):
    fs, s = report_session(run_mount, skill_folder)
    engine.reply(content='{"answer": "many"}')
    assert write_line(s / "ctl", "run\n") == 0
    assert wait_run(s) == "run: done"
    result = json.loads(read_bytes(s / "output" / "result.json"))
    assert result["status"] == "success" and result["data"] == {"answer": "many"}
    assert result["validation_warnings"] == ["answer: expected an integer, got a string"]
    engine.reply(content="no JSON here")
    assert write_line(s / "ctl", "run\n") == 0
    assert wait_run(s) == "run: done"
    result = json.loads(read_bytes(s / "output" / "result.json"))
    assert result["status"] == "failed" and result["data"] is None
    assert result["error"] == "the reply holds no JSON object"


# -- failures: every one ends in a status line and a responsive daemon -------

def test_retries_on_429_and_5xx(run_mount, skill_folder, engine):
    fs, s = report_session(run_mount, skill_folder)
    engine.fail(500, "down")
    engine.fail(429, "slow down")
    engine.fail(503, "busy")
    engine.reply(content='{"answer": 3}')
    assert write_line(s / "ctl", "run\n") == 0
    assert wait_run(s) == "run: done"
    assert [l["http_status"] for l in engine_log(s)] == [500, 429, 503, 200]
    assert engine_log(s)[0]["error"] == "the engine answered HTTP 500: down"


def test_retry_after_is_honoured(run_mount, skill_folder, engine):
    """A 429 with Retry-After: 1 waits that second (the backoff given is
    20 ms), and a dropped connection is retried too."""
    fs, s = report_session(run_mount, skill_folder)
    # (dropped on a fresh connection: on a kept-alive one libcurl itself
    # reconnects once, unseen)
    engine.drop()
    engine.fail(429, "slow down", retry_after=1)
    engine.reply(content='{"answer": 3}')
    assert write_line(s / "ctl", "run\n") == 0
    assert wait_run(s) == "run: done"
    # a lower bound: a slower machine only waits longer
    assert engine.times[2] - engine.times[1] >= 0.9
    log = engine_log(s)
    assert [l["http_status"] for l in log] == [None, 429, 200]
    assert log[0]["error"].endswith("Server returned nothing (no headers, no data)")


@pytest.mark.parametrize("script,line", [
    (lambda e: [e.fail(500, "down") for _ in range(4)],
     "run: failed: the engine answered HTTP 500: down"),
    (lambda e: e.fail(401, "bad key"),
     "run: failed: the engine answered HTTP 401: bad key"),
    (lambda e: e.raw(b"{not json"),
     "run: failed: the engine's reply is not JSON (line 1, column 2: "),
    (lambda e: e.raw(b'{"choices": []}'),
     "run: failed: the engine's reply has no choices[0].message"),
])
def test_failures_end_in_a_status_line(run_mount, skill_folder, engine, script, line):
    fs, s = report_session(run_mount, skill_folder)
    script(engine)
    assert write_line(s / "ctl", "run\n") == 0
    end = wait_run(s)
    assert end.startswith(line)
    assert engine.left() == 0
    assert "response.md" not in os.listdir(s / "output")
    # the log ends with the run's end, as status.json has it
    assert status_of(s)[1] == [("run", "started: skill report, model test-model"),
                               ("run", end.removeprefix("run: "))]


def test_the_mount_answers_while_a_run_waits(run_mount, skill_folder, engine):
    """While the engine holds its answer, every file of the session still
    reads (a daemon that waited on the network would hang here: the
    subprocess's timeout is a liveness bound, not a speed check)."""
    fs, s = report_session(run_mount, skill_folder)
    engine.hold(content='{"answer": 5}')
    assert write_line(s / "ctl", "run\n") == 0
    assert engine.held.wait(30)
    r = subprocess.run(["sh", "-c", f"ls -l '{s}' '{s}/output' && cat '{s}/status' "
                        f"'{s}/engine.log' '{s}/session.json' > /dev/null && "
                        f"echo '{{\"title\": \"t\"}}' > '{s}/session.json'"],
                       capture_output=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert run_line(s) == "run: running: waiting for the engine (turn 1)"
    engine.release()
    assert wait_run(s) == "run: done"
    assert json.loads(read_bytes(s / "output" / "result.json"))["data"] == {"answer": 5}


def test_timeouts_are_retried(run_mount, skill_folder, engine):
    fs, s = report_session(run_mount, skill_folder, "--engine-timeout=1", "--engine-retries=1")
    engine.slow(3)
    engine.slow(3)
    assert write_line(s / "ctl", "run\n") == 0
    assert wait_run(s) == "run: failed: the engine did not answer within 1 s (%s)" % engine.url
    assert [l["http_status"] for l in engine_log(s)] == [None, None]


def test_connection_refused(run_mount, skill_folder):
    report_skill(skill_folder)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    fs = run_mount("--engine-retries=0", url=f"http://127.0.0.1:{port}/v1")
    s = fs.mnt / "s"
    os.mkdir(s)
    bind_with(s, "report")
    assert write_line(s / "ctl", "run\n") == 0
    assert re.fullmatch(r"run: failed: http://127\.0\.0\.1:\d+/v1: Couldn't connect to server",
                        wait_run(s))


def test_removing_a_session_cancels_its_run(run_mount, skill_folder, engine):
    """rm -rf of a session whose run waits for the engine stops the run:
    it hangs up on the answer instead of waiting for it.  The same for
    a session that another is renamed over."""
    # the engine's own timeout is far beyond the wait below
    fs, s = report_session(run_mount, skill_folder, "--engine-timeout=120")
    engine.hold()
    assert write_line(s / "ctl", "run\n") == 0
    assert engine.held.wait(30)
    shutil.rmtree(s)
    wait_until(engine.client_gone.is_set, "the run hung up on the engine")
    # mv over a running session
    engine.held.clear()
    engine.client_gone.clear()
    engine.hold()
    os.mkdir(s)
    bind_with(s, "report")
    os.mkdir(fs.mnt / "t")
    assert write_line(s / "ctl", "run\n") == 0
    assert engine.held.wait(30)
    os.rename(fs.mnt / "t", s)
    wait_until(engine.client_gone.is_set, "the run of the replaced session hung up")
    assert len(engine.requests) == 2


def test_cancel_and_one_run_at_a_time(run_mount, skill_folder, engine):
    fs, s = report_session(run_mount, skill_folder)
    engine.slow(20)
    assert write_line(s / "ctl", "run\n") == 0
    assert run_line(s).startswith("run: running")
    assert write_line(s / "ctl", "run\n") == errno.EINVAL
    assert status_of(s)[1][-1] == ("ctl", "a run is going on (echo cancel > ctl stops it)")
    assert write_line(s / "ctl", "cancel\n") == 0
    # cancelled mid-transfer: long before the slow answer comes
    assert wait_run(s) == "run: cancelled"
    assert [l["error"] for l in engine_log(s)] == ["cancelled"]
    assert status_of(s)[1] == [
        ("run", "started: skill report, model test-model"),
        ("ctl", "a run is going on (echo cancel > ctl stops it)"),
        ("run", "cancelled")]


def test_a_run_cut_by_the_daemon_stopping_reads_failed(run_mount, skill_folder, engine):
    fs, s = report_session(run_mount, skill_folder)
    engine.slow(3)
    assert write_line(s / "ctl", "run\n") == 0
    assert run_line(s).startswith("run: running")
    fs.kill9_remount()
    assert run_line(s) == "run: failed: flowfs stopped during the run"


def test_engine_log_drops_what_is_written(run_mount, skill_folder):
    fs = run_mount()
    s = fs.mnt / "s"
    os.mkdir(s)
    assert put(s / "engine.log", b'{"forged": true}\n') == 0
    assert read_bytes(s / "engine.log") == b""


# -- datcom ----------------------------------------------------------------------

def test_datcom_run_fills_the_parameters(run_mount, engine):
    fs = run_mount()
    s = fs.mnt / "pc9"
    os.mkdir(s)
    bind_with(s, "datcom", {"input": {"description": "The Pilatus PC-9 trainer"}})
    bad = dict(PC9, nalpha=5)
    engine.reply(content="", tool_calls=[("set_parameters", bad)])
    engine.reply(content="", tool_calls=[("set_parameters", "{broken")])
    engine.reply(content="", tool_calls=[("set_parameters", PC9)])
    assert write_line(s / "ctl", "run\n") == 0
    assert wait_run(s) == "run: done"
    first = engine.requests[0]
    assert "The Pilatus PC-9 trainer" in first["messages"][1]["content"]
    tool = first["tools"][0]["function"]
    schema = json.loads(read_bytes(s / "skill" / "assets" / "parameter.schema.json"))
    assert tool["name"] == "set_parameters" and tool["parameters"] == schema
    answers = [[m["content"] for m in r["messages"] if m["role"] == "tool"]
               for r in engine.requests[1:]]
    assert answers[0][0].startswith("refused: ") and "NALPHA" in answers[0][0].upper()
    assert answers[1][1].startswith("refused: the arguments are not JSON")
    # accepted parameters end the run: nothing more is asked
    assert len(engine.requests) == 3
    assert json.loads(read_bytes(s / "request.json"))["parameter"] == PC9
    assert b"\n $FLTCON NMACH=1.0," in read_bytes(s / "output" / "for005.dat")
    assert status_of(s)[0] == ["ready"]
    assert run_line(s) == "run: done"


def test_datcom_gives_up_after_three_refusals(run_mount, engine):
    fs = run_mount()
    s = fs.mnt / "pc9"
    os.mkdir(s)
    bind_with(s, "datcom")
    (s / "uploads" / "description").write_text("A small aircraft.\n")
    # the request as binding leaves it, no parameters
    before = read_bytes(s / "request.json")
    assert before == dumps({"input": {}, "parameter": {}}).encode()
    for _ in range(4):
        engine.reply(content="", tool_calls=[("set_parameters", {"nalpha": 2})])
    assert write_line(s / "ctl", "run\n") == 0
    line = wait_run(s)
    assert line.startswith("run: failed: the engine's parameters were refused 4 times;"
                           " the last time: ")
    assert "A small aircraft." in engine.requests[0]["messages"][1]["content"]
    # refused parameters never reach request.json
    assert read_bytes(s / "request.json") == before


def test_datcom_needs_a_description(run_mount, engine):
    fs = run_mount()
    s = fs.mnt / "pc9"
    os.mkdir(s)
    bind_with(s, "datcom")
    assert write_line(s / "ctl", "run\n") == errno.EINVAL
    assert status_of(s)[1][-1] == ("ctl", "cannot run: datcom needs the aircraft's"
                                   " description (inline input \"description\" or"
                                   " uploads/description)")


# -- scientific-workflow -------------------------------------------------------------

ROUND1 = ("<Phenomenon>\nThe fares vary.\n</Phenomenon>\n<Hypothesis>The mean is about 32."
          "</Hypothesis>\n<Model>mean</Model>\n<Experiment>\n```python\nprint(open('fares.txt')"
          ".read().split()[0])\n```\n</Experiment>")
WRITES = "open('result.txt', 'w').write('32.20')\n"
ROUND2 = ("<Inference>It read the file.</Inference><Hypothesis>Repeat it</Hypothesis>"
          "<Model>loop</Model><Experiment>for i in range(5): print('same')\n"
          "import socket\ntry:\n    socket.create_connection(('127.0.0.1', PORT), 2)\n"
          "    print('network: yes')\nexcept OSError:\n    print('network: no')"
          "</Experiment>")
ROUND3 = "<Inference>Enough.</Inference>\n<Conclusion>The mean fare is 32.20.</Conclusion>"


def science(s, max_iterations):
    bind_with(s, "scientific-workflow", {
        "input": {"description": "Find the mean fare.", "io_instructions": "print it"},
        "parameter": {"max_iterations": max_iterations}})
    (s / "uploads" / "fares.txt").write_text("32.20 7.25\n")


def test_rounds_run_without_exec_stop_before_the_first_experiment(run_mount, engine):
    fs = run_mount()
    s = fs.mnt / "t"
    os.mkdir(s)
    science(s, 3)
    engine.reply(content=ROUND1)
    assert write_line(s / "ctl", "run\n") == 0
    assert wait_run(s) == ("run: failed: round 1: experiments run only when flowfs is"
                           " started with --allow-exec; rounds/1.json holds the experiment")
    r1 = json.loads(read_bytes(s / "rounds" / "1.json"))
    assert r1 == {"phenomenon": "The fares vary.", "hypothesis": "The mean is about 32.",
                  "model": "mean", "experiment": "print(open('fares.txt').read().split()[0])"}
    assert len(engine.requests) == 1
    # a second run does not write over the rounds
    assert write_line(s / "ctl", "run\n") == errno.EINVAL
    assert status_of(s)[1][-1] == ("ctl", "cannot run: rounds/ already holds rounds"
                                   " (remove them to run again)")


def test_rounds_run_with_exec(run_mount, engine):
    fs = run_mount("--allow-exec")
    s = fs.mnt / "t"
    os.mkdir(s)
    science(s, 3)
    engine.reply(content=ROUND1)
    engine.reply(content=ROUND2.replace("PORT", str(int(engine.url.split(":")[2].split("/")[0])))
                 .replace("<Experiment>", "<Experiment>" + WRITES))
    engine.reply(content=ROUND3)
    assert write_line(s / "ctl", "run\n") == 0
    assert wait_run(s) == "run: done"
    rounds = [json.loads(read_bytes(s / "rounds" / f"{n}.json")) for n in (1, 2, 3)]
    assert rounds[0]["observation"] == "32.20"
    # the sandbox has a network namespace of its own (README: Security)
    assert rounds[1]["observation"] == "same (repeated 5 times)\nnetwork: no"
    assert rounds[2] == {"inference": "Enough.", "conclusion": "The mean fare is 32.20."}
    # the continue prompt carried the observation, the final one asked to conclude
    assert engine.requests[1]["messages"][-1]["content"].startswith(
        "<Observation>\n32.20\n</Observation>")
    assert "<Conclusion>" in engine.requests[2]["messages"][-1]["content"]
    content = json.loads(read_bytes(s / "summary.json"))[1]["content"]
    assert content.count("<Observation>") == 3 and content.count("<Experiment>") == 2
    # what the experiments wrote comes back to output/; the uploads do not
    assert read_bytes(s / "output" / "result.txt") == b"32.20"
    assert "fares.txt" not in os.listdir(s / "output")
    assert [l["purpose"] for l in engine_log(s)] == ["round 1", "round 2", "round 3"]


def test_a_round_without_its_tags_is_asked_again(run_mount, engine):
    fs = run_mount("--allow-exec")
    s = fs.mnt / "t"
    os.mkdir(s)
    science(s, 1)
    engine.reply(content="I would rather chat.")
    engine.reply(content=ROUND1)
    assert write_line(s / "ctl", "run\n") == 0
    assert wait_run(s) == "run: done"
    assert engine.requests[1]["messages"][-1] == {
        "role": "user", "content": 'rounds/1.json: the first round needs "phenomenon"'}
    assert json.loads(read_bytes(s / "rounds" / "1.json"))["observation"] == "32.20"


# -- URL inputs ---------------------------------------------------------------------

@pytest.fixture
def files():
    from fake_engine import FileServer
    f = FileServer()
    yield f
    f.close()


def csv_skill(skill_folder):
    skill_folder.add("stats", input={"type": "object", "properties": {
        "csv_file": {"type": "string", "extensions": [".csv"]}},
        "required": ["csv_file"]})


def fetch_line(session):
    return status_line(session, "fetch ")


def wait_fetch(session, timeout=30):
    return wait_line(session, "fetch ", (": fetching", ": queued"), timeout)


def test_url_input_is_fetched_into_uploads(run_mount, skill_folder, files):
    csv_skill(skill_folder)
    data = b"name,fare\n" + b"x,7.25\n" * 50000
    files.files["train.csv"] = data
    fs = run_mount()
    s = fs.mnt / "s"
    os.mkdir(s)
    bind_with(s, "stats", {"input": {"csv_file": f"{files.base}/redirect/3/train.csv"}})
    assert wait_fetch(s) == "fetch uploads/csv_file.csv: done: 0.3 MiB"
    # the log has the fetch's start and its end
    assert status_of(s)[1] == [("uploads/csv_file.csv", "fetch started"),
                               ("uploads/csv_file.csv", "fetched 0.3 MiB")]
    assert read_bytes(s / "uploads" / "csv_file.csv") == data
    assert os.listdir(s / "uploads") == ["csv_file.csv"]
    assert json.loads(read_bytes(s / "input.json")) == {
        "csv_file": str(s / "uploads" / "csv_file.csv")}
    assert status_of(s)[0][0] == "ready"
    # the same request again fetches nothing again
    hits = dict(files.hits)
    assert put(s / "request.json", read_bytes(s / "request.json")) == 0
    # a fetch would show "fetching" at once (it is recorded with the request)
    assert fetch_line(s) == "fetch uploads/csv_file.csv: done: 0.3 MiB"
    assert files.hits == hits
    # the stored request keeps the URL
    assert json.loads(read_bytes(s / "request.json"))["input"]["csv_file"].endswith(
        "/redirect/3/train.csv")


def test_fetches_do_not_need_an_engine(make_flowfs, skill_folder, isolated_config,
                                       files):
    """README: "Fetches do not need an engine": a mount started without
    --engine-url fetches a URL input all the same."""
    csv_skill(skill_folder)
    data = b"name,fare\n" + b"x,7.25\n" * 1000
    files.files["train.csv"] = data
    fs = make_flowfs(extra_args=[f"--skills={skill_folder.root}",
                                 "--fetch-allow-private"])
    assert json.loads(read_bytes(fs.mnt / ".flowfs" / "config"))["engine"] is None
    s = fs.mnt / "s"
    os.mkdir(s)
    bind_with(s, "stats", {"input": {"csv_file": f"{files.base}/file/train.csv"}})
    assert wait_fetch(s) == "fetch uploads/csv_file.csv: done: 0.0 MiB"
    assert files.hits == {"/file/train.csv": 1}
    assert read_bytes(s / "uploads" / "csv_file.csv") == data
    assert json.loads(read_bytes(s / "input.json")) == {
        "csv_file": str(s / "uploads" / "csv_file.csv")}
    assert status_of(s)[0][0] == "ready"
    # runs still need one
    assert write_line(s / "ctl", "run\n") == errno.EINVAL
    assert status_of(s)[1][-1] == (
        "ctl", "no engine is configured: start flowfs with --engine-url=URL")


@pytest.mark.parametrize("path,extra,line", [
    ("/file/missing.csv", (), "fetch uploads/csv_file.csv: failed: HTTP 404"),
    ("/redirect/6/a.csv", (), "fetch uploads/csv_file.csv: failed: more than 5 redirects"),
    ("/to-ftp", (), "fetch uploads/csv_file.csv: failed: redirected to a URL that is"
     " not http:// or https://"),
    ("/file/a.csv", ("--max-fetch=1K",),
     "fetch uploads/csv_file.csv: failed: larger than the limit of 1024 bytes (--max-fetch)"),
    ("/chunked/a.csv", ("--max-fetch=1K",),
     "fetch uploads/csv_file.csv: failed: larger than the limit of 1024 bytes (--max-fetch)"),
])
def test_failed_fetch_leaves_nothing(run_mount, skill_folder, files, path, extra, line):
    csv_skill(skill_folder)
    files.files["a.csv"] = b"a,b\n" * 2000
    fs = run_mount(*extra)
    s = fs.mnt / "s"
    os.mkdir(s)
    (s / "uploads" / "keep.txt").write_text("mine")
    bind_with(s, "stats", {"input": {"csv_file": files.base + path}})
    assert wait_fetch(s) == line
    assert status_of(s)[1] == [
        ("uploads/csv_file.csv", "fetch started"),
        ("uploads/csv_file.csv",
         "fetch " + line.removeprefix("fetch uploads/csv_file.csv: "))]
    assert os.listdir(s / "uploads") == ["keep.txt"]
    assert "missing required input files: csv_file" in status_of(s)[0]


def test_fetch_cancelled_and_runs_wait_for_it(run_mount, skill_folder, files, engine):
    csv_skill(skill_folder)
    files.files["big.csv"] = b"x" * 200000
    fs = run_mount()
    s = fs.mnt / "s"
    os.mkdir(s)
    bind_with(s, "stats", {"input": {"csv_file": f"{files.base}/slow/big.csv"}})
    # cancel while the transfer is under way, not before it starts
    wait_until(lambda: files.hits.get("/slow/big.csv"), "the request reaches the server")
    assert fetch_line(s).startswith("fetch uploads/csv_file.csv: fetching")
    assert write_line(s / "ctl", "run\n") == errno.EINVAL
    assert status_of(s)[1][-1][1].startswith("cannot run: missing required input files")
    assert write_line(s / "ctl", "cancel\n") == 0
    assert wait_fetch(s) == "fetch uploads/csv_file.csv: cancelled"
    assert status_of(s)[1] == [
        ("uploads/csv_file.csv", "fetch started"),
        ("ctl", "cannot run: missing required input files: csv_file"),
        ("uploads/csv_file.csv", "fetch cancelled")]
    assert os.listdir(s / "uploads") == []
    assert engine.requests == []


# -- more of the configuration and of experiments ----------------------------------

def test_key_file(make_flowfs, skill_folder, isolated_config, engine, tmp_path, monkeypatch):
    monkeypatch.delenv("FLOWFS_ENGINE_KEY", raising=False)
    report_skill(skill_folder)
    key_file = tmp_path / "key"
    key_file.write_text("sk-from-file\n")
    fs = make_flowfs(extra_args=[f"--skills={skill_folder.root}",
                                 f"--engine-url={engine.url}", f"--engine-key-file={key_file}"])
    s = fs.mnt / "s"
    os.mkdir(s)
    bind_with(s, "report")
    engine.reply(content='{"answer": 1}')
    assert write_line(s / "ctl", "run\n") == 0
    assert wait_run(s) == "run: done"
    assert engine.headers[0]["Authorization"] == "Bearer sk-from-file"
    assert engine.requests[0]["model"] == "default"


@pytest.mark.parametrize("args,message,status", [
    (["--engine-key-file=/nonexistent/key"],
     "flowfs: cannot read the engine key file /nonexistent/key: No such file or directory", 1),
    # a value an option cannot take: a usage error (test_security.py)
    (["--engine-url=ftp://127.0.0.1/"],
     "flowfs: --engine-url must be an http:// or https:// URL", 2),
    (["--engine-url=http://[::1/v1"], "flowfs: --engine-url is not a URL", 2),
    (["--max-fetch=lots"], "flowfs: --max-fetch takes a size such as 500M or 2G", 2),
])
def test_bad_engine_options_fail_before_mounting(tmp_path, args, message, status):
    from conftest import flowfs_bin
    mnt = tmp_path / "m"
    mnt.mkdir()
    r = subprocess.run([str(flowfs_bin()), f"--db={tmp_path}/x.db", *args, str(mnt)],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == status
    assert r.stderr.strip() == message
    assert not os.path.ismount(mnt)


def test_run_needs_required_parameters(run_mount, skill_folder, engine):
    skill_folder.add("divide", parameter={"type": "object", "properties": {
        "divisor": {"type": "integer"}}, "required": ["divisor"]})
    fs = run_mount()
    s = fs.mnt / "s"
    os.mkdir(s)
    bind_with(s, "divide")
    assert write_line(s / "ctl", "run\n") == errno.EINVAL
    assert status_of(s)[1][-1] == ("ctl", "cannot run: missing required parameters: divisor")
    assert engine.requests == []


def test_experiment_limits_and_failures(run_mount, engine):
    fs = run_mount("--allow-exec", "--exec-timeout=1")
    s = fs.mnt / "t"
    os.mkdir(s)
    science(s, 4)

    def step(code):
        return (f"<Inference>i</Inference><Hypothesis>h</Hypothesis><Model>m</Model>"
                f"<Experiment>{code}</Experiment>")
    engine.reply(content=ROUND1.replace("print(open('fares.txt').read().split()[0])",
                                        "while True: pass"))
    engine.reply(content=step("print('before'); raise ValueError('bad fare')"))
    # more than the 2 GiB of address space an experiment gets
    engine.reply(content=step("x = bytearray(3 * 1024 ** 3)"))
    engine.reply(content=ROUND3)
    assert write_line(s / "ctl", "run\n") == 0
    assert wait_run(s) == "run: done"
    rounds = [json.loads(read_bytes(s / "rounds" / f"{n}.json")) for n in (1, 2, 3)]
    assert rounds[0]["observation"] == "(stopped after 1 s)"
    # a failing experiment: stderr is the observation
    assert rounds[1]["observation"].startswith("Traceback (most recent call last):")
    assert rounds[1]["observation"].endswith("ValueError: bad fare")
    assert rounds[2]["observation"].endswith("MemoryError")


def test_experiments_see_large_uploads(run_mount, engine):
    """uploads/ is copied in slices: files over 64 MiB too, folders, links."""
    fs = run_mount("--allow-exec")
    s = fs.mnt / "t"
    os.mkdir(s)
    science(s, 1)
    size = 70 * 1024 * 1024 + 3
    with open(s / "uploads" / "big.bin", "wb") as f:
        f.write(b"\x01" * size)
    os.makedirs(s / "uploads" / "sub" / "deep")
    (s / "uploads" / "sub" / "deep" / "n.txt").write_text("nested")
    os.symlink("sub/deep/n.txt", s / "uploads" / "link")
    code = ("import os; print(os.path.getsize('big.bin'), open('link').read(),"
            " os.readlink('link'))")
    engine.reply(content=ROUND1.replace("print(open('fares.txt').read().split()[0])", code))
    assert write_line(s / "ctl", "run\n") == 0
    assert wait_run(s) == "run: done"
    observation = json.loads(read_bytes(s / "rounds" / "1.json"))["observation"]
    assert observation == f"{size} nested sub/deep/n.txt"


def test_a_newer_url_supersedes_a_fetch_going_on(run_mount, skill_folder, files):
    """request.json rewritten with another URL while the first is still
    coming: the first stops and stores nothing; the second lands, and the
    kernel sees the new file at once (the name was cached before)."""
    csv_skill(skill_folder)
    files.files["old.csv"] = b"o" * 300000
    files.files["new.csv"] = b"n,e,w\n"
    fs = run_mount()
    s = fs.mnt / "s"
    os.mkdir(s)
    bind_with(s, "stats", {"input": {"csv_file": f"{files.base}/file/new.csv"}})
    assert wait_fetch(s) == "fetch uploads/csv_file.csv: done: 0.0 MiB"
    assert read_bytes(s / "uploads" / "csv_file.csv") == b"n,e,w\n"
    # now a slow one, then back to a fast one before the slow one ends
    files.slow_seconds = 3.0
    assert put_json(s / "request.json",
                    {"input": {"csv_file": f"{files.base}/slow/old.csv"}}) == 0
    assert fetch_line(s).startswith("fetch uploads/csv_file.csv: fetching")
    # superseded while it comes, not before its request is sent
    wait_until(lambda: files.hits.get("/slow/old.csv"),
               "the request for /slow/old.csv reaches the server")
    files.files["new.csv"] = b"n,e,w,2\n"
    assert put_json(s / "request.json",
                    {"input": {"csv_file": f"{files.base}/file/new.csv"}}) == 0
    assert wait_fetch(s) == "fetch uploads/csv_file.csv: done: 0.0 MiB"
    assert read_bytes(s / "uploads" / "csv_file.csv") == b"n,e,w,2\n"
    # the slow one ends (stopped at its next progress report, long before
    # the server has sent it all): the server's handler sees the client go
    wait_until(lambda: "/slow/old.csv" in files.slow_ended,
               "the server's handler for /slow/old.csv returns")
    assert files.slow_ended["/slow/old.csv"] is True, \
        "the superseded fetch was not stopped: the server sent all of it"
    # nothing of it lands, and the line stays the new fetch's
    assert read_bytes(s / "uploads" / "csv_file.csv") == b"n,e,w,2\n"
    assert sorted(os.listdir(s / "uploads")) == ["csv_file.csv"]
    assert fetch_line(s) == "fetch uploads/csv_file.csv: done: 0.0 MiB"
    # (the connection closes before the fetch's thread has settled: after
    # a clean unmount, which waits for that thread, still nothing of it)
    fs.remount()
    assert read_bytes(s / "uploads" / "csv_file.csv") == b"n,e,w,2\n"
    assert sorted(os.listdir(s / "uploads")) == ["csv_file.csv"]
    assert fetch_line(s) == "fetch uploads/csv_file.csv: done: 0.0 MiB"


def test_url_removed_and_fetched_again(run_mount, skill_folder, files):
    csv_skill(skill_folder)
    files.files["a.csv"] = b"a\n"
    fs = run_mount()
    s = fs.mnt / "s"
    os.mkdir(s)
    url = f"{files.base}/file/a.csv"
    bind_with(s, "stats", {"input": {"csv_file": url}})
    assert wait_fetch(s) == "fetch uploads/csv_file.csv: done: 0.0 MiB"
    # the file removed: the same request fetches it again
    os.unlink(s / "uploads" / "csv_file.csv")
    assert put_json(s / "request.json", {"input": {"csv_file": url}}) == 0
    assert wait_fetch(s) == "fetch uploads/csv_file.csv: done: 0.0 MiB"
    assert read_bytes(s / "uploads" / "csv_file.csv") == b"a\n"
    assert files.hits[urllib.parse.urlparse(url).path] == 2
    # the URL no longer named: its line goes, the file stays (it is an upload)
    assert put_json(s / "request.json", {"input": {}}) == 0
    assert fetch_line(s) is None
    assert read_bytes(s / "uploads" / "csv_file.csv") == b"a\n"


@pytest.mark.parametrize("path,name", [
    ("/file/data.TSV", "tabs.TSV"),          # the URL's extension, allowed
    ("/file/download", "tabs.tsv"),          # none: the first allowed one
    ("/file/data.bin", "tabs.tsv"),          # not allowed: the first allowed one
])
def test_fetched_file_takes_the_name_that_binds(run_mount, skill_folder, files, path, name):
    skill_folder.add("tabs", input={"type": "object", "properties": {
        "tabs": {"type": "string", "extensions": ["tsv", ".csv"]}}, "required": ["tabs"]})
    files.files[path.rsplit("/", 1)[1]] = b"x\ty\n"
    fs = run_mount()
    s = fs.mnt / "s"
    os.mkdir(s)
    bind_with(s, "tabs", {"input": {"tabs": files.base + path}})
    assert wait_fetch(s) == f"fetch uploads/{name}: done: 0.0 MiB"
    assert os.listdir(s / "uploads") == [name]
    assert json.loads(read_bytes(s / "input.json")) == {"tabs": str(s / "uploads" / name)}


def test_nothing_of_a_fetch_shows_until_it_is_whole(run_mount, skill_folder, files):
    """Past its first 1 MiB slice a fetch is in the database, but not in
    uploads/; killed there, it leaves no file and no row."""
    csv_skill(skill_folder)
    files.files["big.csv"] = b"y" * (4 << 20)
    files.slow_seconds = 10.0
    fs = run_mount()
    s = fs.mnt / "s"
    os.mkdir(s)
    bind_with(s, "stats", {"input": {"csv_file": f"{files.base}/slow/big.csv"}})

    def got_mib():
        m = re.search(r": fetching: ([0-9.]+) MiB of", fetch_line(s) or "")
        return float(m.group(1)) if m else 0.0

    wait_until(lambda: got_mib() >= 1.5, "1.5 MiB of the fetch come")
    assert os.listdir(s / "uploads") == []
    fs.kill9_remount()
    assert os.listdir(s / "uploads") == []
    db = sqlite3.connect(f"file:{fs.db}?mode=ro", uri=True)
    try:
        assert db.execute("SELECT count(*) FROM inodes WHERE nlink = 0").fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM chunks WHERE ino NOT IN"
                          " (SELECT ino FROM inodes)").fetchone() == (0,)
    finally:
        db.close()


def test_a_fetch_cut_by_the_daemon_stopping_reads_failed(run_mount, skill_folder, files):
    csv_skill(skill_folder)
    files.files["big.csv"] = b"x" * 200000
    fs = run_mount()
    s = fs.mnt / "s"
    os.mkdir(s)
    bind_with(s, "stats", {"input": {"csv_file": f"{files.base}/slow/big.csv"}})
    assert fetch_line(s).startswith("fetch uploads/csv_file.csv: fetching")
    fs.kill9_remount()
    assert fetch_line(s) == "fetch uploads/csv_file.csv: failed: flowfs stopped during the fetch"
    assert os.listdir(s / "uploads") == []
