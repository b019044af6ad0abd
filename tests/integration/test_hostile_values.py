"""Hostile values in a job graph (issue 25, items 3, 5 and 11): a node's
image and its parameters are an LLM's words, and neither may become an
option of the program they are handed to.

Each attack is run through the mount with plain file I/O, as a user would
(nodes/*.json, the tool map, `echo submit > SESSION/ctl`), with a recording
fake runner (a script on the daemon's PATH that writes its argv to a file)
where the real one would be podman or apptainer.  The old code let each of
them through: every test first checks whether the submit was taken, and if
so fails saying what the attack did (so, run against a build of main, each
test fails with the attack's effect); now the submit fails with EINVAL and
the `log` and both exports say which node, which field and why.

    3.  --container: system_values.image "--privileged" or
        "--volume=/:/host" became podman's options; a node picked any image.
    5.  a node parameter "--checkpoint-action=exec=..." handed to tar ran
        a command.
    11. the README's --container examples were refused at submit
        ("unexpected end of template inside '{{ }}'"): each now runs, and
        the runner gets exactly the words the README says.
"""

import errno
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, flowfs_bin, put_json, read_bytes
from test_jobs import (build_graph, ctl, graph_report, log_of, ls,
                       wait_graph, write_tools)

PY = "/usr/bin/python3"

# The fake runner: records its argv (one JSON list per call) and runs
# nothing; a job through it ends well at once.
RUNNER = """#!/usr/bin/python3
import json, os, sys
with open({record!r}, "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\\n")
"""


