"""context.json and context.txt (issue 6, DESIGN.md §7, seed 003) through the
mount, with plain file I/O only.

Expected bytes are Python's json.dumps (indent=2, ensure_ascii=False) of the
document as written (json.loads keeps the key order), and the refusals are
the seed's rules: at most 3 phases, at most 8 tasks per phase, a task's tool
one of file_operations / search_code / run_terminal (never judge or think),
ids unique, dependencies on tasks of the same phase.
"""

import copy
import errno
import json
import os
import time
import unicodedata

import pytest

from conftest import dumps, errname, put, read_bytes, status_of

NO_CONTEXT = "No structured context yet: write one to context.json.\n"


def task(id, tool="run_terminal", deps=(), title=None):
    return {"id": id, "title": title or f"task {id}",
            "description": f"do step {id}", "tool": tool,
            "arguments": {"command": f"echo {id}"}, "priority": 1,
            "dependencies": list(deps)}


def context_doc():
    """A context like the seed's MessageManager writes: two phases, the
    first judged, the second still being planned."""
    return {
        "id": "msg_1732000000",
        "timestamp": 1732000000.5,
        "architecture": "request-phase-task",
        "request": {"original_input": "分析 Titanic 数据集并训练模型",
                    "core_goal": "Predict survival",
                    "requirements": ["clean the data", "report accuracy"],
                    "constraints": []},
        "phases": [
            {"id": 1, "name": "Explore", "goal": "understand the data",
             "rounds": [{
                 "round_id": 1,
                 "plan": {"tasks": [task(1, "search_code"),
                                    task(2, deps=[1])],
                          "reasoning": "look before cleaning"},
                 "executions": [{"task_id": 1, "tool": "search_code",
                                 "arguments": {"q": "csv"},
                                 "result": {"ok": True}, "timestamp": 1.0}],
                 "judge": {"phase_completed": True,
                           "task_evaluation": [
                               {"task_id": 1, "status": "done",
                                "quality_score": 9.2, "output_valid": True,
                                "notes": "fine"}],
                           "decision": {"action": "next_phase",
                                        "reason": "data understood"},
                           "phase_metrics": {"completion_rate": 1,
                                             "quality_average": 9.2},
                           "summary": "explored"}}],
             "status": "done", "summary": "891 rows"},
            {"id": 2, "name": "Model", "goal": "",
             "rounds": [{"round_id": 1,
                         "plan": {"tasks": [task(1, "file_operations")],
                                  "reasoning": ""}}],
             "status": "running", "summary": None},
        ],
        "summary": None,
    }


def context_log(session):
    return [m for p, m in status_of(session)[1] if p == "context.json"]


def test_empty_until_written(session):
    assert read_bytes(session / "context.json") == b"null"
    assert os.stat(session / "context.json").st_size == 4
    assert read_bytes(session / "context.txt") == NO_CONTEXT.encode()
    assert os.stat(session / "context.txt").st_size == len(NO_CONTEXT.encode())


def test_written_document_reads_back_as_json_dumps(flowfs, session):
    doc = context_doc()
    # written compactly: flowfs shows it the way every document is shown
    text = json.dumps(doc, separators=(",", ":"))
    assert put(session / "context.json", text) == 0
    want = dumps(json.loads(text)).encode()
    assert read_bytes(session / "context.json") == want
    assert os.stat(session / "context.json").st_size == len(want)
    flowfs.remount()
    assert read_bytes(session / "context.json") == want
    assert context_log(session) == []


def test_key_order_is_kept(session):
    doc = context_doc()
    reordered = {k: doc[k] for k in reversed(list(doc))}
    assert put(session / "context.json", json.dumps(reordered)) == 0
    assert read_bytes(session / "context.json") == dumps(reordered).encode()


def test_context_txt_follows_the_document(session):
    assert put(session / "context.json", json.dumps(context_doc())) == 0
    text = read_bytes(session / "context.txt").decode()
    assert os.stat(session / "context.txt").st_size == len(text.encode())
    lines = text.splitlines()
    assert lines[0] == "Context msg_1732000000 (request-phase-task)"
    assert "Goal: Predict survival" in lines
    assert "Input: 分析 Titanic 数据集并训练模型" in lines
    assert lines[3:7] == ["Requirements:", "  - clean the data",
                          "  - report accuracy", "Constraints: (none)"]
    assert "Phases: 2 of at most 3" in lines
    assert ("  Round 1: plan 2 tasks, execute 1 call, judge 1 evaluation"
            in lines)
    assert "  Round 1: plan 1 task, execute 0 calls, judge pending" in lines
    assert "    Completion rate 1, quality average 9.2" in lines
    assert "    Judge: explored" in lines
    assert "  Summary: 891 rows" in lines
    assert "Phase 1: Explore (done)" in lines
    assert "Phase 2: Model (running)" in lines
    assert "    - Task 2: task 2 [run_terminal] (after 1)" in lines
    assert "    Decision: next_phase — data understood" in lines
    assert lines[-1] == "Summary: (none)"
    assert all(ln == ln.rstrip() for ln in lines)
    assert text.endswith("\n")


