"""output/workflow.argo.yaml and output/submit.slurm.sh read through the
mount (issue 16): the Argo workflow passes Argo's own schema and its DAG
is the graph; the Slurm script, copied out and run with bash on the test
cluster, runs the graph's jobs in order; a graph that cannot run makes
files that say why; a session without nodes has neither."""

import json
import os
import subprocess
import time

import pytest
import yaml

from argo import validate_workflow
from conftest import SLURM_TIMEOUT, read_bytes
from graphs import edge, node

TOOLS = {
    "step": {"command": ["sh", "-c",
                         "date +%s.%N > start; sleep {{ sleep }}; "
                         "date +%s.%N > end", "step"],
             "outputs": {"stamp": "end"},
             "resources": {"cpus": 1, "memory_mib": 64}},
}

# a -> b, a -> c, b + c -> d
GRAPH = {
    "nodes": [node("a", "step", sleep=1), node("b", "step", sleep=0),
              node("c", "step", sleep=0), node("d", "step", sleep=0)],
    "edges": [edge("e1", "a", "b", "sleep_after", out="stamp"),
              edge("e2", "a", "c", "sleep_after", out="stamp"),
              edge("e3", "b", "d", "left", out="stamp"),
              edge("e4", "c", "d", "right", out="stamp")],
}


@pytest.fixture
def session(make_flowfs, isolated_config, tmp_path):
    cfg = isolated_config / "flowfs"
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / "tools.json").write_text(json.dumps(TOOLS))
    work = tmp_path / "work"
    fs = make_flowfs(extra_args=[f"--work-dir={work}"])
    s = fs.mnt / "s"
    os.mkdir(s)
    return s, work


def put_graph(s, graph):
    for n in graph["nodes"]:
        params = [dict(p) for p in n["input_parameters"]]
        # the inputs edges feed must exist on the node
        for e in graph["edges"]:
            if e["target_node_id"] == n["id"]:
                params.append({"name": e["target_parameter_name"],
                               "value": None})
        (s / "nodes" / f"{n['id']}.json").write_text(json.dumps(
            {"label": n["label"], "input_parameters": params}))
    for e in graph["edges"]:
        (s / "edges" / f"{e['id']}.json").write_text(json.dumps(
            {k: v for k, v in e.items() if k != "id"}))


def test_no_nodes_no_exports(session):
    s, _ = session
    names = os.listdir(s / "output")
    assert "workflow.argo.yaml" not in names
    assert "submit.slurm.sh" not in names


def test_argo_workflow_is_valid_and_is_the_graph(session):
    s, _ = session
    put_graph(s, GRAPH)
    assert {"workflow.argo.yaml", "submit.slurm.sh"} <= set(
        os.listdir(s / "output"))
    doc = yaml.safe_load(read_bytes(s / "output" / "workflow.argo.yaml"))
    assert validate_workflow(doc) == []
    dag = next(t for t in doc["spec"]["templates"]
               if t["name"] == doc["spec"]["entrypoint"])["dag"]["tasks"]
    got = {t["name"]: sorted(t["dependencies"]) for t in dag}
    want = {n["id"]: sorted(e["source_node_id"] for e in GRAPH["edges"]
                            if e["target_node_id"] == n["id"])
            for n in GRAPH["nodes"]}
    assert got == want
    # the edge hands the source's file: d's inputs are the paths of b's
    # and c's stamps on the shared volume
    args = {p["name"]: p["value"] for p in next(
        t for t in dag if t["name"] == "d")["arguments"]["parameters"]}
    assert args["left"] == "/work/b/end" and args["right"] == "/work/c/end"


def test_exports_follow_the_graph(session):
    """Generated on read: a node more, a task more."""
    s, _ = session
    put_graph(s, GRAPH)
    before = yaml.safe_load(read_bytes(s / "output" / "workflow.argo.yaml"))
    (s / "nodes" / "e.json").write_text(json.dumps(
        {"label": "step", "input_parameters": [{"name": "sleep",
                                                "value": 0}]}))
    after = yaml.safe_load(read_bytes(s / "output" / "workflow.argo.yaml"))
    count = [len(next(t for t in d["spec"]["templates"]
                      if t["name"] == "graph")["dag"]["tasks"])
             for d in (before, after)]
    assert count == [4, 5]
    assert b"# node e\n" in read_bytes(s / "output" / "submit.slurm.sh")


def test_a_graph_that_cannot_run_says_why(session, tmp_path):
    s, _ = session
    put_graph(s, GRAPH)
    (s / "nodes" / "x.json").write_text(json.dumps({"label": "unknown"}))
    why = ('node "x": its label "unknown" has no command in the tool map')
    argo = read_bytes(s / "output" / "workflow.argo.yaml").decode()
    assert argo.startswith("# flowfs cannot export this job graph for Argo"
                           " Workflows: " + why), argo
    assert yaml.safe_load(argo) is None
    script = tmp_path / "submit.slurm.sh"
    script.write_bytes(read_bytes(s / "output" / "submit.slurm.sh"))
    r = subprocess.run(["bash", str(script)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 1
    assert r.stderr.startswith("submit.slurm.sh: flowfs cannot submit this"
                               " job graph: " + why), r.stderr


def test_slurm_script_runs_the_graph(session, slurm, tmp_path):
    s, work = session
    put_graph(s, GRAPH)
    script = tmp_path / "submit.slurm.sh"
    script.write_bytes(read_bytes(s / "output" / "submit.slurm.sh"))
    r = slurm.run("bash", str(script), cwd=tmp_path)
    ids = dict(line.rsplit(" ", 1) for line in r.stdout.splitlines())
    assert sorted(ids) == ["a", "b", "c", "d"], r.stdout
    export = next(work.glob("s-*")) / "export"
    deadline = time.monotonic() + SLURM_TIMEOUT
    while not (export / "d" / ".flowfs-exit").exists():
        assert time.monotonic() < deadline, "d did not end"
        time.sleep(0.1)
    t = {n: (float((export / n / "start").read_text()),
             float((export / n / "end").read_text())) for n in ids}
    for e in GRAPH["edges"]:
        assert t[e["target_node_id"]][0] >= t[e["source_node_id"]][1], e
    for n in ids:
        assert (export / n / ".flowfs-exit").read_text().split()[0] == "0"