@pytest.fixture
def hostile(make_flowfs, isolated_config, tmp_path):
    """Factory: hostile(tools, container=None) mounts with the tool map
    written, --work-dir=<tmp>/work and, given one, --container=...; fake
    `podman` and `apptainer` record to <tmp>/<name>.calls.  Returns the
    mount and a function giving a runner's recorded calls."""
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    for name in ("podman", "apptainer"):
        path = bindir / name
        path.write_text(RUNNER.format(record=str(tmp_path / f"{name}.calls")))
        path.chmod(0o755)

    def calls(name):
        path = tmp_path / f"{name}.calls"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]

    def mount(tools, container=None, name="mnt"):
        write_tools(isolated_config, tools)
        args = [f"--work-dir={tmp_path / 'work'}", "--jobs=2"]
        if container is not None:
            args.append(f"--container={container}")
        env = {"PATH": f"{bindir}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
        return make_flowfs(name=name, extra_args=args, env=env)
    mount.calls = calls
    return mount


def refused(s, why):
    """`echo submit > s/ctl` fails with EINVAL; the session's last log line
    is ctl's, saying `why`; nothing ran.  The exports say the same."""
    assert ctl(s, "submit") == errno.EINVAL
    path, msg = log_of(s)[-1]
    assert (path, msg) == ("ctl", why)
    assert ls(s / "jobs") == set()
    assert graph_report(s) is None
    argo = read_bytes(s / "output" / "workflow.argo.yaml").decode()
    assert argo == ("# flowfs cannot export this job graph for Argo "
                    f"Workflows: {why}\n"), argo
    slurm = read_bytes(s / "output" / "submit.slurm.sh").decode()
    assert slurm.startswith("#!/bin/bash\necho "), slurm
    assert why.replace("'", "'\\''") in slurm, slurm
    assert slurm.endswith(" >&2\nexit 1\n"), slurm


def submitted_anyway(s, what):
    """The submit was taken: the old code.  Wait for the graph and fail,
    saying what the attack did."""
    g = wait_graph(s)
    pytest.fail(f"the attack went through (submit taken, graph {g['state']}"
                f"): {what()}")


# -- 3. images -----------------------------------------------------------------

RUNNER_WORDS = "podman run --rm {{image}}"   # one the old code split right
# a map the old code reads too (it had no `images`)
IMAGE_TOOLS = {"relax": {"image": "reg.example/abacus:3.8",
                         "command": ["echo", "relaxed"]}}

IMAGE_CASES = {
    # the image a runner's option: mounts the host, drops confinement
    "volume": ("--volume=/:/host",
               'node "n1": system_values.image "--volume=/:/host" is not an '
               'image reference (registry/name:tag@digest): it begins with '
               '"-"'),
    "privileged": ("--privileged",
                   'node "n1": system_values.image "--privileged" is not an '
                   'image reference (registry/name:tag@digest): it begins '
                   'with "-"'),
    # a second word in one value
    "blank": ("reg.example/abacus:3.8 --privileged",
              'node "n1": system_values.image "reg.example/abacus:3.8 '
              '--privileged" is not an image reference '
              '(registry/name:tag@digest): it holds a blank or a control '
              'character'),
    # a valid image the map never chose
    "other": ("evil.example/rootkit:1",
              'node "n1": system_values.image "evil.example/rootkit:1" is '
              'not an image the tool map allows for "relax" (it allows: '
              'reg.example/abacus:3.8)'),
}


@pytest.mark.parametrize("case", sorted(IMAGE_CASES))
def test_node_image_is_refused(hostile, case):
    image, why = IMAGE_CASES[case]
    fs = hostile(IMAGE_TOOLS, container=RUNNER_WORDS)
    s = fs.mnt / "s"
    os.mkdir(s)
    assert put_json(s / "nodes" / "n1.json", {
        "label": "relax", "system_values": {"image": image}}) == 0
    if ctl(s, "submit") == 0:
        submitted_anyway(s, lambda: f"podman ran with {hostile.calls('podman')}")
    assert hostile.calls("podman") == []
    refused(s, why)


def test_node_image_the_map_allows_runs(hostile):
    """The map's image and one of its `images` run; the runner's words
    are the owner's, the image one word."""
    fs = hostile({"relax": dict(IMAGE_TOOLS["relax"],
                                images=["reg.example/abacus:3.9"])},
                 container=RUNNER_WORDS)
    s = fs.mnt / "s"
    os.mkdir(s)
    assert put_json(s / "nodes" / "a.json", {"label": "relax"}) == 0
    assert put_json(s / "nodes" / "b.json", {
        "label": "relax",
        "system_values": {"image": "reg.example/abacus:3.9"}}) == 0
    assert ctl(s, "submit") == 0
    assert wait_graph(s)["state"] == "done"
    assert sorted(hostile.calls("podman")) == [
        ["run", "--rm", "reg.example/abacus:3.8", "echo", "relaxed"],
        ["run", "--rm", "reg.example/abacus:3.9", "echo", "relaxed"]]
    argo = read_bytes(s / "output" / "workflow.argo.yaml").decode()
    assert 'image: "reg.example/abacus:3.9"' in argo


def test_map_image_outside_the_grammar(hostile, isolated_config):
    """The map's own image is checked too: the map cannot be used, and a
    submit says why."""
    fs = hostile({"relax": {"image": "--privileged", "command": ["true"]}},
                 container=RUNNER_WORDS)
    s = fs.mnt / "s"
    os.mkdir(s)
    assert put_json(s / "nodes" / "n1.json", {"label": "relax"}) == 0
    err = ctl(s, "submit")
    if err == 0:
        submitted_anyway(s, lambda: f"podman ran with {hostile.calls('podman')}")
    assert err == errno.EINVAL
    path, msg = log_of(s)[-1]
    tools = isolated_config / "flowfs" / "tools.json"
    assert (path, msg) == ("ctl", (
        f'the tool map cannot be used: {tools}: "relax": image: '
        '"--privileged" is not an image reference '
        '(registry/name:tag@digest): it begins with "-"'))
    assert hostile.calls("podman") == []


# -- 5. options ------------------------------------------------------------------

# GNU tar runs a --checkpoint-action at each checkpoint the map author
# asked for (--checkpoint=1: progress on a big archive)
TAR_TOOLS = {"bundle": {"command": ["tar", "--checkpoint=1", "-cf",
                                    "bundle.tar", "{{ first }}",
                                    "{{ second }}"],
                        "outputs": {"bundle": "bundle.tar"}}}


def test_option_injection_is_refused(hostile, tmp_path):
    fs = hostile(TAR_TOOLS)
    s = fs.mnt / "s"
    os.mkdir(s)
    # runs in the job's folder: `id` writes pwned there
    value = "--checkpoint-action=exec=id > pwned"
    build_graph(s, {"n1": ("bundle", {"first": value,
                                      "second": "/etc/hostname"})})

    def pwned():
        return [p.read_text() for p in (tmp_path / "work").rglob("pwned")]
    if ctl(s, "submit") == 0:
        submitted_anyway(s, lambda: f"tar ran `id`: {pwned()}")
    refused(s, f'node "n1": command[4] "{value}" begins with "-" from the '
            "node's value {{ first }}: a program would read it as an "
            'option; only input parameters the tool map lists in '
            '"options" for "bundle" may do that')
    assert pwned() == []


def test_option_the_map_allows(hostile, tmp_path):
    """`options` lists a parameter whose value may be an option; an item
    the map wrote with its own "-" is the map's (a value inside it
    stays a value); a negative number is no option."""
    tools = {"show": {"command": [PY, "-c",
                                  "import sys; open('args.json', 'w')"
                                  ".write(repr(sys.argv[1:]))",
                                  "{{ flags }}", "--name={{ name }}",
                                  "{{ n }}"],
                      "options": ["flags"],
                      "outputs": {"args": "args.json"}}}
    fs = hostile(tools)
    s = fs.mnt / "s"
    os.mkdir(s)
    build_graph(s, {"n1": ("show", {"flags": "-v", "name": "--rm -rf",
                                    "n": "-3"})})
    assert ctl(s, "submit") == 0
    assert wait_graph(s)["state"] == "done"
    assert read_bytes(s / "jobs" / "n1" / "args.json") == \
        b"['-v', '--name=--rm -rf', '-3']"
    # an option in a parameter the map does not list
    s2 = fs.mnt / "s2"
    os.mkdir(s2)
    build_graph(s2, {"n1": ("show", {"flags": "-v", "name": "x",
                                     "n": "-rf"})})
    refused(s2, 'node "n1": command[5] "-rf" begins with "-" from the '
            "node's value {{ n }}: a program would read it as an option; "
            'only input parameters the tool map lists in "options" for '
            '"show" may do that')


def test_node_id_is_a_value_too(hostile):
    """A node's id (its file name) is the node's: "--x.json" cannot make
    {{ node.id }} an option."""
    fs = hostile({"t": {"command": ["echo", "{{ node.id }}"]}})
    s = fs.mnt / "s"
    os.mkdir(s)
    assert put_json(s / "nodes" / "--x.json", {"label": "t"}) == 0
    if ctl(s, "submit") == 0:
        submitted_anyway(s, lambda: "echo got --x")
    refused(s, 'node "--x": command[1] "--x" begins with "-" from the '
            "node's value {{ node.id }}: a program would read it as an "
            'option; only input parameters the tool map lists in "options" '
            'for "t" may do that')


# -- 11. the README's --container examples -----------------------------------

def readme_containers():
    """Every --container='...' the README gives."""
    found = re.findall(r"--container='([^']*)'",
                       (REPO / "README.md").read_text())
    assert len(found) >= 2, found
    return sorted(set(found))


def expected_argv(example, image, job_dir):
    """The words of a README example as the README says flowfs makes
    them: split at blanks outside {{ }}, each filled in."""
    words = re.findall(r"(?:\{\{[^}]*\}\}|[^\s{])+", example)
    return [re.sub(r"\{\{ *(\w+) *\}\}",
                   lambda m: {"image": image, "job_dir": job_dir}[m[1]], w)
            for w in words]


@pytest.mark.parametrize("example", readme_containers())
def test_readme_container_example(hostile, tmp_path, example):
    runner = example.split()[0]
    fs = hostile({"relax": {"image": "registry.example/abacus:3.8",
                            "command": ["abacus-relax", "--in", "x.cif"]}},
                 container=example)
    s = fs.mnt / "s"
    os.mkdir(s)
    assert put_json(s / "nodes" / "n1.json", {"label": "relax"}) == 0
    if ctl(s, "submit") != 0:
        pytest.fail(f"--container='{example}' refused at submit: "
                    f"{log_of(s)[-1][1]}")
    assert wait_graph(s)["state"] == "done"
    calls = hostile.calls(runner)
    assert len(calls) == 1, calls
    # the job's folder is the one its script goes to
    script = read_bytes(s / "jobs" / "n1" / "script").decode()
    job_dir = re.search(r"^cd (\S+) \|\| exit 1$", script, re.M)[1]
    assert Path(job_dir).is_dir() and job_dir.endswith("/n1")
    want = expected_argv(example, "registry.example/abacus:3.8", job_dir)
    assert [runner] + calls[0] == want + ["abacus-relax", "--in", "x.cif"]


def test_container_words_checked_at_start(tmp_path):
    """--container is checked when flowfs starts: a word naming what the
    runner does not see, or a quote no shell will read, stops it with
    the reason (and EXIT_USAGE), before anything is mounted."""
    mnt = tmp_path / "bad"
    mnt.mkdir()
    for words, why in [
            ("podman run {{ img }}", 'flowfs: --container: word 3 '
             '"{{ img }}" reads "img": the runner sees only image and '
             'job_dir'),
            ("podman run {{ image", 'flowfs: --container: word 3 '
             '"{{ image": line 1, column 9: unexpected end of template '
             "inside '{{ }}'"),
            ("sh -c 'podman {{ image }}'", 'flowfs: --container: word 3 '
             'holds a quote or a backslash: no shell reads the runner, its '
             'words are split at blanks')]:
        try:
            r = subprocess.run([str(flowfs_bin()),
                                f"--db={tmp_path / 'bad.db'}", "-f",
                                f"--work-dir={tmp_path / 'work'}",
                                f"--container={words}", str(mnt)],
                               capture_output=True, text=True, timeout=10,
                               stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            subprocess.run(["fusermount3", "-uz", str(mnt)])
            pytest.fail(f"flowfs mounted with --container={words}")
        assert not os.path.ismount(mnt)
        assert r.returncode == 2, (r.returncode, r.stderr)
        assert r.stderr.strip().splitlines()[-1] == why, r.stderr
