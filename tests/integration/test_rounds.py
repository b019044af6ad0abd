"""Issue 6: rounds/<n>.json and the transcripts generated from them
(output/summary.json, output/summary_readable.txt, the summary.json link)
through a real mount, with plain file I/O only (DESIGN §7, seed 004).

The expected transcripts come from the seed itself (its worked example,
its tag table and its verification snippet, read from ../shared/seeds/)
and from the Python reimplementation of the seed's assembly in
test_rounds_fidelity.py, compared with json.dumps byte for byte.
"""
import errno
import json
import os
import random
import re
import shutil
import subprocess

import pytest

from conftest import (REPO, dumps, expect, put, put_json, read_bytes,
                      readme_section, status_of, vim, wait_until, write_bytes)
from test_rounds_fidelity import python_render, random_run, transcript

SEED = REPO.parent / "shared" / "seeds" / "004_2a6ede36c8ed9259.txt"
TAGS = ("Phenomenon", "Hypothesis", "Model", "Experiment", "Observation",
        "Inference", "Conclusion")
FIRST = {"phenomenon": "P", "hypothesis": "H", "model": "M",
         "experiment": "print(1)", "observation": "1"}
NEXT = {"inference": "I", "hypothesis": "H", "model": "M",
        "experiment": "print(2)", "observation": "2"}
LAST = {"inference": "I", "conclusion": "C"}


@pytest.fixture
def run(flowfs):
    """A session bound to scientific-workflow, with its task given."""
    s = flowfs.mnt / "titanic"
    os.mkdir(s)
    doc = json.loads(read_bytes(s / "session.json"))
    doc["skill"] = "scientific-workflow"
    assert put_json(s / "session.json", doc) == 0
    assert put_json(s / "request.json", {"input": {
        "description": "任务描述", "io_instructions": "输出要求"}}) == 0
    return s


def write_rounds(s, rounds):
    for i, r in enumerate(rounds, 1):
        assert put_json(s / "rounds" / f"{i}.json", r) == 0, (i, status_of(s))


def summary(s):
    data = read_bytes(s / "output" / "summary.json")
    assert os.stat(s / "output" / "summary.json").st_size == len(data)
    return data


def assistant(s):
    return json.loads(summary(s))[1]["content"]


def concluded(n):
    """A concluded run of n >= 2 rounds with distinct texts."""
    rounds = [dict(FIRST, observation="O1")]
    for i in range(2, n):
        rounds.append(dict(NEXT, inference=f"I{i}", experiment=f"E{i}",
                           observation=f"O{i}"))
    rounds.append({"inference": f"I{n}", "conclusion": "C"})
    return rounds


# -- the seed's own example, table and check ---------------------------------

def seed_text():
    if not SEED.is_file():
        pytest.skip(f"{SEED} is absent")
    return SEED.read_text()


def seed_example():
    """The seed's worked example: (rounds, the assistant content)."""
    text = seed_text()
    content = re.search(r"```xml\n(.*?)\n```", text, re.S).group(1)
    blocks = re.findall(r"<(\w+)>\n(.*?)\n</\1>", content, re.S)
    assert "\n\n".join(f"<{t}>\n{v}\n</{t}>" for t, v in blocks) == content
    rounds, current = [], None
    for tag, value in blocks:
        if tag in ("Phenomenon", "Inference"):
            current = {}
            rounds.append(current)
        current[tag.lower()] = value
    return rounds, content


def seed_check():
    """The seed's verification snippet, as written there."""
    code = re.search(r"## 验证要点.*?```python\n(.*?)```", seed_text(),
                     re.S).group(1)
    assert "summary.json" in code and "assert" in code
    return code


def test_seed_example_reads_back_as_the_seed_shows_it(run, monkeypatch):
    rounds, content = seed_example()
    assert len(rounds) == 3
    write_rounds(run, rounds)
    assert summary(run) == dumps([
        {"role": "user", "content": "任务描述\n\nI/O Requirements:\n输出要求"},
        {"role": "assistant", "content": content}]).encode()
    # the snippet opens summary.json where it runs: the session folder's link
    monkeypatch.chdir(run)
    assert os.readlink("summary.json") == "output/summary.json"
    exec(seed_check(), {})


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_tag_counts_follow_the_seed_table(run, monkeypatch, n):
    write_rounds(run, concluded(n))
    content = assistant(run)
    table = {"Phenomenon": 1, "Hypothesis": n - 1, "Model": n - 1,
             "Experiment": n - 1, "Observation": n, "Inference": n - 1,
             "Conclusion": 1}
    assert {t: content.count(f"<{t}>") for t in TAGS} == table
    assert {t: content.count(f"</{t}>") for t in TAGS} == table
    # the final Observation repeats the last one observed
    assert content.endswith(f"<Observation>\nO{n - 1}\n</Observation>")
    monkeypatch.chdir(run)
    if n >= 3:
        exec(seed_check(), {})
    else:
        # the table gives N = 2 one Experiment; the snippet wants two
        with pytest.raises(AssertionError, match="Experiment"):
            exec(seed_check(), {})


