#!/usr/bin/python3
"""Side-by-side benchmark of the job graph (issue 4) at 10,000 nodes and
10,000 edges in one session.

Run it:  tests/bench/run --graph [--quick] [--reps N] [--json FILE]
(builds <repo>/build-bench in release mode, then runs this file), or
directly:  sudo /usr/bin/python3 tests/bench/bench_graph.py --flowfs BIN.

Not a test: nothing here asserts a time.  Like bench_uploads.py (whose
targets, rows, goals and table it reuses) it measures every operation on
each side in the same run, interleaved rep by rep, and prints medians and
the ratios DESIGN.md §10 sets goals for:
  - `cat parameters.json` of the 10k/10k graph against Python's
    json.dumps(doc, indent=2, ensure_ascii=False) of the same document in
    this process (goal: flowfs time / python time <= 1.0); cold (flowfs
    remounted first, so nothing rendered is cached) and warm;
  - `ls -l nodes/` (10,000 entries) against fuse-overlayfs's `ls -l` of a
    folder of 10,000 files holding the same bytes, cold (dentry/inode
    caches dropped) and warm (goal on cold: >= 0.25x fuse-overlayfs);
  - adding one node (create + write + close of nodes/<new>.json), adding
    one edge whose target reaches nothing, and one whose target reaches the
    whole 10k chain (the cycle check's worst case), in ms per operation,
    with the same operations on a session holding a single node, so that
    O(n) or worse work per write shows as a ratio;
  - open + read + close of one nodes/<id>.json (what `cat` does, timed in
    process so that no fork/exec hides the filesystem).
It also checks, not times, that parameters.json is byte for byte what
json.dumps prints for the document that was written.

The session is built by writing one parameters.json: N nodes shaped like
seed 000's, a chain of N-1 edges plus forward edges up to N edges (no
cycle).  Needs root, /dev/fuse, fusermount3 and fuse-overlayfs.
"""

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_uploads as bu  # noqa: E402  (same folder; shared machinery)
from bench_uploads import Goal, Row, log  # noqa: E402

SESSION = "bench"


# ---------------------------------------------------------------- the graph

def make_doc(n_nodes, n_edges, seed=0):
    """A seed-000 document: n_nodes nodes, a chain plus forward edges."""
    rnd = uuid.UUID(int=seed)
    labels = ["structure_generate", "apex_optimization", "apex_calculation",
              "abacus_calculation", "dpa_calculator"]
    nodes = []
    for i in range(1, n_nodes + 1):
        label = labels[i % len(labels)]
        nodes.append({
            "id": f"node-$id{i}",
            "node_uuid": str(uuid.uuid5(rnd, str(i))),
            "node_version": "1.2",
            "label": label,
            "position_x": float(i % 97) * 1.5,
            "position_y": 0.0,
            "system_values": {
                "machine_type": "c2_m8_cpu" if i % 3 else "c2_m4_cpu",
                "image": f"registry.dp.tech/dptech/dp/native/prod-16664/{label}:0.2.{i % 10}",
                "docker_image": "",
            },
            "input_parameters": [
                {"name": "structure_file", "type": "str",
                 "value": f"https://oss.example.com/s{i}.xyz"},
                {"name": "calculation_type", "type": "str",
                 "value": "scf" if i % 2 else "结构优化"},
            ],
            "output_parameters": [],
        })
    edges = []

    def edge(k, a, b):
        edges.append({"id": f"edge-$id{k}",
                      "source_node_id": f"node-$id{a}",
                      "source_parameter_name": f"out_{labels[a % len(labels)]}",
                      "target_node_id": f"node-$id{b}",
                      "target_parameter_name": "structure_file"})

    for i in range(1, n_nodes):
        if len(edges) < n_edges:
            edge(len(edges) + 1, i, i + 1)
    # Forward edges i -> i+2, i+3...: still a DAG, all distinct.
    step = 2
    while len(edges) < n_edges and step < n_nodes:
        for i in range(1, n_nodes - step + 1):
            if len(edges) >= n_edges:
                break
            edge(len(edges) + 1, i, i + step)
        step += 1
    return {"nodes": nodes, "edges": edges,
            "meta": {"template_uuid": str(uuid.uuid5(rnd, "template"))}}


def dumps(doc):
    return json.dumps(doc, indent=2, ensure_ascii=False)


# ---------------------------------------------------------------- targets

