#!/usr/bin/python3
"""Side-by-side benchmark of rounds/ and the transcripts (issue 6) at 200
rounds of 20 KB each in one scientific-workflow session.

Run it:  tests/bench/run --rounds [--rounds-count N] [--reps N] [--json FILE]
(builds <repo>/build-bench in release mode, then runs this file), or
directly:  sudo /usr/bin/python3 tests/bench/bench_rounds.py --flowfs BIN.

Not a test: nothing here asserts a time.  Every operation is measured on
each side in the same run, interleaved rep by rep (bench_uploads.py's
machinery), and reported as medians:
  - writing the N rounds (create + write + close of rounds/<n>.json) against
    writing the same bytes as N plain files on tmpfs and fuse-overlayfs;
  - `cat output/summary.json` and `cat output/summary_readable.txt`, cold
    (flowfs and fuse-overlayfs remounted first) and warm, against `cat` of
    a file holding the same bytes on tmpfs and fuse-overlayfs, and against
    Python assembling the transcript as seed 004's code does plus
    json.dumps(indent=2, ensure_ascii=False) in this process (the
    "python" column); goal: well under a second;
  - adding round N+1 to the N-round run and to a 1-round run (ms per
    write), so that O(N) work per write shows as a ratio;
  - the daemon's RSS afterwards.
It also checks, not times, that summary.json is byte for byte what
json.dumps prints for the conversation the seed describes.
Needs root, /dev/fuse, fusermount3 and fuse-overlayfs.
"""

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_uploads as bu  # noqa: E402  (same folder; shared machinery)
from bench_uploads import Goal, Row, log  # noqa: E402

SESSION = "bench"
SMALL = "small"
ROUND_BYTES = 20 * 1024
TAGS = ("Phenomenon", "Hypothesis", "Model", "Experiment", "Observation",
        "Inference", "Conclusion")


# ---------------------------------------------------------------- the rounds

def filler(rng, n):
    """About n UTF-8 bytes of code-and-prose-like text."""
    words = ["df = pd.read_csv('train.csv')", "print(df['Fare'].mean())",
             "平均票价", "乘客", "Mean fare: 32.204208", "\tfor row in rows:",
             "hypothesis", "\"quoted\"", "a\\b", "x < y > z", "✓"]
    out, size = [], 0
    while size < n:
        w = rng.choice(words)
        out.append(w)
        size += len(w.encode()) + 1
    return "\n".join(out) if rng.random() < 0.5 else " ".join(out)


def make_rounds(n, rng):
    """n rounds, none concluding (so one more may follow), ~20 KB each."""
    rounds = []
    for i in range(1, n + 1):
        share = ROUND_BYTES // 8
        r = {"phenomenon": filler(rng, share)} if i == 1 else \
            {"inference": filler(rng, share)}
        r.update({"hypothesis": filler(rng, share), "model": filler(rng, share),
                  "experiment": filler(rng, 3 * share),
                  "observation": filler(rng, 2 * share)})
        rounds.append(r)
    return rounds


def dumps(obj):
    return json.dumps(obj, indent=2, ensure_ascii=False)


def python_transcript(description, io, rounds):
    """The seed's assembly (as test_rounds_fidelity.py spells it out)."""
    blocks = []
    last = None
    for i, r in enumerate(rounds):
        blocks.append(("Phenomenon" if i == 0 else "Inference",
                       r["phenomenon" if i == 0 else "inference"]))
        if r.get("conclusion") is not None:
            blocks.append(("Conclusion", r["conclusion"]))
            blocks.append(("Observation", r.get("observation", last)))
            continue
        for key in ("hypothesis", "model", "experiment"):
            blocks.append((key.capitalize(), r[key]))
        if r.get("observation") is not None:
            blocks.append(("Observation", r["observation"]))
            last = r["observation"]
    content = "\n\n".join(f"<{t}>\n{v}\n</{t}>" for t, v in blocks)
    conv = [{"role": "user", "content": f"{description}\n\nI/O Requirements:\n{io}"},
            {"role": "assistant", "content": content}]
    readable = "".join(f"=== {m['role'].upper()} ===\n{m['content']}\n\n{'=' * 80}\n\n"
                       for m in conv)
    return dumps(conv), readable