def test_one_round_is_one_observed_experiment(run):
    """N = 1 (the table's row contradicts itself): the round's own
    experiment and its observation, once each, no conclusion."""
    write_rounds(run, [FIRST])
    content = assistant(run)
    assert {t: content.count(f"<{t}>") for t in TAGS} == {
        "Phenomenon": 1, "Hypothesis": 1, "Model": 1, "Experiment": 1,
        "Observation": 1, "Inference": 0, "Conclusion": 0}


# -- byte fidelity and the transcript so far ------------------------------------

def test_random_runs_are_json_dumps_byte_for_byte(flowfs):
    rng = random.Random(6006)
    for k in range(12):
        case = random_run(rng)
        s = flowfs.mnt / f"r{k}"
        os.mkdir(s)
        assert put(s / "session.json", json.dumps({"skill": "scientific-workflow"})) == 0
        assert put_json(s / "request.json", {"input": {
            "description": case["description"],
            "io_instructions": case["io_instructions"]}}) == 0
        write_rounds(s, case["rounds"])
        expected, readable = python_render(case)
        assert summary(s) == expected.encode(), case
        assert read_bytes(s / "output" / "summary_readable.txt") == readable.encode()
        assert read_bytes(s / "summary.json") == expected.encode()


def test_transcript_so_far(run):
    user = "任务描述\n\nI/O Requirements:\n输出要求"
    assert json.loads(summary(run)) == [
        {"role": "user", "content": user}, {"role": "assistant", "content": ""}]
    steps = [[dict(FIRST, observation=None)], [FIRST], [FIRST, dict(NEXT, observation=None)],
             [FIRST, NEXT], [FIRST, NEXT, LAST]]
    for rounds in steps:
        stored = [{k: v for k, v in r.items() if v is not None} for r in rounds]
        write_rounds(run, stored)
        assert assistant(run) == transcript(stored)
    assert assistant(run).endswith("<Conclusion>\nC\n</Conclusion>\n\n"
                                   "<Observation>\n2\n</Observation>")


def test_readable_layout(run):
    write_rounds(run, [FIRST, LAST])
    text = read_bytes(run / "output" / "summary_readable.txt").decode()
    rule = "=" * 80
    assert text == (f"=== USER ===\n任务描述\n\nI/O Requirements:\n输出要求\n\n{rule}\n\n"
                    f"=== ASSISTANT ===\n{assistant(run)}\n\n{rule}\n\n")


def test_io_instructions_may_be_left_out(run):
    assert put_json(run / "request.json", {"input": {"description": "d"}}) == 0
    write_rounds(run, [FIRST])
    assert json.loads(summary(run))[0]["content"] == "d\n\nI/O Requirements:\n"


def test_written_rounds_read_back_in_the_json_layout(run):
    raw = b'{"phenomenon":"P","hypothesis":"H","model":"M","experiment":"E"}'
    assert put(run / "rounds" / "1.json", raw) == 0
    assert read_bytes(run / "rounds" / "1.json") == dumps(json.loads(raw)).encode()
    assert os.stat(run / "rounds" / "1.json").st_size == len(dumps(json.loads(raw)).encode())
    assert sorted(os.listdir(run / "rounds")) == ["1.json"]


# -- refusals ------------------------------------------------------------------

REFUSALS = [
    ([FIRST], 2, {"hypothesis": "H", "model": "M", "experiment": "E"},
     "rounds/2.json", 'a round after the first needs "inference"'),
    ([], 1, dict(FIRST, inference="I"), "rounds/1.json",
     'the first round has no "inference": nothing was observed before it'),
    ([FIRST], 2, dict(NEXT, phenomenon="P"), "rounds/2.json",
     'only the first round has a "phenomenon"'),
    ([], 1, dict(FIRST, result="r"), "rounds/1.json", None),
    ([FIRST, LAST], 3, NEXT, "rounds/3.json", None),
    ([dict(FIRST, observation=None)], 2, NEXT, "rounds/2.json", None),
]


