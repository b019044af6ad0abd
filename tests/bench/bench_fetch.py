#!/usr/bin/python3
"""Side-by-side benchmark of URL inputs (issue 7): a file fetched from a
loopback HTTP server into a session's uploads/.

Run it:  tests/bench/run --fetch [--size-mib N] [--reps N] [--json FILE]

Not a test: nothing here asserts a time.  Each rep, interleaved:
  - flowfs: request.json names the URL; timed until status says the fetch
    is done (download to a scratch file, then stored in 1 MiB slices and
    renamed into uploads/);
  - tmpfs and fuse-overlayfs: `curl -sS -o <file> URL` onto them, the
    plain way to put the same bytes there;
and the bytes are checked afterwards.  Also the time `ls -l` of a session
folder takes while a fetch is going on (the mount must stay responsive).
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

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import bench_uploads as bu  # noqa: E402
from bench_uploads import Goal, Row, log  # noqa: E402
from fake_engine import FileServer  # noqa: E402

SKILL = {"type": "object", "properties": {
    "data": {"type": "string", "extensions": [".bin"]}}, "required": ["data"]}


def make_skill(root):
    d = os.path.join(root, "fetcher")
    os.makedirs(os.path.join(d, "assets"))
    with open(os.path.join(d, "SKILL.md"), "w") as f:
        f.write("# fetcher\n")
    with open(os.path.join(d, "assets", "input.schema.json"), "w") as f:
        json.dump(SKILL, f)
    with open(os.path.join(d, "assets", "runner.json"), "w") as f:
        json.dump({"id": "fetcher", "version": "1", "engines": ["gemini"],
                   "schemas": {"input": "assets/input.schema.json"}}, f)


def status(session):
    with open(os.path.join(session, "status")) as f:
        return f.read()


class Ctx(bu.Ctx):
    def __init__(self, size):
        super().__init__(quick=True)
        self.size = size
        self.counter = 0
        self.ls_ms = []


def m_fetch(server):
    def m(t, ctx):
        ctx.counter += 1
        name = f"f{ctx.counter}"
        url = f"{server.base}/file/big.bin"
        if t.name != "flowfs":
            path = os.path.join(t.work, name + ".bin")
            t0 = time.perf_counter()
            subprocess.run(["curl", "-sS", "-o", path, url], check=True)
            dt = time.perf_counter() - t0
            got = os.path.getsize(path)
            os.unlink(path)
        else:
            s = os.path.join(t.root, name)
            os.mkdir(s)
            with open(os.path.join(s, "session.json"), "w") as f:
                f.write('{"skill": "fetcher"}')
            t0 = time.perf_counter()
            with open(os.path.join(s, "request.json"), "w") as f:
                json.dump({"input": {"data": url}}, f)
            while "fetch uploads/data.bin: done" not in status(s):
                t1 = time.perf_counter()
                os.listdir(s)
                ctx.ls_ms.append((time.perf_counter() - t1) * 1000)
                if "failed" in status(s):
                    raise RuntimeError(status(s))
                time.sleep(0.005)
            dt = time.perf_counter() - t0
            got = os.path.getsize(os.path.join(s, "uploads", "data.bin"))
            shutil.rmtree(s)
        if got != ctx.size:
            raise RuntimeError(f"{t.name}: {got} bytes fetched, expected {ctx.size}")
        return ctx.size / bu.MiB / dt
    return m


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size-mib", type=int, default=256)
    p.add_argument("--flowfs", default=os.environ.get("FLOWFS_BIN", bu.default_flowfs()))
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--only", default="tmpfs,overlayfs,flowfs")
    p.add_argument("--json", metavar="FILE")
    args = p.parse_args(argv)
    args.only = {x.strip() for x in args.only.split(",") if x.strip()} | {"flowfs"}
    signal.signal(signal.SIGTERM, bu.on_sigterm)
    load_start = os.getloadavg()[0]
    t_start = time.monotonic()
    ctx = Ctx(args.size_mib * bu.MiB)
    server = FileServer()
    server.files["big.bin"] = os.urandom(1 << 20) * args.size_mib
    base = tempfile.mkdtemp(prefix="flowfs-bench-")
    skills = os.path.join(base, "skills")
    make_skill(skills)
    os.environ["XDG_CONFIG_HOME"] = os.path.join(base, "cfg")
    targets = []
    try:
        flowfs = bu.FlowfsTarget(base, args.flowfs)
        flowfs.command = lambda: [args.flowfs, f"--db={flowfs.db}", "-f",
                                  f"--skills={skills}", "--max-fetch=4G",
                                  "--fetch-allow-private", flowfs.mnt]
        if "tmpfs" in args.only:
            targets.append(bu.TmpfsTarget(base))
        if "overlayfs" in args.only:
            targets.append(bu.OverlayTarget(base))
        targets.append(flowfs)
        for t in targets:
            t.setup()
        row = Row(f"fetch {args.size_mib} MiB from loopback HTTP", "MiB/s",
                  fn=m_fetch(server), goal=Goal(ratio=0.5, text=">= 0.5x ovl"))
        log(f"{row.label}:")
        bu.measure(row, targets, ctx, args.reps)
        rows = [row, bu.rss_row(targets)]
        ls = Row("ls of the session while fetching (median)", "ms", higher_better=False)
        ls.values["flowfs"] = statistics.median(ctx.ls_ms) if ctx.ls_ms else None
        rows.append(ls)
        bu.close_all(targets)
    finally:
        bu.close_all(targets)
        server.close()
        shutil.rmtree(base, ignore_errors=True)
    print()
    print(f"flowfs fetch benchmark ({args.size_mib} MiB): median of {args.reps}, "
          f"interleaved, {time.monotonic() - t_start:.0f} s")
    for line in bu.describe_env(argparse.Namespace(only=sorted(args.only),
                                                   flowfs=args.flowfs), load_start):
        print("  " + line)
    print()
    print(bu.table(rows))
    print()
    print("tmpfs and fuse-overlayfs: curl -o onto them; flowfs: the URL in request.json,")
    print("timed until status says done (the file is whole in uploads/ then).")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"size_mib": args.size_mib, "rows": bu.rows_json(rows)}, f, indent=2)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        log("interrupted; everything unmounted")
        sys.exit(130)
