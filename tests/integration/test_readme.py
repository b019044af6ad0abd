"""The README is executed (issue 14): its shell walk-throughs (the
```console and ```sh blocks), section by section, each section in a fresh
mount made the README's way (`tools/run`), in a folder that stands for the
checkout, as written.  Where a ```console block shows what a command prints,
the output must be that (timestamps, the folder and dates in generated file
names aside).  A block the suite cannot run says why in an HTML comment on
the line before it: `<!-- not run by the README test: REASON -->`.

What a walk-through names is made by an earlier step it shows (its
sample data) or is the project's own: the example skills in
tools/examples/skills.  Nothing beside the checkout is needed.  It runs as root: `tools/run` builds in the checkout, which is
root's in CI (tools/test has made that release build already)."""

import os
import re
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import datcom_oracle
from conftest import REPO, _fusermount

pytestmark = pytest.mark.root

README = REPO / "README.md"
SKIP_MARK = re.compile(r"<!-- not run by the README test: (.+?) -->")


@dataclass
class Command:
    text: str                 # what follows "$ ", continuation lines too
    expected: list            # the lines the README shows it printing
    line: int


@dataclass
class Block:
    lang: str
    body: list
    line: int
    skip: str = ""
    commands: list = field(default_factory=list)


@dataclass
class Section:
    title: str
    blocks: list = field(default_factory=list)


def complete(text):
    """Whether `text` is a whole shell command (its quotes closed)."""
    try:
        shlex.split(text, comments=True)
        return True
    except ValueError:
        return False


def console_commands(body, first_line):
    """The `$ ` commands of a console block, each with what it prints."""
    cmds, i = [], 0
    while i < len(body):
        if not body[i].startswith("$ "):
            raise AssertionError(f"README line {first_line + i}: output"
                                 " shown before any command")
        text, line = body[i][2:], first_line + i
        i += 1
        heredoc = re.search(r"<<-?'?(\w+)'?", text)
        if heredoc:
            end = heredoc.group(1)
            while i < len(body) and body[i] != end:
                text += "\n" + body[i]
                i += 1
            text += "\n" + end
            i += 1
        while not complete(text) and i < len(body):
            text += "\n" + body[i]
            i += 1
        expected = []
        while i < len(body) and not body[i].startswith("$ "):
            expected.append(body[i])
            i += 1
        cmds.append(Command(text, expected, line))
    return cmds


def sections():
    out, current, block, skip_reason = [], Section("(top)"), None, ""
    for n, raw in enumerate(README.read_text().splitlines(), 1):
        if block is not None:
            if raw.startswith("```"):
                current.blocks.append(block)
                block = None
            else:
                block.body.append(raw)
            continue
        if raw.startswith("#") and re.match(r"#{1,3} ", raw):
            out.append(current)
            current = Section(raw.lstrip("#").strip())
            continue
        m = re.match(r"```(console|sh)\s*$", raw)
        if m:
            block = Block(m.group(1), [], n + 1, skip_reason)
        elif raw.startswith("```"):
            block = None
        mark = SKIP_MARK.search(raw)
        if mark:
            skip_reason = mark.group(1)
        elif raw.strip():
            skip_reason = ""
    out.append(current)
    for s in out:
        for b in s.blocks:
            if b.lang == "console":
                b.commands = console_commands(b.body, b.line)
    return [s for s in out if s.blocks]


def runnable(section):
    return [b for b in section.blocks if not b.skip]


ALL = sections()
RUN = [s for s in ALL if runnable(s)]


def test_the_readme_has_walk_throughs_and_says_why_it_skips_blocks():
    assert len(RUN) >= 8, [s.title for s in RUN]
    for s in ALL:
        for b in s.blocks:
            if b.skip:
                assert len(b.skip) > 10, f"README line {b.line}: say why"


# What varies from run to run, and what stands for the reader's folders.
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
STAMP = re.compile(r"\d{8}_\d{6}")


def normal(text, work):
    text = text.replace(str(work), "/home/me/flowfs")
    text = text.replace("/home/me/mnt", "/home/me/flowfs/mnt")
    text = TIMESTAMP.sub("<time>", text)
    return STAMP.sub("<stamp>", text)


def same_output(expected, got, work):
    """The README's lines and the output agree word for word (the spaces
    between are a terminal's); a line "..." stands for any lines."""
    want = normal("\n".join(expected), work).split()
    have = normal(got, work).split()
    if "..." in want:
        cut = want.index("...")
        return have[:cut] == want[:cut]
    return want == have


MARK = "@@readme-command-{}@@"