class GraphCtx(bu.Ctx):
    def __init__(self, quick, n):
        super().__init__(quick=True)     # uploads sizes unused here
        self.n = n
        self.doc = make_doc(n, n)
        self.text = dumps(self.doc).encode()
        self.node_bytes = [dumps(nd).encode() for nd in self.doc["nodes"]]
        self.counter = 0

    def fresh(self, prefix):
        self.counter += 1
        return f"{prefix}{self.counter}"


def graph_dirs(t):
    """(nodes folder, edges folder) of the big graph on target t."""
    if t.name == "flowfs":
        s = os.path.join(t.root, SESSION)
        return os.path.join(s, "nodes"), os.path.join(s, "edges")
    g = os.path.join(t.root, "graph")
    return os.path.join(g, "nodes"), os.path.join(g, "edges")


def small_dirs(t):
    """The same folders in a session (or folder) holding one node."""
    if t.name == "flowfs":
        s = os.path.join(t.root, "small")
        return os.path.join(s, "nodes"), os.path.join(s, "edges")
    g = os.path.join(t.root, "small")
    return os.path.join(g, "nodes"), os.path.join(g, "edges")


def write_file(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        bu.write_all(fd, data)
    finally:
        os.close(fd)


def build(t, ctx):
    """Make the 10k graph on t (untimed except for flowfs's one write)."""
    nodes, edges = graph_dirs(t)
    snodes, sedges = small_dirs(t)
    one = dumps({"label": "structure_generate",
                 "input_parameters": [{"name": "structure_file",
                                       "type": "str", "value": ""}]})
    if t.name == "flowfs":
        os.mkdir(os.path.join(t.root, "small"))
        write_file(os.path.join(snodes, "node-$id1.json"), one.encode())
        t0 = time.perf_counter()
        write_file(os.path.join(t.root, SESSION, "parameters.json"), ctx.text)
        dt = time.perf_counter() - t0
        got = len(os.listdir(nodes)), len(os.listdir(edges))
        if got != (ctx.n, ctx.n):
            raise RuntimeError(f"flowfs holds {got} nodes/edges, expected {ctx.n}")
        return dt
    for d in (nodes, edges, snodes, sedges):
        os.makedirs(d)
    for nd, data in zip(ctx.doc["nodes"], ctx.node_bytes):
        write_file(os.path.join(nodes, nd["id"] + ".json"), data)
    for e in ctx.doc["edges"]:
        write_file(os.path.join(edges, e["id"] + ".json"), dumps(e).encode())
    write_file(os.path.join(snodes, "node-$id1.json"), one.encode())
    return None


# ---------------------------------------------------------------- measurements

def cat_seconds(path, expect):
    """Seconds for `cat path` to hand over every byte (read through a pipe)."""
    t0 = time.perf_counter()
    r = subprocess.run(["cat", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"cat {path}: {r.stderr.decode().strip()}")
    if len(r.stdout) != expect:
        raise RuntimeError(f"cat {path}: {len(r.stdout)} bytes, expected {expect}")
    return dt, r.stdout


def python_dumps_seconds(doc):
    t0 = time.perf_counter()
    out = json.dumps(doc, indent=2, ensure_ascii=False).encode()
    dt = time.perf_counter() - t0
    return dt, out


def bench_cat(flowfs, ctx, reps):
    """cat parameters.json (cold: remounted; warm) vs json.dumps, interleaved."""
    path = os.path.join(flowfs.root, SESSION, "parameters.json")
    n = f"{ctx.n:,}"
    cold = Row(f"cat parameters.json, {n}+{n} (cold)", "s", higher_better=False,
               targets={"flowfs"}, goal=Goal(ratio=1, against="python",
                                             text="<= 1.0x python"))
    warm = Row(f"cat parameters.json, {n}+{n} (warm)", "s", higher_better=False,
               targets={"flowfs"}, goal=Goal(ratio=1, against="python",
                                             text="<= 1.0x python"))
    py = []
    for rep in range(reps):
        order = ["flowfs", "python"] if rep % 2 == 0 else ["python", "flowfs"]
        for who in order:
            if who == "python":
                dt, _ = python_dumps_seconds(ctx.doc)
                py.append(dt)
                log(f"  json.dumps(indent=2)               rep {rep + 1}: {dt:.3f} s")
                continue
            flowfs.remount()
            os.stat(os.path.join(flowfs.root, SESSION))
            dt, _ = cat_seconds(path, len(ctx.text))
            cold.samples.setdefault("flowfs", []).append(dt)
            dt2, _ = cat_seconds(path, len(ctx.text))
            warm.samples.setdefault("flowfs", []).append(dt2)
            log(f"  cat parameters.json cold/warm     rep {rep + 1}: {dt:.3f} / {dt2:.3f} s")
    for row in (cold, warm):
        row.samples["python"] = list(py)
        for name, vs in row.samples.items():
            row.values[name] = statistics.median(vs)
    return [cold, warm]


def m_ls_cold(t, ctx):
    nodes, _ = graph_dirs(t)
    if not bu.drop_caches(3) and t.is_fuse:
        ctx.note(f"{t.name}: cannot write drop_caches; remounting for cold ls")
        t.remount()
    return bu._ls_l(nodes, ctx, ctx.n)


def m_ls_warm(t, ctx):
    nodes, _ = graph_dirs(t)
    bu._ls_l(nodes, ctx, ctx.n)
    return bu._ls_l(nodes, ctx, ctx.n)


OPS = 20    # operations per repetition for the per-operation rows


def _per_op(fn, ops=OPS):
    """Median ms of `ops` calls of fn() (each timed alone)."""
    times = []
    for _ in range(ops):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def node_doc(ctx, nid):
    return dumps({"id": nid, "label": "apex_calculation",
                  "input_parameters": [{"name": "structure_file", "type": "str",
                                        "value": "https://oss.example.com/x.xyz"}],
                  }).encode()


def _add_node(dirs_of):
    def m(t, ctx):
        nodes, _ = dirs_of(t)

        def one():
            nid = ctx.fresh("node-$new")
            write_file(os.path.join(nodes, nid + ".json"), node_doc(ctx, nid))
        return _per_op(one)
    return m


def _edge_bytes(eid, src, tgt):
    return dumps({"id": eid, "source_node_id": src, "target_node_id": tgt,
                  "target_parameter_name": "structure_file"}).encode()


def _add_edge(dirs_of, reach_all):
    """ms per edge write.  reach_all: new isolated node -> the chain's head,
    so the cycle check walks everything the head reaches; else: the chain's
    last node -> a new isolated node (the target reaches nothing)."""
    def m(t, ctx):
        nodes, edges = dirs_of(t)
        big = dirs_of is graph_dirs
        head, last = "node-$id1", f"node-$id{ctx.n if big else 1}"
        # The other ends are made untimed first.
        ends = []
        for _ in range(OPS):
            nid = ctx.fresh("node-$end")
            write_file(os.path.join(nodes, nid + ".json"), node_doc(ctx, nid))
            ends.append(nid)
        it = iter(ends)

        def one():
            nid = next(it)
            eid = ctx.fresh("edge-$new")
            src, tgt = (nid, head) if reach_all else (last, nid)
            write_file(os.path.join(edges, eid + ".json"), _edge_bytes(eid, src, tgt))
        return _per_op(one)
    return m


def m_read_node(t, ctx):
    """ms per open+read+close of one node document."""
    nodes, _ = graph_dirs(t)
    path = os.path.join(nodes, f"node-$id{ctx.n // 2}.json")
    expect = len(ctx.node_bytes[ctx.n // 2 - 1])

    def one():
        fd = os.open(path, os.O_RDONLY)
        try:
            got = len(os.read(fd, 1 << 20))
        finally:
            os.close(fd)
        if got != expect:
            raise RuntimeError(f"{path}: read {got} bytes, expected {expect}")
    one()
    return _per_op(one, ops=200)


def check_bytes(flowfs, ctx):
    """parameters.json and one node file against json.dumps (not timed)."""
    s = os.path.join(flowfs.root, SESSION)
    with open(os.path.join(s, "parameters.json"), "rb") as f:
        got = f.read()
    ok = got == ctx.text
    nodes, _ = graph_dirs(flowfs)
    with open(os.path.join(nodes, "node-$id7.json"), "rb") as f:
        ok_node = f.read() == ctx.node_bytes[6]
    return ok, ok_node, len(got)


# ---------------------------------------------------------------- main

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="1,000 nodes and edges")
    p.add_argument("--nodes", type=int, help="graph size (default 10,000)")
    p.add_argument("--only", default="overlayfs,flowfs",
                   help="targets (flowfs always; overlayfs for the ls/write baselines)")
    p.add_argument("--flowfs", default=os.environ.get("FLOWFS_BIN", bu.default_flowfs()),
                   help="flowfs binary (default: build-bench/fs/flowfs in the repo)")
    p.add_argument("--reps", type=int, default=3, help="repetitions (median)")
    p.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    a = p.parse_args(argv)
    a.only = {x.strip() for x in a.only.split(",") if x.strip()} | {"flowfs"}
    if a.nodes is None:
        a.nodes = 1000 if a.quick else 10000
    return a


def main(argv):
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, bu.on_sigterm)
    if not os.access(args.flowfs, os.X_OK):
        log(f"error: no flowfs binary at {args.flowfs} (tests/bench/run --graph builds it)")
        return 2
    # No tool map from the user's own config: the document says everything.
    os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="flowfs-bench-cfg-")
    load_start = os.getloadavg()[0]
    t_start = time.monotonic()
    log(f"building a {args.nodes:,}-node, {args.nodes:,}-edge document...")
    ctx = GraphCtx(args.quick, args.nodes)
    base = tempfile.mkdtemp(prefix="flowfs-bench-")
    targets = []
    rows = []
    checks = None
    try:
        flowfs = bu.FlowfsTarget(base, args.flowfs)
        flowfs.session = SESSION
        if "overlayfs" in args.only:
            targets.append(bu.OverlayTarget(base))
        targets.append(flowfs)
        for t in targets:
            t.setup()
            log(f"filling {t.name}...")
            dt = build(t, ctx)
            if dt is not None:
                r = Row(f"write parameters.json, {args.nodes:,}+{args.nodes:,}", "s",
                        higher_better=False, targets={"flowfs"})
                r.values["flowfs"] = dt
                rows.append(r)
        checks = check_bytes(flowfs, ctx)

        log("cat parameters.json vs json.dumps:")
        rows[:0] = bench_cat(flowfs, ctx, args.reps)
        n = f"{args.nodes:,}"
        timed = [
            Row(f"ls -l nodes/ ({n} entries, cold)", "entries/s", fn=m_ls_cold,
                goal=Goal(ratio=0.25, text=">= 0.25x ovl")),
            Row(f"ls -l nodes/ ({n} entries, warm)", "entries/s", fn=m_ls_warm),
            Row("add one node (1-node session)", "ms/op", higher_better=False,
                fn=_add_node(small_dirs)),
            Row(f"add one node ({n}-node session)", "ms/op", higher_better=False,
                fn=_add_node(graph_dirs)),
            Row("add edge, target reaches nothing (1-node)", "ms/op",
                higher_better=False, fn=_add_edge(small_dirs, False),
                targets={"flowfs"}),
            Row(f"add edge, target reaches nothing ({n})", "ms/op",
                higher_better=False, fn=_add_edge(graph_dirs, False),
                targets={"flowfs"}),
            Row(f"add edge, target reaches all {n} (cycle check)", "ms/op",
                higher_better=False, fn=_add_edge(graph_dirs, True),
                targets={"flowfs"}),
            Row("open+read+close nodes/<one>.json", "ms/op",
                higher_better=False, fn=m_read_node),
        ]
        for row in timed:
            log(f"{row.label}:")
            bu.measure(row, targets, ctx, args.reps)
        rows = rows[:2] + timed + rows[2:]
        rows.append(bu.rss_row(targets))
        bu.close_all(targets)
    finally:
        bu.close_all(targets)
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(os.environ["XDG_CONFIG_HOME"], ignore_errors=True)

    print()
    print(f"flowfs job-graph benchmark ({args.nodes:,} nodes, {args.nodes:,} edges"
          f"{', --quick' if args.quick else ''}): median of {args.reps}, "
          f"interleaved, {time.monotonic() - t_start:.0f} s")
    for line in bu.describe_env(argparse.Namespace(only=sorted(args.only),
                                                   flowfs=args.flowfs), load_start):
        print("  " + line)
    print(f"  parameters.json: {checks[2]:,} bytes; byte-identical to json.dumps: "
          f"{'yes' if checks[0] else 'NO'}; a node file identical: "
          f"{'yes' if checks[1] else 'NO'}")
    print()
    print(bu.table(rows, ("python", "overlayfs"), ("overlayfs", "python")))
    print()
    for row in rows[:2]:
        f, py = row.values.get("flowfs"), row.values.get("python")
        if f and py:
            print(f"{row.label}: flowfs time / python time = {f / py:.2f} "
                  f"(goal <= 1.0)")
    print("Ratios are oriented so that > 1 means flowfs is better (faster or smaller).")
    print("python = json.dumps(doc, indent=2, ensure_ascii=False) of the same document")
    print("in this process; per-operation rows are the median of "
          f"{OPS} operations per rep.")
    for note in ctx.notes:
        print("note: " + note)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"nodes": args.nodes, "reps": args.reps,
                       "bytes_identical": checks[0],
                       "rows": bu.rows_json(rows)}, f, indent=2)
    return 0 if checks[0] else 1


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        log("interrupted; everything unmounted")
        sys.exit(130)
