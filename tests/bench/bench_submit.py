#!/usr/bin/python3
"""Submit time of a 1,000-node job graph (issue 25: the work folders'
checks and the supervisor per job), measured through the mount.

    /usr/bin/python3 tests/bench/bench_submit.py --flowfs BIN [--nodes N]
        [--rounds R] [--work-dir DIR]

Not a test: nothing here asserts a time.  For each round it mounts BIN on
a fresh database (local executor, --jobs=2), writes a graph of N
independent nodes running `true` through parameters.json, and prints:
  - submit: how long `echo submit > ctl` takes (open, write, close: the
    plan, the rows, the jobs' folder checked), in ms;
  - done: from the submit to every job done (each job's folder made and
    checked, its script written, its supervisor started and gone), in s.
Then the median of each.  Run it as the user the daemon runs as.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def run_round(flowfs, nodes, work):
    top = tempfile.mkdtemp(prefix="flowfs-bench-submit-")
    mnt, cfg = os.path.join(top, "mnt"), os.path.join(top, "cfg")
    os.makedirs(os.path.join(cfg, "flowfs"))
    os.mkdir(mnt)
    with open(os.path.join(cfg, "flowfs", "tools.json"), "w") as f:
        json.dump({"t": {"command": ["true"],
                         "resources": {"cpus": 1}}}, f)
    env = dict(os.environ, XDG_CONFIG_HOME=cfg)
    work = work or os.path.join(top, "work")
    proc = subprocess.Popen([flowfs, "-f", f"--db={top}/db", "--jobs=2",
                             f"--work-dir={work}", mnt], env=env,
                            stderr=subprocess.DEVNULL)
    try:
        for _ in range(400):
            if os.path.ismount(mnt):
                break
            time.sleep(0.025)
        s = os.path.join(mnt, "s")
        os.mkdir(s)
        with open(os.path.join(s, "parameters.json")) as f:
            doc = json.load(f)
        doc["nodes"] = [{"id": f"n{i:04}", "label": "t"}
                        for i in range(nodes)]
        doc["edges"] = []
        with open(os.path.join(s, "parameters.json"), "w") as f:
            json.dump(doc, f)
        t0 = time.monotonic()
        with open(os.path.join(s, "ctl"), "w") as f:
            f.write("submit\n")
        t1 = time.monotonic()
        while True:
            with open(os.path.join(s, "status.json")) as f:
                g = json.load(f)["graph"]
            if g and g["state"] != "running":
                break
            time.sleep(0.05)
        t2 = time.monotonic()
        assert (g["state"], g["done"]) == ("done", nodes), g
        return (t1 - t0) * 1000, t2 - t0
    finally:
        subprocess.run(["fusermount3", "-u", mnt], check=False)
        proc.wait(timeout=60)
        subprocess.run(["rm", "-rf", top], check=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flowfs", required=True)
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work-dir", default=None)
    a = ap.parse_args()
    submits, dones = [], []
    for r in range(a.rounds):
        sub, done = run_round(a.flowfs, a.nodes, a.work_dir)
        submits.append(sub)
        dones.append(done)
        print(f"round {r + 1}: submit {sub:.0f} ms, all {a.nodes} done in "
              f"{done:.1f} s", flush=True)
    print(f"median: submit {statistics.median(submits):.0f} ms, done in "
          f"{statistics.median(dones):.1f} s ({a.flowfs}, {a.nodes} nodes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
