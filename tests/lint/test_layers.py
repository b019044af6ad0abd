#!/usr/bin/python3
"""The layering check (tools/check-layers) on the real core/ and on copies
of it with one include planted that breaks a rule: the real tree passes,
each planted include fails with a line naming its file and line.  Run by
meson test (suite lint) as one test; exits 1 on the first surprise."""

import pathlib
import shutil
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[2]
CHECK = REPO / "tools" / "check-layers"


def run(core):
    p = subprocess.run([sys.executable, str(CHECK), str(core)],
                       capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def planted(tmp, rel, line):
    """A copy of core/ with `line` added to core/<rel> after its first
    line; the copy's folder."""
    core = tmp / "core"
    if core.exists():
        shutil.rmtree(core)
    shutil.copytree(REPO / "core", core)
    path = core / rel
    first, rest = path.read_text().split("\n", 1)
    path.write_text(first + "\n" + line + "\n" + rest)
    return core


def expect(cond, what, out):
    if not cond:
        print(f"FAILED: {what}\n--- check-layers said:\n{out}")
        sys.exit(1)
    print(f"ok: {what}")


def main():
    rc, out = run(REPO / "core")
    expect(rc == 0 and "every one points down" in out,
           "the real core/ keeps its layers", out)
    with tempfile.TemporaryDirectory() as t:
        tmp = pathlib.Path(t)
        cases = [
            # lib is the lowest folder: the store is above it
            ("lib/sbuf.c", '#include "store/store.h"', "core/lib/sbuf.c:2",
             "above its own folder"),
            # session may not reach up into run
            ("session/binding.h", '#include "run/jobs.h"',
             "core/session/binding.h:2", "above its own folder"),
            # a header named without its folder
            ("graph/graph.c", '#include "sbuf.h"', "core/graph/graph.c:2",
             "named by its folder"),
            ("formats/deck.c", "#include <fuse_lowlevel.h>",
             "core/formats/deck.c:2", "no FUSE in core"),
            ("store/tree.c", '#include "fs.h"', "core/store/tree.c:2",
             "not a header of core/"),
        ]
        for rel, line, where, why in cases:
            rc, out = run(planted(tmp, rel, line))
            expect(rc == 1 and where in out and why in out,
                   f"{line} in core/{rel} is refused ({why})", out)
        # a folder the order does not know
        core = planted(tmp, "status.c", "")
        (core / "extra").mkdir()
        (core / "extra" / "x.c").write_text("/* x */\n")
        rc, out = run(core)
        expect(rc == 1 and "extra/x.c: in a folder the layers do not name"
               in out, "a new folder must be placed in the order", out)
        # status, on top, may include the highest folder
        rc, out = run(planted(tmp, "status.c", '#include "run/run.h"'))
        expect(rc == 0, "status.c may include run/", out)


if __name__ == "__main__":
    main()
