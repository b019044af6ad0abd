"""The Argo schema check (argo.py) itself: a workflow of the shape
core/gexport.c writes passes it, and broken ones do not, so a test that
finds no errors with it means something.  Skipped without the npm
registry (argo.py)."""

import copy
import json
import re

import yaml

from argo import validate_workflow
from graphs import edge, node, render

# gexport_argo()'s output for the small plan of tests/unit/test_gexport.c
# (test_argo_exact), as that test has it.
GEXPORT_YAML = """\
apiVersion: "argoproj.io/v1alpha1"
kind: "Workflow"
metadata:
  generateName: "flowfs-demo-"
spec:
  entrypoint: "graph"
  volumeClaimTemplates:
    - apiVersion: "v1"
      kind: "PersistentVolumeClaim"
      metadata:
        name: "work"
      spec:
        accessModes:
          - "ReadWriteMany"
        resources:
          requests:
            storage: "10Gi"
  templates:
    - name: "graph"
      dag:
        tasks:
          - name: "prep"
            template: "prep"
            dependencies: []
            arguments:
              parameters:
                - name: "n"
                  value: "3"
                - name: "name"
                  value: "x"
          - name: "relax"
            template: "relax"
            dependencies:
              - "prep"
            arguments:
              parameters:
                - name: "structure"
                  value: "/work/prep/out.cif"
    - name: "prep"
      metadata:
        annotations:
          flowfs/node-id: "prep"
      inputs:
        parameters:
          - name: "n"
          - name: "name"
      container:
        name: "main"
        image: "python:3.12"
        command:
          - "python3"
          - "prep.py"
          - "--n"
          - "3"
        workingDir: "/work/prep"
        volumeMounts:
          - name: "work"
            mountPath: "/work"
        resources:
          requests:
            cpu: "2"
            memory: "8192Mi"
          limits:
            cpu: "2"
            memory: "8192Mi"
    - name: "relax"
      metadata:
        annotations:
          flowfs/node-id: "relax"
      inputs:
        parameters:
          - name: "structure"
      activeDeadlineSeconds: 3600
      container:
        name: "main"
        image: "debian:12-slim"
        command:
          - "relax"
          - "/work/prep/out.cif"
        workingDir: "/work/relax"
        volumeMounts:
          - name: "work"
            mountPath: "/work"
        resources:
          requests:
            cpu: "1"
            nvidia.com/gpu: "1"
          limits:
            cpu: "1"
            nvidia.com/gpu: "1"
"""

MINIMAL = {
    "apiVersion": "argoproj.io/v1alpha1",
    "kind": "Workflow",
    "metadata": {"generateName": "hello-"},
    "spec": {
        "entrypoint": "main",
        "templates": [
            {"name": "main",
             "dag": {"tasks": [{"name": "a", "template": "echo",
                                "dependencies": []}]}},
            {"name": "echo",
             "container": {"name": "main", "image": "alpine:3",
                           "command": ["echo", "hi"]}},
        ],
    },
}


def test_minimal_workflow_validates():
    assert validate_workflow(MINIMAL) == []


def test_gexport_shape_validates():
    doc = yaml.safe_load(GEXPORT_YAML)
    assert validate_workflow(doc) == []


def test_dependencies_not_a_list():
    doc = copy.deepcopy(MINIMAL)
    doc["spec"]["templates"][0]["dag"]["tasks"][0]["dependencies"] = 5
    assert validate_workflow(doc) == [
        "/spec/templates/0/dag/tasks/0/dependencies: must be array"]


def test_wrong_types_each_reported():
    doc = copy.deepcopy(MINIMAL)
    doc["spec"]["templates"][0]["name"] = 5
    doc["spec"]["templates"][1]["container"]["command"] = "echo hi"
    errors = validate_workflow(doc)
    assert "/spec/templates/0/name: must be string" in errors
    assert "/spec/templates/1/container/command: must be array" in errors


def test_what_gexport_adds_is_needed():
    """A container without a name, or a claim template without kind,
    fails this schema: why gexport writes them."""
    doc = copy.deepcopy(MINIMAL)
    del doc["spec"]["templates"][1]["container"]["name"]
    assert validate_workflow(doc) == [
        "/spec/templates/1/container: must have required property name"]
    doc = yaml.safe_load(GEXPORT_YAML)
    del doc["spec"]["volumeClaimTemplates"][0]["kind"]
    assert validate_workflow(doc) == [
        "/spec/volumeClaimTemplates/0: must have required property kind"]


# ---- the workflow of a real plan (graphs.py) ---------------------------

# Argo's controller (workflow/validate/validate.go) checks more than the
# schema does: names of tasks and templates, parameters, dependencies.
FIELD_NAME = re.compile(r"[a-zA-Z0-9][-a-zA-Z0-9]*\Z")
PARAM_NAME = re.compile(r"[-a-zA-Z0-9_]+\Z")


