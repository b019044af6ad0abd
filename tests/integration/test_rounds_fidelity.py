"""Differential test of core/rounds against a Python reimplementation of
seed 004's transcript (the seed's code sketch, with the block layout of its
worked example: "<Tag>\\n<text>\\n</Tag>" blocks separated by a blank line).

Random round sets (seeded, so a failure reproduces) that follow the
placement rules are rendered by tests/unit/rounds_render (built by meson;
build dir $FLOWFS_BUILD_DIR, default <repo>/build-test) and by the code
below; summary.json must equal json.dumps(conversation, indent=2,
ensure_ascii=False) byte for byte, summary_readable.txt the seed's
readable form.  Broken sets must be refused.
"""

import json
import os
import random
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("FLOWFS_BUILD_DIR", REPO / "build-test"))
RENDER = BUILD / "tests" / "unit" / "rounds_render"

ALPHABET = ["a", "Z", " ", "\n", "\t", "\"", "\\", "/", "<", ">", "é", "平均",
            "票价", "\u2028", "\x00", "\x1f", "\x7f", "😀", "Mean fare: 32.2"]


def text(rng, empty_ok=False, nul=True):
    n = rng.randint(0 if empty_ok else 1, 12)
    chars = ALPHABET if nul else [c for c in ALPHABET if c != "\x00"]
    return "".join(rng.choice(chars) for _ in range(n))


def transcript(rounds):
    """The seed's assembly: round 1's response, then per later round the
    previous observation and the response; after the conclusion the final
    observation again."""
    blocks = []

    def block(tag, value):
        blocks.append(f"<{tag}>\n{value}\n</{tag}>")

    last_observation = None
    for i, r in enumerate(rounds):
        if i == 0:
            block("Phenomenon", r["phenomenon"])
        else:
            block("Inference", r["inference"])
        if r.get("conclusion") is not None:
            block("Conclusion", r["conclusion"])
            final = r.get("observation")
            block("Observation", final if final is not None else last_observation)
            continue
        for key in ("hypothesis", "model", "experiment"):
            block(key.capitalize(), r[key])
        if r.get("observation") is not None:
            block("Observation", r["observation"])
            last_observation = r["observation"]
    return "\n\n".join(blocks)


def python_render(case):
    conversation = [
        {"role": "user", "content": f"{case['description']}\n\nI/O Requirements:\n{case['io_instructions']}"},
        {"role": "assistant", "content": transcript(case["rounds"])},
    ]
    readable = "".join(f"=== {m['role'].upper()} ===\n{m['content']}\n\n{'=' * 80}\n\n"
                       for m in conversation)
    return json.dumps(conversation, indent=2, ensure_ascii=False), readable


def random_run(rng):
    n = rng.randint(1, 8)
    concluded = n > 1 and rng.random() < 0.6
    rounds = []
    for i in range(1, n + 1):
        last = i == n
        if i == 1:
            r = {"phenomenon": text(rng), "hypothesis": text(rng),
                 "model": text(rng), "experiment": text(rng)}
        elif last and concluded:
            r = {"inference": text(rng), "conclusion": text(rng)}
            if rng.random() < 0.3:
                r["observation"] = text(rng, True)
        else:
            r = {"inference": text(rng), "hypothesis": text(rng),
                 "model": text(rng), "experiment": text(rng)}
        if "experiment" in r and (not last or rng.random() < 0.5):
            r["observation"] = text(rng, True)
        items = list(r.items())
        rng.shuffle(items)  # key order must not matter
        rounds.append(dict(items))
    # description and io_instructions reach rounds.h as C strings (no NUL)
    return {"description": text(rng, nul=False),
            "io_instructions": text(rng, True, nul=False),
            "rounds": rounds}


def broken_run(rng):
    case = random_run(rng)
    rounds = case["rounds"]
    while True:
        i = rng.randrange(len(rounds))
        r = rounds[i]
        how = rng.randrange(4)
        if how == 0 and r:
            del r[rng.choice(sorted(k for k in r if k != "observation") or ["x"])]
        elif how == 1 and i < len(rounds) - 1:
            rounds[i] = {"inference": "i", "conclusion": "c"}
        elif how == 2:
            r["result"] = "r"
        elif how == 3 and i == 0:
            r["conclusion"] = "c"
        else:
            continue
        return case


def ours(cases):
    if not (RENDER.is_file() and os.access(RENDER, os.X_OK)):
        pytest.fail(f"rounds_render is missing: {RENDER}. Build it first "
                    f"(meson setup {BUILD} {REPO} && ninja -C {BUILD}) or "
                    f"point FLOWFS_BUILD_DIR at a build directory that has it.")
    p = subprocess.run([str(RENDER)], input=json.dumps(cases).encode(),
                       capture_output=True, timeout=600)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    results = json.loads(p.stdout)
    # one answer per case, or zip() below would check only a prefix
    assert len(results) == len(cases), (len(results), len(cases))
    return results


def test_random_rounds_match_python():
    rng = random.Random(4004)
    cases = [random_run(rng) for _ in range(600)]
    for case, got in zip(cases, ours(cases)):
        assert "error" not in got, (case, got)
        summary, readable = python_render(case)
        assert got["summary"] == summary, case
        assert got["readable"] == readable, case


def test_broken_rounds_refused():
    rng = random.Random(4005)
    cases = [broken_run(rng) for _ in range(300)]
    for case, got in zip(cases, ours(cases)):
        assert "error" in got, case
        assert got["error"].startswith("rounds/"), got
