#!/usr/bin/python3
"""The worst case each input limit allows (issue 12, README "Security",
"Bounded work"): for a DATCOM deck, a job graph, the rounds, a context and
the documents being written, each at its limit, how long the write takes,
how long `cat` of what it feeds takes (the first read after a change, and
the next one), the daemon's peak memory (VmHWM), and how long a second
session's `stat` + `read` of its `status` waits meanwhile (every request
is served under one lock: that wait is the next issue's).

Run it:  tests/bench/run --limits [--reps N] [--json FILE]
(builds <repo>/build-bench in release mode, then runs this file), or
directly:  sudo /usr/bin/python3 tests/bench/bench_limits.py --flowfs BIN.

Not a test: nothing here asserts a time.  Needs root, /dev/fuse and
fusermount3.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_uploads as bu  # noqa: E402  (same folder; shared machinery)
from bench_rounds import write_file  # noqa: E402
from bench_uploads import log  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
from limits import (DECK_MAX_NAMELISTS, DECK_MAX_SIZE, DOC_MAX,  # noqa: E402
                    DOC_MOUNT_BUDGET, DOC_SESSION_BUDGET, GRAPH_MAX_NODES,
                    MiB, ROUND_MAX, ROUNDS_TOTAL_MAX)



def read_file(path):
    with open(path, "rb") as f:
        return f.read()


PROBE = r"""
import os, sys, time
path = sys.argv[1]
while True:
    t0 = time.perf_counter()
    os.stat(path)
    with open(path, "rb") as f:
        f.read()
    print(time.perf_counter() - t0, flush=True)
    time.sleep(0.005)
"""


class Prober:
    """Another session's `stat` + `read` of its status, every 5 ms while
    something runs, each one timed: the longest is how long that session
    waited.  A process of its own, as another user's would be (a thread
    of this one would wait for Python's lock, not for flowfs)."""

    def __init__(self, session):
        self.path = os.path.join(session, "status")
        self.times = []
        self.proc = None

    @property
    def worst(self):
        return max(self.times, default=0.0)

    def __enter__(self):
        self.proc = subprocess.Popen([sys.executable, "-c", PROBE, self.path],
                                     stdout=subprocess.PIPE, text=True)
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        out, _ = self.proc.communicate()
        self.times = [float(x) for x in out.split()]

def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


# ---------------------------------------------------------------- inputs

def worst_deck():
    """A deck at both its limits: 3000 namelists filling 1 MiB with
    values (continuation lines of 76 columns)."""
    per = DECK_MAX_SIZE // DECK_MAX_NAMELISTS - 2
    line = "  " + "1.0," * 19 + "\n"
    out = []
    for i in range(DECK_MAX_NAMELISTS):
        nl = " $FLTCON ALSCHD(1)=1.0,\n"
        while len(nl) + len(line) + 8 < per:
            nl += line
        out.append(nl + "  2.0$\n")
    text = "".join(out).encode()
    assert len(text) <= DECK_MAX_SIZE, len(text)
    return text