@pytest.mark.parametrize("before,n,doc,path,message", REFUSALS)
def test_refusals_keep_what_was_there(run, before, n, doc, path, message):
    write_rounds(run, [{k: v for k, v in r.items() if v is not None} for r in before])
    listing = sorted(os.listdir(run / "rounds"))
    previous = summary(run)
    assert put_json(run / "rounds" / f"{n}.json", doc) == errno.EINVAL
    problems, log = status_of(run)
    # the refused round is named until one is written well (issue 29)
    assert problems == [f"{path}: your last write was refused: {log[-1][1]};"
                        f" the file {'was not made' if n > len(before) else 'still holds the earlier version'}"]
    assert log[-1][0] == path
    if message:
        assert log[-1][1] == message
    # the message names no file twice
    assert not log[-1][1].startswith(path)
    assert sorted(os.listdir(run / "rounds")) == listing
    assert summary(run) == previous


def test_refusal_messages_name_the_round_at_fault(run):
    write_rounds(run, [FIRST, NEXT, NEXT])
    # a conclusion before the last round
    assert put_json(run / "rounds" / "2.json", LAST) == errno.EINVAL
    assert status_of(run)[1][-1] == (
        "rounds/2.json", "only the last round may conclude; rounds/3.json follows it")
    # adding a round after a concluding one
    os.unlink(run / "rounds" / "3.json")
    assert put_json(run / "rounds" / "2.json", LAST) == 0
    assert put_json(run / "rounds" / "3.json", NEXT) == errno.EINVAL
    path, message = status_of(run)[1][-1]
    assert path == "rounds/3.json" and message.startswith("rounds/2.json: ")
    # not JSON: line and column
    assert put(run / "rounds" / "3.json", b'{"inference": ') == errno.EINVAL
    assert re.match(r"line 1, column \d+: ", status_of(run)[1][-1][1])