def columns(line):
    """A line's display width: East Asian wide and fullwidth characters
    take two columns."""
    return sum(2 if unicodedata.east_asian_width(c) in ("W", "F") else 1
               for c in line)


def block(lines, first):
    """The line starting with `first` and the continuation lines after
    it (indented 4 more), without the label and the indent."""
    return [text for _, text in block_lines(lines, first)]


def block_lines(lines, first):
    """block(), as (whole line, its text) pairs."""
    i = next(n for n, ln in enumerate(lines) if ln.startswith(first))
    indent = len(first) - len(first.lstrip(" ")) + 4
    out = [(lines[i], lines[i][len(first):])]
    for ln in lines[i + 1:]:
        if not ln.startswith(" " * indent) or ln[indent] == " ":
            break
        out.append((ln, ln[indent:]))
    return out


def test_context_txt_is_wrapped_at_100_columns(session):
    """README: context.txt is wrapped at 100 columns (CJK characters take
    two).  Long texts are broken between words (and between wide
    characters), never cut."""
    words = " ".join(f"word{i:03d}" for i in range(60))
    cjk = "泰坦尼克号数据集的平均票价是多少" * 12
    mixed = "清洗数据 clean the data，然后报告模型的准确率 and its recall " * 8
    doc = context_doc()
    doc["request"]["core_goal"] = words
    doc["request"]["original_input"] = cjk
    doc["request"]["requirements"] = [mixed]
    doc["phases"][0]["goal"] = mixed
    doc["phases"][0]["summary"] = cjk + " " + words
    round1 = doc["phases"][0]["rounds"][0]
    round1["plan"]["tasks"][0]["title"] = words
    round1["plan"]["reasoning"] = cjk
    round1["judge"]["decision"]["reason"] = mixed
    round1["judge"]["summary"] = words
    doc["summary"] = words + " " + cjk
    assert put(session / "context.json", json.dumps(doc)) == 0
    text = read_bytes(session / "context.txt").decode()
    assert os.stat(session / "context.txt").st_size == len(text.encode())
    lines = text.splitlines()
    too_wide = [(columns(ln), ln) for ln in lines if columns(ln) > 100]
    assert too_wide == []
    # wrapped, not cut: the texts read back whole from their blocks
    goal = block(lines, "Goal: ")
    assert len(goal) > 1 and " ".join(goal) == words
    assert "".join(block(lines, "Input: ")) == cjk
    summary = block(lines, "Summary: ")
    assert "".join(summary).replace(" ", "") == (words + cjk).replace(" ", "")
    assert "".join(block(lines, "    Reasoning: ")) == cjk
    # and filled: a line is broken only where the next word would not fit
    goal = block_lines(lines, "Goal: ")
    for (a, _), (_, b) in zip(goal, goal[1:]):
        assert columns(a) + 1 + columns(b.split(" ")[0]) > 100, (a, b)
    cjk_lines = [ln for ln, _ in block_lines(lines, "Input: ")]
    assert len(cjk_lines) > 1
    assert all(columns(ln) > 100 - 2 for ln in cjk_lines[:-1]), cjk_lines


def test_context_txt_cuts_what_no_line_holds(session):
    """A word longer than a line (a URL) is cut where the line ends, and
    emoji take two columns (Python's east_asian_width says W)."""
    url = "https://example.org/" + "a" * 170
    rockets = "\U0001F680" * 70
    doc = context_doc()
    doc["request"]["core_goal"] = "see " + url
    doc["summary"] = rockets
    assert put(session / "context.json", json.dumps(doc)) == 0
    lines = read_bytes(session / "context.txt").decode().splitlines()
    assert [(columns(ln), ln) for ln in lines if columns(ln) > 100] == []
    assert "".join(block(lines, "Goal: ")) == "see" + url
    assert "".join(block(lines, "Summary: ")) == rockets
    assert len(block(lines, "Summary: ")) == 2


def test_null_clears(session):
    assert put(session / "context.json", json.dumps(context_doc())) == 0
    assert put(session / "context.json", "null") == 0
    assert read_bytes(session / "context.json") == b"null"
    assert read_bytes(session / "context.txt") == NO_CONTEXT.encode()