def worst_graph():
    """parameters.json with the most nodes, as big as a document may be."""
    pad = "x" * (DOC_MAX // GRAPH_MAX_NODES - 200)
    nodes = [{"id": f"n{i}", "label": "relax",
              "input_parameters": [{"name": "structure", "type": "str",
                                    "value": pad}]}
             for i in range(GRAPH_MAX_NODES)]
    doc = json.dumps({"nodes": nodes, "edges": [], "meta": {}}).encode()
    assert len(doc) <= DOC_MAX, len(doc)
    return doc


def round_doc(n, fill):
    base = ({"phenomenon": "P", "hypothesis": "H", "model": "M",
             "experiment": "print(1)"} if n == 1 else
            {"inference": "I", "hypothesis": "H", "model": "M",
             "experiment": "print(2)"})
    return json.dumps(dict(base, observation=fill)).encode()


def worst_context():
    calls = [{"id": str(i), "type": "function",
              "function": {"name": "run_terminal",
                           "arguments": json.dumps({"command": "y" * 600})}}
             for i in range(1200)]
    doc = json.dumps({"role": "assistant", "content": "done",
                      "tool_calls": calls})
    return doc.encode()


# ---------------------------------------------------------------- scenarios

def bind(session, skill, request=None):
    write_file(os.path.join(session, "session.json"),
               json.dumps({"skill": skill}).encode())
    if request is not None:
        write_file(os.path.join(session, "request.json"),
                   json.dumps(request).encode())


def measure(name, session, prober_session, write, read_path, pid):
    """write(); then cat read_path twice and stat it; the second session
    probed throughout."""
    with Prober(prober_session) as p:
        t_write = timed(write)
        t_first = timed(lambda: read_file(read_path))
        t_next = timed(lambda: read_file(read_path))
        t_stat = timed(lambda: os.stat(read_path))
    return {"what": name, "write_s": t_write, "first_read_s": t_first,
            "next_read_s": t_next, "stat_s": t_stat,
            "other_session_wait_s": p.worst,
            "daemon_hwm_mib": bu.proc_status(pid, "VmHWM") / MiB}


def s_deck(t, other, pid):
    s = os.path.join(t.root, "deck")
    os.mkdir(s)
    bind(s, "datcom")
    deck = worst_deck()
    path = os.path.join(s, "uploads", "deck.dat")
    return measure("deck: 1 MiB, 3000 namelists; cat status", s, other,
                   lambda: write_file(path, deck),
                   os.path.join(s, "status"), pid)


def s_graph(t, other, pid):
    s = os.path.join(t.root, "graph")
    os.mkdir(s)
    doc = worst_graph()
    return measure("graph: 20,000 nodes, 16 MiB; cat parameters.json", s,
                   other,
                   lambda: write_file(os.path.join(s, "parameters.json"),
                                      doc),
                   os.path.join(s, "parameters.json"), pid)


def s_rounds(t, other, pid):
    s = os.path.join(t.root, "rounds")
    os.mkdir(s)
    bind(s, "scientific-workflow",
         {"input": {"description": "d", "io_instructions": "i"}})
    fill = "z" * (ROUND_MAX - 200)
    count = ROUNDS_TOTAL_MAX // ROUND_MAX

    def write():
        for n in range(1, count + 1):
            write_file(os.path.join(s, "rounds", f"{n}.json"),
                       round_doc(n, fill))
    return measure(f"rounds: {count} of 1 MiB; cat output/summary.json", s,
                   other, write, os.path.join(s, "output", "summary.json"),
                   pid)


def s_context(t, other, pid):
    s = os.path.join(t.root, "context")
    os.mkdir(s)
    doc = worst_context()
    return measure(f"context: {len(doc) // 1024} KiB; cat context.txt", s,
                   other,
                   lambda: write_file(os.path.join(s, "context.json"), doc),
                   os.path.join(s, "context.txt"), pid)


def s_drafts(t, other, pid):
    """Every session's and the mount's budget of documents being written,
    filled: 16 descriptors with one byte at 16 MiB - 1 each; then one more
    refused."""
    fds, refused = [], None
    per = DOC_SESSION_BUDGET // DOC_MAX
    with Prober(other) as p:
        t0 = time.perf_counter()
        try:
            for i in range(DOC_MOUNT_BUDGET // DOC_SESSION_BUDGET + 1):
                s = os.path.join(t.root, f"drafts{i}")
                os.mkdir(s)
                for _ in range(per):
                    fd = os.open(os.path.join(s, "session.json"),
                                 os.O_WRONLY)
                    fds.append(fd)
                    os.pwrite(fd, b"x", DOC_MAX - 1)
        except OSError as e:
            refused = e.strerror
        t_write = time.perf_counter() - t0
        hwm = bu.proc_status(pid, "VmHWM") / MiB
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass
    return {"what": f"documents being written: {len(fds)} x 16 MiB"
                    f" (then: {refused})",
            "write_s": t_write, "other_session_wait_s": p.worst,
            "daemon_hwm_mib": hwm}


SCENARIOS = {"deck": s_deck, "graph": s_graph, "rounds": s_rounds,
             "context": s_context, "drafts": s_drafts}


def run_once(binary, only):
    """A fresh mount per scenario, so that each one's VmHWM is its own."""
    results = []
    for name in only:
        with tempfile.TemporaryDirectory(prefix="flowfs-limits-") as base:
            t = bu.FlowfsTarget(base, binary)
            t.setup()
            try:
                pid = bu.find_daemon_pid(binary, t.mnt)
                other = os.path.join(t.root, "other")
                os.mkdir(other)
                log(f"{name} ...")
                results.append(SCENARIOS[name](t, other, pid))
            finally:
                t.close()
    return results


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--flowfs", required=True)
    ap.add_argument("--limits", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", default=",".join(SCENARIOS))
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    only = [s for s in args.only.split(",") if s]
    runs = [run_once(args.flowfs, only) for _ in range(args.reps)]
    keys = ("write_s", "first_read_s", "next_read_s", "stat_s",
            "other_session_wait_s", "daemon_hwm_mib")
    table = []
    for i, first in enumerate(runs[0]):
        row = {"what": first["what"]}
        for k in keys:
            if k in first:
                row[k] = statistics.median(r[i][k] for r in runs)
        table.append(row)
    print(f"median of {args.reps} runs; times in s, memory in MiB")
    print(f"{'what':62} {'write':>7} {'1st rd':>7} {'next':>7} {'stat':>7}"
          f" {'wait':>7} {'VmHWM':>7}")
    for row in table:
        cells = [f"{row[k]:7.3f}" if k in row else f"{'-':>7}"
                 for k in keys[:-1]]
        print(f"{row['what'][:62]:62} {' '.join(cells)}"
              f" {row['daemon_hwm_mib']:7.0f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(table, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
