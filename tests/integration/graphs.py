"""Job graphs for the export tests, and their exports made by
tests/unit/gexport_render (jobspec_plan + gexport_argo/gexport_slurm on a
real plan), until a test can read them from a mount's output/.  Not a
test file."""

import json
import os
import subprocess
from pathlib import Path

import pytest

BUILD = Path(os.environ.get("FLOWFS_BUILD_DIR",
                            Path(__file__).resolve().parents[2] /
                            "build-test"))
RENDER = BUILD / "tests" / "unit" / "gexport_render"


def node(nid, label, **params):
    """A node in the seed-000 form jobspec reads."""
    return {"id": nid, "label": label,
            "input_parameters": [{"name": k, "value": v}
                                 for k, v in params.items()]}


def edge(eid, src, dst, to, out=None):
    """An edge to input `to`; from output `out`, else out_<label> (the
    source's folder)."""
    e = {"id": eid, "source_node_id": src, "target_node_id": dst,
         "target_parameter_name": to}
    if out:
        e["source_parameter_name"] = out
    return e


def render(kind, graph, tools, session="s", run_dir="/work", check=True):
    """gexport_render's run: "argo" or "slurm"; with check, its output."""
    if not RENDER.exists():
        pytest.fail(f"{RENDER} is not built: run ninja -C {BUILD} or point "
                    f"FLOWFS_BUILD_DIR at a build directory that has it.")
    doc = {"graph": graph, "tools": tools, "session": session,
           "run_dir": str(run_dir)}
    r = subprocess.run([str(RENDER), kind], input=json.dumps(doc),
                       capture_output=True, text=True, timeout=60)
    if not check:
        return r
    assert r.returncode == 0, r.stderr
    return r.stdout