class RoundsCtx(bu.Ctx):
    def __init__(self, n):
        super().__init__(quick=True)     # uploads sizes unused here
        self.n = n
        rng = random.Random(200)
        self.description = "泰坦尼克数据集的平均票价是多少？ " + filler(rng, 300)
        self.io = "write the mean fare with two decimals to output.txt"
        self.rounds = make_rounds(n, rng)
        self.round_bytes = [json.dumps(r, ensure_ascii=False).encode()
                            for r in self.rounds]
        summary, readable = python_transcript(self.description, self.io, self.rounds)
        self.summary = summary.encode()
        self.readable = readable.encode()
        extra = make_rounds(n + 1, random.Random(201))[-1]
        self.extra = json.dumps(extra, ensure_ascii=False).encode()
        self.second = json.dumps(make_rounds(2, random.Random(202))[-1],
                                 ensure_ascii=False).encode()
        self.counter = 0


def write_file(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        bu.write_all(fd, data)
    finally:
        os.close(fd)


def setup_session(t, ctx, name):
    """A session (flowfs) or folder bound and described; its rounds folder."""
    s = os.path.join(t.root, name)
    os.mkdir(s)
    if t.name == "flowfs":
        write_file(os.path.join(s, "session.json"),
                   json.dumps({"skill": "scientific-workflow"}).encode())
        write_file(os.path.join(s, "request.json"), json.dumps({"input": {
            "description": ctx.description, "io_instructions": ctx.io}}).encode())
    else:
        os.mkdir(os.path.join(s, "rounds"))
        os.mkdir(os.path.join(s, "output"))
    return os.path.join(s, "rounds")


def summary_path(t, name, readable=False):
    return os.path.join(t.root, name, "output",
                        "summary_readable.txt" if readable else "summary.json")


def build(t, ctx):
    """The N-round session and the 1-round one (untimed)."""
    rounds = setup_session(t, ctx, SESSION)
    for i, data in enumerate(ctx.round_bytes, 1):
        write_file(os.path.join(rounds, f"{i}.json"), data)
    small = setup_session(t, ctx, SMALL)
    write_file(os.path.join(small, "1.json"), ctx.round_bytes[0])
    if t.name != "flowfs":   # what flowfs generates, as plain files
        write_file(summary_path(t, SESSION), ctx.summary)
        write_file(summary_path(t, SESSION, True), ctx.readable)


# ---------------------------------------------------------------- measurements

def m_write_all(t, ctx):
    """Seconds to write the N rounds into a fresh session."""
    ctx.counter += 1
    rounds = setup_session(t, ctx, f"w{ctx.counter}")
    t0 = time.perf_counter()
    for i, data in enumerate(ctx.round_bytes, 1):
        write_file(os.path.join(rounds, f"{i}.json"), data)
    return time.perf_counter() - t0


def cat_seconds(path, expect):
    t0 = time.perf_counter()
    r = subprocess.run(["cat", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"cat {path}: {r.stderr.decode().strip()}")
    if r.stdout != expect:
        raise RuntimeError(f"cat {path}: {len(r.stdout)} bytes differ from the "
                           f"{len(expect)} expected")
    return dt


def _cat(readable, cold):
    def m(t, ctx):
        path = summary_path(t, SESSION, readable)
        expect = ctx.readable if readable else ctx.summary
        if cold and t.is_fuse:
            t.remount()
        elif not cold:
            cat_seconds(path, expect)
        return cat_seconds(path, expect)
    return m


def _add_round(name, number):
    """ms to write round `number` into session `name` (removed untimed)."""
    def m(t, ctx):
        path = os.path.join(t.root, name, "rounds", f"{number}.json")
        data = ctx.extra if number > 2 else ctx.second
        times = []
        for _ in range(20):
            t0 = time.perf_counter()
            write_file(path, data)
            times.append(time.perf_counter() - t0)
            os.unlink(path)
        return statistics.median(times) * 1000
    return m


def python_seconds(ctx, readable):
    t0 = time.perf_counter()
    summary, text = python_transcript(ctx.description, ctx.io, ctx.rounds)
    (text if readable else summary).encode()
    return time.perf_counter() - t0


# ---------------------------------------------------------------- main

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds-count", type=int, default=200,
                   help="rounds in the big session (default 200, at most 999)")
    p.add_argument("--only", default="tmpfs,overlayfs,flowfs",
                   help="targets (flowfs always)")
    p.add_argument("--flowfs", default=os.environ.get("FLOWFS_BIN", bu.default_flowfs()),
                   help="flowfs binary (default: build-bench/fs/flowfs in the repo)")
    p.add_argument("--reps", type=int, default=3, help="repetitions (median)")
    p.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    a = p.parse_args(argv)
    a.only = {x.strip() for x in a.only.split(",") if x.strip()} | {"flowfs"}
    return a


def main(argv):
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, bu.on_sigterm)
    if not os.access(args.flowfs, os.X_OK):
        log(f"error: no flowfs binary at {args.flowfs} (tests/bench/run --rounds builds it)")
        return 2
    if not 1 <= args.rounds_count < 1000:
        log("error: --rounds-count must be 1..999")
        return 2
    os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="flowfs-bench-cfg-")
    load_start = os.getloadavg()[0]
    t_start = time.monotonic()
    n = args.rounds_count
    ctx = RoundsCtx(n)
    base = tempfile.mkdtemp(prefix="flowfs-bench-")
    targets, rows = [], []
    identical = False
    try:
        flowfs = bu.FlowfsTarget(base, args.flowfs)
        flowfs.session = "scratch"
        if "tmpfs" in args.only:
            targets.append(bu.TmpfsTarget(base))
        if "overlayfs" in args.only:
            targets.append(bu.OverlayTarget(base))
        targets.append(flowfs)
        for t in targets:
            t.setup()
            log(f"filling {t.name}...")
            build(t, ctx)
        with open(summary_path(flowfs, SESSION), "rb") as f:
            identical = f.read() == ctx.summary
        mb = f"{len(ctx.summary) / bu.MiB:.1f} MiB"
        under = Goal(below=1.0, text="< 1 s")
        rows = [
            Row(f"write {n} rounds of 20 KB", "s", higher_better=False,
                fn=m_write_all),
            Row(f"cat output/summary.json ({mb}), cold", "s",
                higher_better=False, fn=_cat(False, True), goal=under),
            Row(f"cat output/summary.json ({mb}), warm", "s",
                higher_better=False, fn=_cat(False, False), goal=under),
            Row("cat output/summary_readable.txt, cold", "s",
                higher_better=False, fn=_cat(True, True), goal=under),
            Row(f"add round {n + 1} to the {n}-round run", "ms/op",
                higher_better=False, fn=_add_round(SESSION, n + 1)),
            Row("add round 2 to a 1-round run", "ms/op",
                higher_better=False, fn=_add_round(SMALL, 2)),
        ]
        for row in rows:
            log(f"{row.label}:")
            bu.measure(row, targets, ctx, args.reps)
        for row, readable in ((rows[1], False), (rows[2], False), (rows[3], True)):
            py = [python_seconds(ctx, readable) for _ in range(args.reps)]
            row.samples["python"] = py
            row.values["python"] = statistics.median(py)
        rows.append(bu.rss_row(targets))
        bu.close_all(targets)
    finally:
        bu.close_all(targets)
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(os.environ["XDG_CONFIG_HOME"], ignore_errors=True)

    print()
    print(f"flowfs rounds benchmark ({n} rounds of ~20 KB): median of {args.reps}, "
          f"interleaved, {time.monotonic() - t_start:.0f} s")
    for line in bu.describe_env(argparse.Namespace(only=sorted(args.only),
                                                   flowfs=args.flowfs), load_start):
        print("  " + line)
    print(f"  summary.json: {len(ctx.summary):,} bytes; byte-identical to json.dumps "
          f"of the seed's conversation: {'yes' if identical else 'NO'}")
    print()
    print(bu.table(rows, ("tmpfs", "overlayfs", "python"), ("overlayfs", "python")))
    print()
    print("Ratios are oriented so that > 1 means flowfs is better (faster or smaller).")
    print("tmpfs and fuse-overlayfs read a file holding the same bytes; python = the seed's")
    print("assembly of the transcript plus json.dumps(indent=2, ensure_ascii=False) in this")
    print("process.  Cold = flowfs and fuse-overlayfs remounted before the cat.")
    for note in ctx.notes:
        print("note: " + note)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rounds": n, "reps": args.reps, "bytes_identical": identical,
                       "rows": bu.rows_json(rows)}, f, indent=2)
    return 0 if identical else 1


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        log("interrupted; everything unmounted")
        sys.exit(130)
