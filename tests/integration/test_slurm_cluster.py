"""The single-node Slurm that tools/test starts (tools/slurm-cluster) works
for the user the tests run as: what the job-graph executor (issue 16) relies
on, submitted with sbatch, watched with squeue, cancelled with scancel.

The refusals are asserted word for word: the executor shows sbatch's
message as it is, and a Slurm that words it otherwise shows up here.
"""

import getpass
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import REPO, run


def read_when_there(path, timeout=30):
    """The content of a file a job writes, once it is there and complete
    (the jobs write a line ending in a newline)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            text = path.read_text()
            if text.endswith("\n"):
                return text
        except FileNotFoundError:
            pass
        if time.monotonic() > deadline:
            pytest.fail(f"no {path} after {timeout} s")
        time.sleep(0.02)


def stamp(path):
    """A job's command writing the time (seconds since the epoch) to path."""
    return f"date +%s.%N > {path}"


def test_job_runs_as_the_submitting_user(slurm, tmp_path):
    job = slurm.sbatch("-o", tmp_path / "out.%j", "--wrap",
                       f"id -un > {tmp_path}/who; echo hello", cwd=tmp_path)
    assert slurm.wait_state(job, "COMPLETED") == ("COMPLETED", "None")
    assert (tmp_path / "who").read_text() == getpass.getuser() + "\n"
    assert (tmp_path / f"out.{job}").read_text() == "hello\n"


def test_afterok_starts_after_the_first_ended(slurm, tmp_path):
    first = slurm.sbatch("-o", "/dev/null", "--wrap",
                         f"{stamp(tmp_path / 'a.start')}; sleep 2; "
                         f"{stamp(tmp_path / 'a.end')}", cwd=tmp_path)
    second = slurm.sbatch("-o", "/dev/null", f"--dependency=afterok:{first}",
                          "--wrap", stamp(tmp_path / "b.start"), cwd=tmp_path)
    read_when_there(tmp_path / "a.start")
    # the first runs for 2 s more: the second waits for it, saying so
    assert slurm.squeue(second) == ("PENDING", "Dependency")
    assert slurm.wait_state(second, "COMPLETED") == ("COMPLETED", "None")
    assert slurm.squeue(first) == ("COMPLETED", "None")
    a_end = float(read_when_there(tmp_path / "a.end"))
    b_start = float(read_when_there(tmp_path / "b.start"))
    assert b_start >= a_end, (a_end, b_start)
    print(f"afterok: the second job started {b_start - a_end:.3f} s after "
          "the first ended")


def test_afterok_on_a_failed_job_never_runs_and_scancel_removes_it(slurm, tmp_path):
    failing = slurm.sbatch("-o", "/dev/null", "--wrap", "exit 3", cwd=tmp_path)
    waiting = slurm.sbatch("-o", "/dev/null",
                           f"--dependency=afterok:{failing}", "--wrap",
                           f"touch {tmp_path}/ran", cwd=tmp_path)
    assert slurm.wait_state(failing, "FAILED") == ("FAILED", "NonZeroExitCode")
    want = ("PENDING", "DependencyNeverSatisfied")
    deadline = time.monotonic() + 10
    while slurm.squeue(waiting) != want and time.monotonic() < deadline:
        time.sleep(0.1)
    assert slurm.squeue(waiting) == want
    # %E: the dependency as the executor can show it
    r = slurm.run("squeue", "-h", "-t", "all", f"-j{waiting}", "-o", "%E")
    assert r.stdout == f"afterok:{failing}(failed)\n", r
    slurm.scancel(waiting)
    assert slurm.wait_state(waiting, "CANCELLED") == (
        "CANCELLED", "DependencyNeverSatisfied")
    assert not (tmp_path / "ran").exists()


def test_afterok_on_an_unknown_job_runs_at_once(slurm, tmp_path):
    """A trap for the executor: Slurm takes a dependency on a job it does
    not know (never was, or forgotten MinJobAge after it ended) as met."""
    job = slurm.sbatch("-o", "/dev/null", "--dependency=afterok:67000000",
                       "--wrap", f"touch {tmp_path}/ran", cwd=tmp_path)
    assert slurm.wait_state(job, "COMPLETED") == ("COMPLETED", "None")
    assert (tmp_path / "ran").exists()


