#!/usr/bin/python3
"""No session waits for another (issue 13 part 2): how long session A's
`stat` + `read` of its `status` takes, idle, while session B, in the
same mount, writes a 10,000-node parameters.json, reads a 200-round
summary.json and imports the largest DATCOM deck the limits allow, over
and over ("loaded"), while B writes a 10,000-node graph and reads its
Argo export, over and over ("exports"), and while B writes a 128 MiB file over the last one,
over and over ("copies").  Prints p50, p99 and max of A's probes for each
phase.

Run it:  tests/bench/run --contention [--seconds N] [--json FILE]
(builds <repo>/build-bench in release mode, then runs this file).

Not a test: nothing here asserts a time.  Needs root, /dev/fuse and
fusermount3.
"""

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_uploads as bu  # noqa: E402  (same folder; shared machinery)
from bench_graph import dumps as graph_dumps, make_doc  # noqa: E402
from bench_limits import Prober, bind, read_file, worst_deck  # noqa: E402
from bench_rounds import make_rounds  # noqa: E402
from bench_rounds import write_file  # noqa: E402
from bench_uploads import log  # noqa: E402


def figures(times):
    times = sorted(times)
    if not times:
        return {"probes": 0}
    return {"probes": len(times),
            "p50_ms": 1000 * statistics.median(times),
            "p99_ms": 1000 * times[min(len(times) - 1,
                                       int(0.99 * len(times)))],
            "max_ms": 1000 * times[-1]}


def session_b(root):
    """B's three sessions, set up untimed; one step of its load each call."""
    graph = os.path.join(root, "b-graph")
    rounds = os.path.join(root, "b-rounds")
    deck = os.path.join(root, "b-deck")
    for s in (graph, rounds, deck):
        os.mkdir(s)
    doc = graph_dumps(make_doc(10000, 10000)).encode()
    bind(rounds, "scientific-workflow",
         {"input": {"description": "d", "io_instructions": "i"}})
    for i, r in enumerate(make_rounds(200, random.Random(7)), 1):
        write_file(os.path.join(rounds, "rounds", f"{i}.json"),
                   json.dumps(r).encode())
    bind(deck, "datcom")
    deck_text = worst_deck()
    steps = [
        ("write a 10,000-node parameters.json",
         lambda: write_file(os.path.join(graph, "parameters.json"), doc)),
        ("read a 200-round summary.json",
         lambda: read_file(os.path.join(rounds, "output", "summary.json"))),
        ("import a 1 MiB deck of 3000 namelists",
         lambda: (write_file(os.path.join(deck, "uploads", "deck.dat"),
                             deck_text),
                  read_file(os.path.join(deck, "status")))),
    ]
    return steps


def session_b_exports(root):
    """B's graph session for the exports phase: two 10,000-node graphs in
    turn (so that each export is rendered anew), each read back as Argo's
    workflow."""
    graph = os.path.join(root, "b-exports")
    os.mkdir(graph)
    docs = [graph_dumps(make_doc(10000, 10000, seed)).encode()
            for seed in (0, 1)]
    turn = iter(lambda: docs.reverse() or docs[0], None)
    return [
        ("write another 10,000-node graph",
         lambda: write_file(os.path.join(graph, "parameters.json"),
                            next(turn))),
        ("read its output/workflow.argo.yaml",
         lambda: read_file(os.path.join(graph, "output",
                                        "workflow.argo.yaml"))),
    ]


def run_steps(steps, seconds, done):
    """Run `steps` in turn for `seconds`; each one's times into done."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for name, step in steps:
            t0 = time.perf_counter()
            step()
            done.setdefault(name, []).append(time.perf_counter() - t0)


# The last phase: B writes a 128 MiB file over and over (each open with
# O_TRUNC cuts the last one's 2048 chunks; the writes store a chunk every
# 64 KiB, 8 MiB a transaction).
COPY = os.urandom(128 * 1024 * 1024)
COPY_STEP = "write a 128 MiB file over the last one"


# A command for each label of the graph, so that its export is the whole
# plan and every task (without, it is one line saying what is missing).
TOOLS = {label: {"command": ["run", "{{ structure_file }}"]}
         for label in ("structure_generate", "apex_optimization",
                       "apex_calculation", "abacus_calculation",
                       "dpa_calculator")}


def run_once(binary, seconds):
    with tempfile.TemporaryDirectory(prefix="flowfs-contention-") as base:
        config = os.path.join(base, "config", "flowfs")
        os.makedirs(config)
        with open(os.path.join(config, "tools.json"), "w") as f:
            json.dump(TOOLS, f)
        os.environ["XDG_CONFIG_HOME"] = os.path.dirname(config)
        t = bu.FlowfsTarget(base, binary)
        t.setup()
        try:
            a = os.path.join(t.root, "a")
            os.mkdir(a)
            steps = session_b(t.root)
            log("idle ...")
            with Prober(a) as idle:
                time.sleep(seconds)
            log("loaded ...")
            done = {}
            with Prober(a) as loaded:
                run_steps(steps, seconds, done)
            log("exports ...")
            with Prober(a) as exporting:
                run_steps(session_b_exports(t.root), seconds, done)
            log("copies ...")
            big = os.path.join(t.root, "b-copies", "uploads", "big")
            os.mkdir(os.path.dirname(os.path.dirname(big)))
            copies = []
            with Prober(a) as copying:
                end = time.perf_counter() + seconds
                while time.perf_counter() < end:
                    t0 = time.perf_counter()
                    write_file(big, COPY)
                    copies.append(time.perf_counter() - t0)
        finally:
            t.close()
    return {"idle": figures(idle.times), "loaded": figures(loaded.times),
            "exports": figures(exporting.times),
            "copies": figures(copying.times),
            "b_steps": {k: {"count": len(v),
                            "mean_s": statistics.mean(v) if v else None}
                        for k, v in {**done, COPY_STEP: copies}.items()}}


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--flowfs", required=True)
    ap.add_argument("--contention", action="store_true",
                    help=argparse.SUPPRESS)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    r = run_once(args.flowfs, args.seconds)
    print("session A: stat + read of status, while session B works in the"
          " same mount")
    print(f"{'phase':8} {'probes':>7} {'p50 ms':>8} {'p99 ms':>8}"
          f" {'max ms':>8}")
    for phase in ("idle", "loaded", "exports", "copies"):
        f = r[phase]
        print(f"{phase:8} {f['probes']:7d} {f.get('p50_ms', 0):8.2f}"
              f" {f.get('p99_ms', 0):8.2f} {f.get('max_ms', 0):8.2f}")
    print("session B, each step's mean:")
    for name, f in r["b_steps"].items():
        mean = f["mean_s"]
        print(f"  {name}: {f['count']} x"
              f" {mean * 1000 if mean is not None else float('nan'):.1f} ms")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(r, f, indent=2)


if __name__ == "__main__":
    main(sys.argv[1:])