TOOLS = {
    "relax": {"image": "registry.example/abacus:3.8",
              "machine_type": "c2_m8_cpu",
              "command": ["abacus-relax", "--in", "{{ structure_file }}",
                          "--note", "{{ note }}",
                          "--out", "{{ job_dir }}/relaxed.cif"],
              "outputs": {"relaxed_structure": "relaxed.cif"}},
    "train": {"machine_type": "c8_m32_1 * NVIDIA V100",
              "command": ["train", "{{ data }}", "{{ inputs }}"],
              "resources": {"time_minutes": 90, "partition": "gpu"}},
}

GRAPH = {
    "nodes": [
        node("Relax 1", "relax", structure_file="a b.cif",
             note="say \"hi\"\n# x: $(HOME) $$ yes \u65e5\u672c \u2028"),
        node("1-graph", "train", data="", n=3, real=1.5, flag=True,
             none=None, obj={"k": [1, "x"]}, **{"bad name!": "v"}),
        node("graph", "train", data=""),
        node("RELAX.1", "relax", structure_file="x", note="n"),
        node("\u65e5\u672c", "relax", structure_file="", note="0"),
    ],
    "edges": [
        edge("e1", "Relax 1", "1-graph", "data", "relaxed_structure"),
        edge("e2", "Relax 1", "graph", "data"),
        edge("e3", "1-graph", "\u65e5\u672c", "structure_file"),
        edge("e4", "graph", "\u65e5\u672c", "note"),
        edge("e5", "RELAX.1", "\u65e5\u672c", "extra"),
    ],
}


def test_real_plan_validates():
    """A plan with names Argo would refuse as they are, values YAML would
    misread, GPUs and a time limit: Argo's schema and its controller's
    name rules both take the workflow gexport makes of it."""
    doc = yaml.safe_load(render("argo", GRAPH, TOOLS,
                                session="Weird: Session!"))
    assert validate_workflow(doc) == []

    assert doc["metadata"]["generateName"] == "flowfs-weird-session-"
    assert len(doc["metadata"]["generateName"]) <= 63 - 5
    dag, *containers = doc["spec"]["templates"]
    tasks = dag["dag"]["tasks"]
    names = [t["name"] for t in tasks]
    assert [c["name"] for c in containers] == names
    # in plan order (jobspec's: Relax 1 and RELAX.1 need nothing), the
    # first to come keeps the name
    task_of = {c["metadata"]["annotations"]["flowfs/node-id"]: c["name"]
               for c in containers}
    assert task_of == {"Relax 1": "relax-1", "RELAX.1": "relax-1-2",
                       "1-graph": "n-1-graph", "graph": "graph-2",
                       "\u65e5\u672c": "n"}
    assert len(set(names + ["graph"])) == len(names) + 1
    for t in tasks:
        assert FIELD_NAME.match(t["name"]) and len(t["name"]) <= 63
        assert not t["name"][0].isdigit()
        assert all(d in names for d in t["dependencies"])
        assert all(PARAM_NAME.match(p["name"])
                   for p in t["arguments"]["parameters"])
        assert all(isinstance(p["value"], str)
                   for p in t["arguments"]["parameters"])
    task = {c["metadata"]["annotations"]["flowfs/node-id"]: t
            for c, t in zip(containers, tasks)}
    tmpl = {c["metadata"]["annotations"]["flowfs/node-id"]: c
            for c in containers}
    assert sorted(task["\u65e5\u672c"]["dependencies"]) == sorted(
        [task_of["1-graph"], task_of["graph"], task_of["RELAX.1"]])
    assert task["Relax 1"]["dependencies"] == []

    relax = tmpl["Relax 1"]["container"]
    assert relax["command"] == [
        "abacus-relax", "--in", "a b.cif", "--note",
        "say \"hi\"\n# x: $$(HOME) $$$$ yes \u65e5\u672c \u2028",
        "--out", "/work/Relax_1/relaxed.cif"]
    assert relax["resources"]["limits"] == {"cpu": "2", "memory": "8192Mi"}
    train = tmpl["1-graph"]
    assert train["activeDeadlineSeconds"] == 5400
    assert train["container"]["image"] == "debian:12-slim"
    assert train["container"]["resources"]["requests"] == {
        "cpu": "8", "memory": "32768Mi", "nvidia.com/gpu": "1"}
    assert train["container"]["command"][1] == "/work/Relax_1/relaxed.cif"
    params = {p["name"]: p["value"]
              for p in task["1-graph"]["arguments"]["parameters"]}
    assert params["n"] == "3" and params["real"] == "1.5"
    assert params["flag"] == "true" and params["none"] == "null"
    assert json.loads(params["obj"]) == {"k": [1, "x"]}
    assert params["bad_name_"] == "v"


def test_braces_refused():
    """Argo has no escape for "{{": gexport refuses the plan, naming the
    node, rather than let Argo substitute or reject it."""
    graph = {"nodes": [node("n1", "relax",
                            structure_file="{{workflow.name}}", note="")],
             "edges": []}
    r = render("argo", graph, TOOLS, check=False)
    assert r.returncode == 1 and r.stdout == ""
    assert "node \"n1\": argv[2] holds \"{{\"" in r.stderr