@pytest.mark.parametrize("args, stderr", [
    (["-p", "nosuch"],
     "sbatch: error: invalid partition specified: nosuch\n"
     "sbatch: error: Batch job submission failed: Invalid partition name "
     "specified\n"),
    # EnforcePartLimits=ALL: without it the job is taken and stays
    # pending for ever (reason PartitionConfig)
    (["--cpus-per-task=64"],
     "sbatch: error: Batch job submission failed: More processors requested "
     "than permitted\n"),
    (["--mem=1000000"],
     "sbatch: error: Memory specification can not be satisfied\n"
     "sbatch: error: Batch job submission failed: Requested node "
     "configuration is not available\n"),
    (["--dependency=afterok:notajob"],
     "sbatch: error: Batch job submission failed: Job dependency problem\n"),
], ids=["partition", "cpus", "memory", "dependency"])
def test_sbatch_refuses_saying_why(slurm, tmp_path, args, stderr):
    r = slurm.run("sbatch", "--parsable", "-o", "/dev/null", *args,
                  "--wrap", f"touch {tmp_path}/ran", cwd=tmp_path)
    assert (r.returncode, r.stdout, r.stderr) == (1, "", stderr)
    assert not (tmp_path / "ran").exists()


def test_figures(slurm, tmp_path, capsys):
    """Prints how long a job takes to start (submitted at five points of
    slurmctld's 1 s tick) and 200 submissions take; asserts no time (a
    loaded machine is slower, not wrong)."""
    latencies = []
    for i in range(5):
        # slurmctld starts jobs on its 1 s tick: submitting right after the
        # last job started would always measure a whole tick
        time.sleep(i * 0.2)
        start = time.time()
        slurm.sbatch("-o", "/dev/null", "--wrap", stamp(tmp_path / f"s{i}"),
                     cwd=tmp_path)
        latencies.append(float(read_when_there(tmp_path / f"s{i}")) - start)
    # --hold: only the submissions are measured, and nothing runs after
    jobs = []
    start = time.monotonic()
    for _ in range(200):
        jobs.append(slurm.sbatch("--hold", "-o", "/dev/null", "--wrap", "true",
                                 cwd=tmp_path))
    took = time.monotonic() - start
    slurm.scancel(*jobs)
    r = slurm.run("sbatch", "--version")
    with capsys.disabled():
        print(f"\n{r.stdout.strip()}: sbatch to job start "
              f"{min(latencies):.3f}-{max(latencies):.3f} s "
              f"(median {sorted(latencies)[2]:.3f} s); 200 submissions "
              f"{took:.2f} s ({took / 200 * 1000:.1f} ms each)")
    assert len(set(jobs)) == 200


# -- tools/slurm-cluster itself, without a cluster -----------------------------

TOOL = REPO / "tools" / "slurm-cluster"


def test_tool_usage():
    r = run(TOOL)
    assert r.returncode == 2 and r.stdout == "", r
    assert r.stderr.startswith("usage: tools/slurm-cluster start|stop|env DIR\n")
    r = run(TOOL, "--help")
    assert r.returncode == 0 and r.stderr == "", r
    assert r.stdout.startswith("usage: tools/slurm-cluster start|stop|env DIR\n")


def test_env_is_all_a_client_needs(tmp_path):
    assert run(TOOL, "env", tmp_path).stdout == (
        f"SLURM_CONF={tmp_path.resolve()}/slurm.conf\n")


def test_stop_signals_only_the_daemons_of_its_folder(tmp_path):
    """stop goes by the pid files in DIR, and only to a process whose
    command line names DIR: a pid file left by a daemon that died names, once
    its pid is reused, some other process, which is left alone."""
    folder = tmp_path.resolve()
    (folder / "munge").mkdir()
    sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
    daemon = subprocess.Popen(sleep + [f"{folder}/slurm.conf"])
    other = subprocess.Popen(sleep)
    try:
        (folder / "slurmd.pid").write_text(f"{daemon.pid}\n")
        (folder / "munge" / "munged.pid").write_text(f"{other.pid}\n")
        r = run(TOOL, "stop", folder)
        assert (r.returncode, r.stderr) == (0, ""), r
        assert daemon.wait(timeout=10) == -signal.SIGTERM
        assert other.poll() is None
    finally:
        daemon.kill()
        other.kill()
        daemon.wait()
        other.wait()


def test_start_needs_root(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("runs as root")
    r = run(TOOL, "start", tmp_path)
    assert (r.returncode, r.stderr) == (
        1, "slurm-cluster: start needs root (slurmd runs jobs as their users)\n")
    assert os.listdir(tmp_path) == []
