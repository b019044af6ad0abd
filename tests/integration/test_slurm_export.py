"""submit.slurm.sh (core/gexport.c) run for real on the test cluster
(tools/slurm-cluster): a diamond's jobs run in their folders in the
order its edges say, each leaving .flowfs-exit; a job that fails cancels
the jobs after it instead of leaving them pending.  The script comes from
tests/unit/gexport_render (a real plan: jobspec_plan + gexport_slurm)."""

import time

import pytest

from conftest import SLURM_TIMEOUT
from graphs import edge, node, render

# A tool a test can watch: stamps its start and end, sleeps, exits with
# the code it is given.  (sh -c only for the test; a node's value is one
# argv item either way.)
TOOLS = {
    "step": {"command": ["sh", "-c",
                         "date +%s.%N > start; sleep {{ sleep }}; "
                         "date +%s.%N > end; exit {{ code }}"],
             "resources": {"cpus": 1, "memory_mib": 64, "time_minutes": 5}},
}


def diamond(code_b=0):
    """a -> b, a -> c, b + c -> d; b exits with code_b."""
    return {
        "nodes": [node("a", "step", sleep=1, code=0),
                  node("it's b", "step", sleep=1, code=code_b),
                  node("c", "step", sleep=0, code=0),
                  node("d", "step", sleep=0, code=0)],
        "edges": [edge("e1", "a", "it's b", "up"),
                  edge("e2", "a", "c", "up"),
                  edge("e3", "it's b", "d", "left"),
                  edge("e4", "c", "d", "right")],
    }


def submit(slurm, tmp_path, graph, tools=TOOLS):
    """Write submit.slurm.sh for `graph` with run_dir tmp_path/run and run
    it with bash: {node id: job id}, the run and the run_dir."""
    run_dir = tmp_path / "run"
    script = tmp_path / "submit.slurm.sh"
    script.write_text(render("slurm", graph, tools, run_dir=run_dir))
    done = slurm.run("bash", str(script), cwd=tmp_path)
    ids = {}
    for line in done.stdout.splitlines():
        nid, _, jid = line.rpartition(" ")
        ids[nid] = int(jid)
    return ids, done, run_dir


def wait_exit(path, timeout=SLURM_TIMEOUT):
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            pytest.fail(f"no {path} after {timeout} s")
        time.sleep(0.05)
    return path.read_text()


def test_diamond_runs_in_order(slurm, tmp_path):
    ids, done, run = submit(slurm, tmp_path, diamond())
    assert done.returncode == 0, done.stderr
    assert list(ids) == ["a", "it's b", "c", "d"]
    for nid in ids:
        assert slurm.wait_state(ids[nid], "COMPLETED") == ("COMPLETED",
                                                            "None")
    folder = {"a": run / "a", "it's b": run / "it_s_b", "c": run / "c",
              "d": run / "d"}
    for f in folder.values():
        code, when = wait_exit(f / ".flowfs-exit").split()
        assert code == "0" and int(when) > 0
        assert (f / ".flowfs-job.sh").exists()

    def t(nid, what):
        return float((folder[nid] / what).read_text())

    assert t("it's b", "start") >= t("a", "end")
    assert t("c", "start") >= t("a", "end")
    assert t("d", "start") >= max(t("it's b", "end"), t("c", "end"))


def test_failed_job_cancels_what_needs_it(slurm, tmp_path):
    ids, done, run = submit(slurm, tmp_path, diamond(code_b=3))
    assert done.returncode == 0, done.stderr
    assert slurm.wait_state(ids["it's b"], "FAILED")[0] == "FAILED"
    assert wait_exit(run / "it_s_b" / ".flowfs-exit").split()[0] == "3"
    assert slurm.wait_state(ids["c"], "COMPLETED")[0] == "COMPLETED"
    # --kill-on-invalid-dep=yes: d is cancelled, not pending for ever
    assert slurm.wait_state(ids["d"], "CANCELLED")[0] == "CANCELLED"
    assert not (run / "d" / "start").exists()


def test_sbatch_refusal_stops_naming_the_node(slurm, tmp_path):
    """A partition the cluster does not have: sbatch refuses the first
    job, the script stops there, naming it; nothing else is submitted."""
    tools = {"step": dict(TOOLS["step"],
                          resources={"partition": "nosuchpartition"})}
    ids, done, run_dir = submit(slurm, tmp_path, diamond(), tools)
    assert done.returncode == 1
    assert ids == {}
    assert "submit.slurm.sh: sbatch failed for node a\n" in done.stderr
    assert "invalid partition" in done.stderr.lower()
    assert not (run_dir / "it_s_b").exists()