def _too_many_phases(d):
    extra = copy.deepcopy(d["phases"][1])
    for i in (3, 4):
        extra = copy.deepcopy(extra)
        extra["id"] = i
        d["phases"].append(extra)


def _too_many_tasks(d):
    tasks = d["phases"][1]["rounds"][0]["plan"]["tasks"]
    tasks[:] = [task(i) for i in range(1, 10)]


def _nine_over_two_rounds(d):
    rounds = d["phases"][1]["rounds"]
    rounds[0]["plan"]["tasks"] = [task(i) for i in range(1, 6)]
    rounds.append({"round_id": 2, "plan": {"tasks": [
        task(i) for i in range(6, 10)]}})


def _tool(name):
    def f(d):
        d["phases"][0]["rounds"][0]["plan"]["tasks"][0]["tool"] = name
    return f


def _dup_task(d):
    d["phases"][0]["rounds"][0]["plan"]["tasks"][1]["id"] = 1


def _dup_phase(d):
    d["phases"][1]["id"] = 1


def _unknown_dep(d):
    d["phases"][0]["rounds"][0]["plan"]["tasks"][1]["dependencies"] = [7]


def _self_dep(d):
    d["phases"][0]["rounds"][0]["plan"]["tasks"][1]["dependencies"] = [2]


def _architecture(d):
    d["architecture"] = "flat"


def _unknown_field(d):
    d["colour"] = "red"


def _missing_phases(d):
    del d["phases"]


TOOL_PATH = "phases[0].rounds[0].plan.tasks[0].tool"
ALLOWED = "(a task's tool must be file_operations, search_code or run_terminal)"

# kind: (mutation, the whole message flowfs must give)
BAD = {
    "four-phases": (_too_many_phases,
                    "phases: 4 phases: at most 3 are allowed"),
    "nine-tasks": (_too_many_tasks,
                   "phases[1].rounds[0].plan.tasks[8]: the phase's task "
                   "number 9: a phase has at most 8 tasks (counted over the "
                   "plans of all its rounds)"),
    "nine-tasks-over-rounds": (_nine_over_two_rounds,
                               "phases[1].rounds[1].plan.tasks[3]: the "
                               "phase's task number 9: a phase has at most 8 "
                               "tasks (counted over the plans of all its "
                               "rounds)"),
    "tool-judge": (_tool("Judge"),
                   f'{TOOL_PATH}: "Judge" is not allowed {ALLOWED}'),
    "tool-judge_tasks": (_tool("judge_tasks"),
                         f'{TOOL_PATH}: "judge_tasks" is not allowed '
                         f'{ALLOWED}'),
    "tool-JUDGE_TASKS": (_tool("JUDGE_TASKS"),
                         f'{TOOL_PATH}: "JUDGE_TASKS" is not allowed '
                         f'{ALLOWED}'),
    "tool-think": (_tool("think"),
                   f'{TOOL_PATH}: "think" is not allowed {ALLOWED}'),
    "tool-THINK": (_tool("THINK"),
                   f'{TOOL_PATH}: "THINK" is not allowed {ALLOWED}'),
    "tool-unknown": (_tool("browser"), None),
    "duplicate-task": (_dup_task, None),
    "duplicate-phase": (_dup_phase, None),
    "unknown-dependency": (_unknown_dep,
                           "phases[0].rounds[0].plan.tasks[1]"
                           ".dependencies[0]: task 7 is not a task of "
                           "phase 1"),
    "self-dependency": (_self_dep, None),
    "architecture": (_architecture, None),
    "unknown-field": (_unknown_field, None),
    "missing-phases": (_missing_phases, None),
}

# where the message of the others must start
WHERE = {
    "tool-unknown": TOOL_PATH + ': "browser" is not an available tool',
    "duplicate-task": "phases[0].rounds[0].plan.tasks[1].id: ",
    "duplicate-phase": "phases[1].id: ",
    "self-dependency": "phases[0].rounds[0].plan.tasks[1].dependencies[0]: ",
    "architecture": "architecture: ",
    "unknown-field": 'unknown field "colour" (a context has id, ',
    "missing-phases": '"phases" is missing',
}


@pytest.mark.parametrize("kind", sorted(BAD))
def test_refused_and_previous_kept(flowfs, session, kind):
    cj = session / "context.json"
    assert put(cj, json.dumps(context_doc())) == 0
    before = read_bytes(cj)
    text_before = read_bytes(session / "context.txt")
    bad = context_doc()
    mutate, message = BAD[kind]
    mutate(bad)
    err = put(cj, json.dumps(bad))
    assert err == errno.EINVAL, errname(err)
    assert read_bytes(cj) == before
    assert read_bytes(session / "context.txt") == text_before
    (msg,) = context_log(session)
    if message is not None:
        assert msg == message
    else:
        assert msg.startswith(WHERE[kind]), msg
    flowfs.remount()
    assert read_bytes(cj) == before