def script_for(section, repo_stand_in):
    """One bash script for the whole section, each command's output (both
    streams) after a mark of its own."""
    lines = [
        "set -u",
        # the README's commands run from the checkout: `tools/run` is its
        # tools/run with this folder's mnt as the default mountpoint
        f"tools/run() {{ if [ $# -eq 0 ]; then set -- mnt; fi;"
        f" {shlex.quote(str(REPO / 'tools' / 'run'))} \"$@\"; }}",
        # what the README shows is a terminal's: ls lays out columns
        "ls() { command ls -C -w 80 \"$@\"; }",
        f"cd {shlex.quote(str(repo_stand_in))}",
    ]
    steps = []
    for b in runnable(section):
        if b.lang == "console":
            for c in b.commands:
                steps.append((c.text, c))
        else:
            steps.append(("\n".join(b.body), b))
    for i, (text, what) in enumerate(steps):
        lines.append(f"printf '\\n{MARK.format(i)}\\n'")
        lines.append("{\n" + text + "\n} 2>&1")
        if isinstance(what, Block):
            # a ```sh block runs without a fault
            lines.append(f"rc=$?; [ $rc -eq 0 ] || echo '@@readme-failed@@' $rc")
    return "\n".join(lines) + "\n", steps


@pytest.mark.parametrize("section", RUN, ids=[s.title for s in RUN])
def test_walk_through(section, tmp_path):
    work = tmp_path / "flowfs"          # stands for the checkout
    home = tmp_path / "home"
    work.mkdir()
    home.mkdir()
    env = dict(os.environ, HOME=str(home),
               XDG_DATA_HOME=str(home / ".local" / "share"),
               XDG_CONFIG_HOME=str(home / ".config"), LC_ALL="C.UTF-8",
               PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    text = "\n".join("\n".join(b.body) for b in runnable(section))
    # the checkout's example skills, where the README's paths find them
    (work / "tools").mkdir()
    os.symlink(REPO / "tools" / "examples", work / "tools" / "examples")
    script, steps = script_for(section, work)
    if not re.search(r"^(\$ )?tools/run", text, re.M):
        # the README's first step, made before every section
        script = script.replace(f"cd {shlex.quote(str(work))}\n",
                                f"cd {shlex.quote(str(work))}\ntools/run >/dev/null\n", 1)
    mnt = work / "mnt"
    try:
        r = subprocess.run(["bash", "-c", script], capture_output=True,
                           text=True, env=env, timeout=600)
        out = r.stdout + r.stderr
        parts = re.split(r"\n?@@readme-command-(\d+)@@\n", out)
        got = {int(parts[k]): parts[k + 1] for k in range(1, len(parts) - 1, 2)}
        for i, (text_, what) in enumerate(steps):
            assert i in got, f"README line {what.line}: never ran;" \
                f" the section printed:\n{out[-3000:]}"
            if isinstance(what, Block):
                assert "@@readme-failed@@" not in got[i], \
                    f"README line {what.line}: the block failed:\n{got[i]}"
            elif what.expected:
                assert same_output(what.expected, got[i], work), (
                    f"README line {what.line}: $ {what.text}\n"
                    f"--- the README shows:\n" + "\n".join(what.expected) +
                    f"\n--- it printed:\n{got[i]}")
    finally:
        for m in mounts_under(tmp_path):
            for _ in range(50):
                if _fusermount(m).returncode == 0:
                    break
            else:
                _fusermount(m, lazy=True)
    assert not mounts_under(tmp_path), "the unmount failed"


def test_datcom_table_is_what_datcom_prints(tmp_path):
    """The DATCOM walk-through shows the table DATCOM prints for the deck
    it shows (issue 28): that deck (the output of its `cat
    mnt/pc9/output/for005.dat`, which the walk-through test compares
    with flowfs's) through the real DATCOM tools/test builds, and the
    lines its `grep -A 7 '^0 ALPHA '` shows.  Skipped, saying why, where
    DATCOM cannot be had."""
    binary = datcom_oracle.require()
    section = next(s for s in ALL if s.title.startswith("DATCOM"))
    commands = [c for b in section.blocks if b.lang == "console"
                for c in b.commands]
    deck = next(c for c in commands
                if c.text == "cat mnt/pc9/output/for005.dat").expected
    grep = next(c for c in commands if c.text.startswith("grep -A 7 "))
    assert grep.expected, "the README shows no table"
    datcom_oracle.run(binary, ("\n".join(deck) + "\n").encode(),
                      keep=tmp_path)
    lines = (tmp_path / "output.dat").read_text().split("\n")
    head = next(i for i, line in enumerate(lines)
                if line.startswith("0 ALPHA "))
    got = [line.rstrip() for line in lines[head:head + 8]]
    assert got == [line.rstrip() for line in grep.expected], \
        "\n".join(["README line %d shows:" % grep.line, *grep.expected,
                   "DATCOM prints:", *got])


def mounts_under(top):
    """What is mounted in `top` (a walk-through may mount anywhere)."""
    found = []
    for line in open("/proc/self/mounts"):
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)),
                       line.split()[1])
        if point.startswith(f"{top}/"):
            found.append(Path(point))
    return found
