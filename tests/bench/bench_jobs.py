#!/usr/bin/python3
"""The job graph's executors (issue 16), measured through the mount.

Run it:  tests/bench/run --jobs [--nodes N] [--local-jobs N] [--json FILE]
(builds <repo>/build-bench in release mode, then runs this file), or
directly:  sudo /usr/bin/python3 tests/bench/bench_jobs.py --flowfs BIN.

Not a test: nothing here asserts a time.  It prints:
  - Slurm: a graph of --nodes (1,000) trivial jobs, ten wide layers deep
    each on one job of the layer before, submitted to a single-node test
    cluster (tools/slurm-cluster, started here unless FLOWFS_SLURM_CONF
    names one): the time from `echo submit > ctl` to every job submitted,
    to every job done, and the scheduler requests per node (sbatch,
    squeue and scancel calls counted by shims on the daemon's PATH);
  - local: --local-jobs (200) trivial jobs (`true`) as a chain and as a
    fan, the daemon's overhead per job: the run's wall time per job minus
    what `bash .flowfs-job.sh` of the same script takes run directly.
Needs root (the test cluster), /dev/fuse and fusermount3.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


class Mount:
    def __init__(self, flowfs, top, args, env):
        self.mnt = os.path.join(top, "mnt")
        os.makedirs(self.mnt, exist_ok=True)
        self.proc = subprocess.Popen(
            [flowfs, "-f", f"--db={top}/db.sqlite", *args, self.mnt],
            env=env, stderr=subprocess.DEVNULL)
        for _ in range(200):
            if os.path.ismount(self.mnt):
                return
            time.sleep(0.05)
        raise RuntimeError("flowfs did not mount")

    def close(self):
        subprocess.run(["fusermount3", "-u", self.mnt], check=False)
        self.proc.wait(timeout=30)
        if os.path.ismount(self.mnt):
            raise RuntimeError("unmount failed")


def graph(session, n, width, label):
    """n nodes, `width` wide layers, each on one node of the layer before."""
    nodes = [{"id": f"n{i}", "label": label} for i in range(n)]
    edges = [{"id": f"e{i}", "source_node_id": f"n{i - width}",
              "target_node_id": f"n{i}", "target_parameter_name": "input",
              "source_parameter_name": f"out_{label}"}
             for i in range(width, n)]
    write(os.path.join(session, "parameters.json"),
          json.dumps({"nodes": nodes, "edges": edges, "meta": {}}))


def states(session, n):
    counts = {}
    for i in range(n):
        try:
            with open(os.path.join(session, "jobs", f"n{i}", "state")) as f:
                s = f.readline().strip()
        except FileNotFoundError:
            s = "none"
        counts[s] = counts.get(s, 0) + 1
    return counts


def wait_graph(session, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with open(os.path.join(session, "status.json")) as f:
            g = json.load(f)["graph"]
        if g and g["state"] != "running":
            return g
        time.sleep(0.1)
    raise RuntimeError(f"the graph did not end in {timeout} s")


def shims(folder, count_file):
    os.makedirs(folder, exist_ok=True)
    for cmd in ("sbatch", "squeue", "scancel"):
        real = shutil.which(cmd)
        write(os.path.join(folder, cmd),
              f'#!/bin/sh\necho {cmd} >> {count_file}\nexec {real} "$@"\n')
        os.chmod(os.path.join(folder, cmd), 0o755)


def bench_slurm(flowfs, nodes, result):
    conf = os.environ.get("FLOWFS_SLURM_CONF")
    top = tempfile.mkdtemp(prefix="flowfs-bench-jobs-")
    cluster = None
    try:
        if not conf:
            cluster = os.path.join(top, "slurm")
            os.makedirs(cluster)
            subprocess.run([os.path.join(REPO, "tools", "slurm-cluster"),
                            "start", cluster], check=True,
                           stdout=subprocess.DEVNULL)
            conf = os.path.join(cluster, "slurm.conf")
        counts = os.path.join(top, "calls")
        shims(os.path.join(top, "bin"), counts)
        cfg = os.path.join(top, "cfg", "flowfs")
        os.makedirs(cfg)
        write(os.path.join(cfg, "tools.json"),
              json.dumps({"t": {"command": ["true"],
                                "resources": {"cpus": 1,
                                              "memory_mib": 64}}}))
        env = dict(os.environ, SLURM_CONF=conf,
                   XDG_CONFIG_HOME=os.path.join(top, "cfg"),
                   PATH=os.path.join(top, "bin") + ":" + os.environ["PATH"])
        m = Mount(flowfs, top, ["--executor=slurm",
                                f"--work-dir={top}/work"], env)
        try:
            s = os.path.join(m.mnt, "s")
            os.mkdir(s)
            graph(s, nodes, 10, "t")
            t0 = time.monotonic()
            write(os.path.join(s, "ctl"), "submit\n")
            while True:
                c = states(s, nodes)
                if not c.get("queued") and not c.get("none"):
                    break
                time.sleep(0.5)
            submitted = time.monotonic() - t0
            g = wait_graph(s, 3600)
            done = time.monotonic() - t0
        finally:
            m.close()
        calls = open(counts).read().split()
        result["slurm"] = {
            "nodes": nodes, "state": g["state"], "done": g["done"],
            "all_submitted_s": round(submitted, 2),
            "all_done_s": round(done, 2),
            "submit_ms_per_node": round(1000 * submitted / nodes, 2),
            "sbatch_per_node": calls.count("sbatch") / nodes,
            "squeue_calls": calls.count("squeue"),
            "scancel_calls": calls.count("scancel"),
        }
    finally:
        if cluster:
            subprocess.run([os.path.join(REPO, "tools", "slurm-cluster"),
                            "stop", cluster], check=False,
                           stdout=subprocess.DEVNULL)
        shutil.rmtree(top, ignore_errors=True)


def bench_local(flowfs, n, result):
    top = tempfile.mkdtemp(prefix="flowfs-bench-local-")
    try:
        cfg = os.path.join(top, "cfg", "flowfs")
        os.makedirs(cfg)
        write(os.path.join(cfg, "tools.json"),
              json.dumps({"t": {"command": ["true"]}}))
        env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(top, "cfg"))
        m = Mount(flowfs, top, [f"--work-dir={top}/work"], env)
        try:
            for shape, width in (("chain", 1), ("fan", n - 1)):
                s = os.path.join(m.mnt, shape)
                os.mkdir(s)
                graph(s, n, width, "t")
                t0 = time.monotonic()
                write(os.path.join(s, "ctl"), "submit\n")
                g = wait_graph(s, 600)
                wall = time.monotonic() - t0
                script = None
                for root, _, files in os.walk(os.path.join(top, "work")):
                    if ".flowfs-job.sh" in files:
                        script = os.path.join(root, ".flowfs-job.sh")
                        break
                t1 = time.monotonic()
                for _ in range(50):
                    subprocess.run(["bash", script], cwd=os.path.dirname(
                        script), check=False)
                direct = (time.monotonic() - t1) / 50
                result[f"local_{shape}"] = {
                    "jobs": n, "state": g["state"],
                    "wall_s": round(wall, 2),
                    "ms_per_job": round(1000 * wall / n, 2),
                    "direct_ms_per_job": round(1000 * direct, 2),
                    "overhead_ms_per_job": round(
                        1000 * (wall / n - direct), 2),
                }
        finally:
            m.close()
    finally:
        shutil.rmtree(top, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flowfs", required=True)
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--local-jobs", type=int, default=200)
    ap.add_argument("--json")
    ap.add_argument("--only", default="slurm,local")
    a = ap.parse_args()
    result = {}
    if "local" in a.only:
        log(f"local: {a.local_jobs} jobs as a chain and as a fan")
        bench_local(a.flowfs, a.local_jobs, result)
    if "slurm" in a.only:
        log(f"slurm: {a.nodes} jobs to the test cluster")
        bench_slurm(a.flowfs, a.nodes, result)
    for k, v in result.items():
        print(f"{k}: " + ", ".join(f"{kk} {vv}" for kk, vv in v.items()))
    if a.json:
        write(a.json, json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