def test_refused_create_leaves_no_file(run):
    fd = os.open(run / "rounds" / "1.json", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    # listed, empty, while it is being written
    assert os.listdir(run / "rounds") == ["1.json"]
    assert os.stat(run / "rounds" / "1.json").st_size == 0
    os.write(fd, b'{"inference": "I"}')
    expect(errno.EINVAL, os.close, fd)
    # a refusal is final: the draft is gone when close() returns
    assert os.listdir(run / "rounds") == []
    expect(errno.ENOENT, os.stat, run / "rounds" / "1.json")
    # an abandoned create goes at release, which the kernel sends after
    # close() has returned: wait for it
    os.close(os.open(run / "rounds" / "1.json", os.O_WRONLY | os.O_CREAT, 0o644))
    wait_until(lambda: os.listdir(run / "rounds") == [], "abandoned draft gone")


def test_names_that_are_no_round_are_scratch_files(run):
    for name in ("0.json", "01.json", "1001.json", "x.json", "1.json.swp", "notes"):
        p = run / "rounds" / name
        p.write_bytes(b"anything")
        assert p.read_bytes() == b"anything"
    assert summary(run)  # no round among them
    assert json.loads(summary(run))[1]["content"] == ""
    expect(errno.EINVAL, os.mkdir, run / "rounds" / "2.json")


# -- deleting, renaming, editors -----------------------------------------------

def test_a_gap_hides_the_transcript_and_says_why(run):
    write_rounds(run, [FIRST, NEXT, LAST])
    os.unlink(run / "rounds" / "2.json")
    problems, _ = status_of(run)
    assert problems == ["rounds/2.json is missing: rounds are numbered from 1 "
                        "without gaps (rounds/3.json exists)"]
    expect(errno.ENOENT, os.stat, run / "output" / "summary.json")
    expect(errno.ENOENT, os.stat, run / "output" / "summary_readable.txt")
    expect(errno.ENOENT, os.lstat, run / "summary.json")
    assert "summary.json" not in os.listdir(run)
    assert sorted(os.listdir(run / "output")) == [".manifest.json"]
    assert put_json(run / "rounds" / "2.json", NEXT) == 0
    assert status_of(run)[0] == ["ready"]
    assert assistant(run) == transcript([FIRST, NEXT, LAST])
    assert "summary.json" in os.listdir(run)


def test_late_close_of_a_removed_round_keeps_the_new_one(run):
    """The kernel sends RELEASE asynchronously: the last close of an
    earlier 2.json can come after 2.json was removed and created again.
    It must not drop the new file (a script's write, rm, write loop)."""
    write_rounds(run, [FIRST])
    path = run / "rounds" / "2.json"
    old = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(old, json.dumps(NEXT).encode())
        os.fsync(old)                      # stored
        os.unlink(path)
        new = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    finally:
        os.close(old)                      # the earlier file's last close
    try:
        assert os.stat(path).st_size == 0  # the new file, still empty
        os.write(new, json.dumps(LAST).encode())
    finally:
        os.close(new)
    assert json.loads(read_bytes(path)) == LAST
    assert status_of(run)[0] == ["ready"]
    # The old handle's RELEASE may not have been handled yet.  A create
    # closed without a write goes when its own release comes, which the
    # kernel sends after the earlier ones: once that sentinel is gone, the
    # late release has been sent (and, unless the daemon's threads reorder
    # it, handled), so look at the new file again.
    sentinel = run / "rounds" / "999.json"
    os.close(os.open(sentinel, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
    wait_until(lambda: not os.path.lexists(sentinel),
               "the unwritten rounds/999.json goes at its release")
    assert sorted(os.listdir(run / "rounds")) == ["1.json", "2.json"]
    assert json.loads(read_bytes(path)) == LAST
    assert status_of(run)[0] == ["ready"]
    assert assistant(run) == transcript([FIRST, LAST])


def test_removing_the_last_round_keeps_the_rest(run):
    write_rounds(run, [FIRST, NEXT, LAST])
    os.unlink(run / "rounds" / "3.json")
    assert status_of(run)[0] == ["ready"]
    assert assistant(run) == transcript([FIRST, NEXT])
    shutil.rmtree(run / "rounds")
    assert os.path.isdir(run / "rounds") and os.listdir(run / "rounds") == []
    assert assistant(run) == ""


def test_rounds_come_in_any_order(run):
    """A copy of a session comes back in any order (rsync sorts 10.json
    before 2.json): a round above a gap is taken, the gap is a problem in
    status until it is filled, and then the transcript is there."""
    write_rounds(run, [FIRST, NEXT, LAST])
    want = summary(run)
    shutil.rmtree(run / "rounds")
    for n, doc, first_missing in ((3, LAST, 1), (1, FIRST, 2)):
        assert put_json(run / "rounds" / f"{n}.json", doc) == 0
        assert status_of(run)[0] == [
            f"rounds/{first_missing}.json is missing: rounds are numbered"
            " from 1 without gaps (rounds/3.json exists)"]
        expect(errno.ENOENT, os.stat, run / "output" / "summary.json")
    assert put_json(run / "rounds" / "2.json", NEXT) == 0
    assert status_of(run)[0] == ["ready"]
    assert summary(run) == want


def test_rename(run):
    write_rounds(run, [FIRST, NEXT])
    # moving the last round up leaves a gap, as a deletion would
    os.rename(run / "rounds" / "2.json", run / "rounds" / "3.json")
    assert status_of(run)[0][0] == ("rounds/2.json is missing: rounds are"
                                    " numbered from 1 without gaps"
                                    " (rounds/3.json exists)")
    os.rename(run / "rounds" / "3.json", run / "rounds" / "2.json")
    assert sorted(os.listdir(run / "rounds")) == ["1.json", "2.json"]
    # a scratch file renamed onto a round stores it (an editor's save)
    scratch = run / "rounds" / ".2.json.tmp"
    scratch.write_text(json.dumps(LAST))
    os.rename(scratch, run / "rounds" / "2.json")
    assert sorted(os.listdir(run / "rounds")) == ["1.json", "2.json"]
    assert json.loads(read_bytes(run / "rounds" / "2.json")) == LAST
    # a round renamed away leaves a copy and stays (an editor's backup)
    os.rename(run / "rounds" / "2.json", run / "rounds" / "2.json~")
    assert json.loads(read_bytes(run / "rounds" / "2.json~")) == LAST
    assert json.loads(read_bytes(run / "rounds" / "2.json")) == LAST
    # onto another session's rounds: not across sessions
    os.mkdir(run.parent / "other")
    expect(errno.EXDEV, os.rename, run / "rounds" / "2.json",
           run.parent / "other" / "rounds" / "1.json")


def test_a_move_that_leaves_no_gap_moves_the_round(run):
    """README: `mv rounds/3.json rounds/2.json` moves a round when the
    result has no gap: into a gap, and over the round that was there."""
    write_rounds(run, [FIRST, NEXT, LAST])
    os.unlink(run / "rounds" / "2.json")
    assert status_of(run)[0][0].startswith("rounds/2.json is missing")
    # into the gap: rounds 1 and 2, the second the old third
    os.rename(run / "rounds" / "3.json", run / "rounds" / "2.json")
    assert sorted(os.listdir(run / "rounds")) == ["1.json", "2.json"]
    assert read_bytes(run / "rounds" / "2.json") == dumps(LAST).encode()
    expect(errno.ENOENT, os.stat, run / "rounds" / "3.json")
    assert status_of(run) == (["ready"], [])
    assert assistant(run) == transcript([FIRST, LAST])
    # over an existing round: 3 replaces 2, and 3 is gone
    assert put_json(run / "rounds" / "2.json", NEXT) == 0
    assert put_json(run / "rounds" / "3.json", LAST) == 0
    assert assistant(run) == transcript([FIRST, NEXT, LAST])
    os.rename(run / "rounds" / "3.json", run / "rounds" / "2.json")
    assert sorted(os.listdir(run / "rounds")) == ["1.json", "2.json"]
    assert json.loads(read_bytes(run / "rounds" / "2.json")) == LAST
    assert status_of(run) == (["ready"], [])
    assert assistant(run) == transcript([FIRST, LAST])
    assert read_bytes(run / "summary.json") == summary(run)


def test_null_counts_as_absent(run):
    """README: `null` counts as absent.  A null tag is kept as written but
    is no tag: not refused where the tag would be, not in the
    transcript, and no observation where one is needed."""
    # round 1 may have no "inference" and may leave its observation out
    doc1 = dict(FIRST, observation=None, inference=None)
    assert put_json(run / "rounds" / "1.json", doc1) == 0
    assert read_bytes(run / "rounds" / "1.json") == dumps(doc1).encode()
    without = {k: v for k, v in FIRST.items() if k != "observation"}
    assert status_of(run) == (["ready"], [])
    assert assistant(run) == transcript([without])
    assert "null" not in summary(run).decode()
    # a null observation is no observation: round 2 cannot follow it
    assert put_json(run / "rounds" / "2.json", NEXT) == errno.EINVAL
    assert status_of(run)[1][-1] == (
        "rounds/2.json", 'rounds/1.json: a round followed by another needs the'
        ' "observation" of its experiment')
    assert sorted(os.listdir(run / "rounds")) == ["1.json"]
    # tags a later round may not have, given as null, are not there
    assert put_json(run / "rounds" / "1.json", dict(FIRST, inference=None)) == 0
    doc2 = dict(NEXT, phenomenon=None, conclusion=None)
    assert put_json(run / "rounds" / "2.json", doc2) == 0
    assert read_bytes(run / "rounds" / "2.json") == dumps(doc2).encode()
    # a concluding round's null observation: the previous one is repeated
    assert put_json(run / "rounds" / "3.json",
                    dict(LAST, observation=None, hypothesis=None)) == 0
    assert status_of(run)[0] == ["ready"]
    assert assistant(run) == transcript([FIRST, NEXT, LAST])
    assert assistant(run).endswith("<Observation>\n2\n</Observation>")
    # but a null "inference" is a missing one
    assert put_json(run / "rounds" / "3.json", dict(LAST, inference=None)) \
        == errno.EINVAL
    assert status_of(run)[1][-1] == (
        "rounds/3.json", 'a round after the first needs "inference"')


def test_editors(run):
    write_rounds(run, [FIRST, LAST])
    p = run / "rounds" / "2.json"
    r = vim(p, '%s/"C"/"Saved"/', setting="backup")
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert json.loads(read_bytes(p))["conclusion"] == "Saved"
    subprocess.run(["sed", "-i", "s/Saved/Done/", str(p)], check=True, timeout=30)
    assert json.loads(read_bytes(p))["conclusion"] == "Done"
    assert assistant(run).endswith("<Conclusion>\nDone\n</Conclusion>\n\n"
                                   "<Observation>\n1\n</Observation>")
    assert sorted(n for n in os.listdir(run / "rounds") if n.endswith(".json")) == [
        "1.json", "2.json"]


# -- the link, times, other sessions, persistence ----------------------------

def test_link_only_where_the_transcript_is(flowfs, run):
    plain = flowfs.mnt / "plain"
    os.mkdir(plain)
    write_rounds(plain, [FIRST])
    assert "summary.json" not in os.listdir(plain)
    assert "summary.json" not in os.listdir(plain / "output")
    expect(errno.ENOENT, os.lstat, plain / "summary.json")
    # the task is required: no transcript without it
    assert put_json(run / "request.json", {"input": {}}) == 0
    assert status_of(run)[0] == ["missing required inputs: description"]
    expect(errno.ENOENT, os.lstat, run / "summary.json")
    assert put_json(run / "request.json", {"input": {"description": "d"}}) == 0
    st = os.lstat(run / "summary.json")
    assert st.st_size == len("output/summary.json")
    assert os.readlink(run / "summary.json") == "output/summary.json"
    assert read_bytes(run / "summary.json") == summary(run)
    # the link is the session's: it cannot be renamed, what is written to
    # the file is dropped, and removing it changes nothing (but for the
    # process that removed it, which finds it gone)
    expect(errno.EPERM, os.rename, run / "summary.json", run / "s.json")
    before = summary(run)
    write_bytes(run / "output" / "summary.json", b"[]")
    assert summary(run) == before
    os.unlink(run / "summary.json")
    expect(errno.ENOENT, os.lstat, run / "summary.json")
    r = subprocess.run(["readlink", str(run / "summary.json")],
                       capture_output=True, text=True)
    assert r.stdout == "output/summary.json\n"


def test_summary_time_follows_the_rounds(run):
    write_rounds(run, [FIRST])
    t1 = os.stat(run / "output" / "summary.json").st_mtime_ns
    assert put_json(run / "rounds" / "2.json", LAST) == 0
    t2 = os.stat(run / "output" / "summary.json").st_mtime_ns
    assert t2 > t1
    os.unlink(run / "rounds" / "2.json")
    assert os.stat(run / "output" / "summary.json").st_mtime_ns > t2


def test_rounds_survive_a_remount_and_count_as_data(flowfs, run):
    write_rounds(run, [FIRST, NEXT, LAST])
    before = summary(run)
    # a create a crash would interrupt leaves no draft behind
    fd = os.open(run / "rounds" / "4.json", os.O_WRONLY | os.O_CREAT, 0o644)
    flowfs.kill9_remount()
    try:
        os.close(fd)
    except OSError:
        pass
    assert sorted(os.listdir(run / "rounds")) == ["1.json", "2.json", "3.json"]
    assert summary(run) == before
    expect(errno.ENOTEMPTY, os.rmdir, run)
    shutil.rmtree(run)
    assert not os.path.exists(run)


# -- the README's example, run as written -----------------------------------

def test_readme_titanic_example(flowfs):
    section = readme_section("Scientific rounds")
    example = section[section.index("### The Titanic example"):]
    script, printed, check = re.findall(r"```(?:sh|json)\n(.*?)```", example, re.S)
    assert script.startswith("cd mnt && ")
    r = subprocess.run(["bash", "-e", "-c", script.replace("cd mnt", f"cd {flowfs.mnt}", 1)],
                       capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode() == printed.rstrip("\n")
    s = flowfs.mnt / "fare"
    r = subprocess.run(["/usr/bin/python3", "-c", check.split('"', 1)[1].rsplit('"', 1)[0]],
                       cwd=s, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    # the status lines the README shows, made the way it describes
    assert put_json(s / "rounds" / "4.json", {"inference": "再算一次", "hypothesis": "h",
                                              "model": "m", "experiment": "e"}) == errno.EINVAL
    os.unlink(s / "rounds" / "2.json")
    assert put_json(s / "rounds" / "2.json", {"hypothesis": "h", "model": "m",
                                              "experiment": "e", "observation": "o"}) == errno.EINVAL
    assert put_json(s / "rounds" / "1.json", dict(FIRST, inference="i")) == errno.EINVAL
    shown = re.search(r"```\n(rounds/.*?)```", section, re.S).group(1).splitlines()
    # status's lines, then the log's (which start with their time)
    stamped = [l for l in shown if re.match(r"\d{4}-\d\d-\d\dT", l)]
    problems, log = status_of(s)
    assert problems == shown[:len(shown) - len(stamped)]
    assert [f"{p}: {m}" for p, m in log[-3:]] == [l.split(" ", 1)[1] for l in stamped]