def test_not_json_says_where(session):
    err = put(session / "context.json", '{\n  "id": "x",\n  oops\n}')
    assert err == errno.EINVAL, errname(err)
    (msg,) = context_log(session)
    assert "line 3" in msg, msg
    assert read_bytes(session / "context.json") == b"null"


def myagent_conversion(msg, now):
    """StructuredMessage.from_legacy_message of MyAgent (seed 003's code,
    core/structured_message.py), restated from its source with its
    time.time() as `now`: what flowfs must store."""
    content = msg.get("content", "")
    calls = [{"task_id": i, "tool": tc.get("tool", "unknown"),
              "arguments": tc.get("arguments", {}),
              "result": tc.get("result", {}), "timestamp": now}
             for i, tc in enumerate(msg["tool_calls"], 1)]
    return {"id": f"msg_{int(now)}", "timestamp": now,
            "architecture": "request-phase-task",
            "request": {"original_input": "历史消息",
                        "core_goal": content[:100],
                        "requirements": [], "constraints": []},
            "phases": [{"id": 1, "name": "Main Task", "goal": "历史任务",
                        "rounds": [{"round_id": 1,
                                    "plan": {"tasks": [], "reasoning": ""},
                                    "executions": calls, "judge": {}}],
                        "status": "done", "summary": content}],
            "summary": content}


def test_legacy_assistant_message_is_converted_as_myagent_does(session):
    legacy = {"role": "assistant",
              "content": "已完成：训练模型，准确率 0.82。" * 8,  # > 100 code points
              "tool_calls": [
                  {"tool": "run_terminal",
                   "arguments": {"command": "python t.py"},
                   "result": {"stdout": "0.82"}},
                  {"tool": "file_operations"},
                  {"arguments": {"path": "x"}}],
              "name": "assistant-1"}        # other members are ignored
    before = time.time()
    assert put(session / "context.json",
               json.dumps(legacy, ensure_ascii=False)) == 0
    after = time.time()
    got = json.loads(read_bytes(session / "context.json"))
    now = got["timestamp"]
    assert before - 1 <= now <= after + 1, (before, now, after)
    want = myagent_conversion(legacy, now)
    assert read_bytes(session / "context.json") == dumps(want).encode()
    txt = read_bytes(session / "context.txt").decode()
    assert "Phase 1: Main Task (done)" in txt, txt


def test_legacy_openai_tool_calls_are_converted_too(session):
    """An extension (README): tool calls in OpenAI's shape give their
    function's name and parsed arguments."""
    legacy = {"role": "assistant", "content": "done",
              "tool_calls": [{"id": "call_a", "type": "function",
                              "function": {"name": "run_terminal",
                                           "arguments": "{\"command\": \"ls\"}"}}]}
    assert put(session / "context.json", json.dumps(legacy)) == 0
    (e,) = json.loads(read_bytes(session / "context.json"))[
        "phases"][0]["rounds"][0]["executions"]
    assert e["task_id"] == 1 and e["tool"] == "run_terminal"
    assert e["arguments"] == {"command": "ls"} and e["result"] == {}


@pytest.mark.parametrize("legacy", [
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": "no tool called"},
    {"role": "assistant", "content": "x", "tool_calls": []},
])
def test_legacy_messages_myagent_does_not_convert_are_kept(session, legacy):
    assert put(session / "context.json", json.dumps(legacy)) == 0
    assert json.loads(read_bytes(session / "context.json")) == legacy
    txt = read_bytes(session / "context.txt").decode()
    assert txt.startswith(f"Legacy message, role {legacy['role']}: kept as"
                          " written (not an assistant message with tool"
                          " calls)\n"), txt


def test_unchanged_rewrite_keeps_mtime(session):
    cj = session / "context.json"
    assert put(cj, json.dumps(context_doc())) == 0
    mtime = os.stat(cj).st_mtime_ns
    assert put(cj, dumps(context_doc())) == 0
    assert os.stat(cj).st_mtime_ns == mtime


def test_rmdir_keeps_a_session_with_context(mnt, session):
    assert put(session / "context.json", json.dumps(context_doc())) == 0
    with pytest.raises(OSError) as e:
        os.rmdir(session)
    assert e.value.errno == errno.ENOTEMPTY
    assert put(session / "context.json", "null") == 0
    os.rmdir(session)
    assert not os.path.exists(session)
