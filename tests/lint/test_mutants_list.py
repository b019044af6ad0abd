#!/usr/bin/python3
"""tests/mutants.txt against the checkout (tools/mutate --check): each
mutant's text stands exactly once in its file, so that a file changed
since its mutants were written fails here and not halfway through a
mutation run; and a list with a stale mutant is refused, naming it.  Run
by meson test (suite lint); exits 1 on the first surprise."""

import pathlib
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[2]
MUTATE = REPO / "tools" / "mutate"


def check(*args):
    p = subprocess.run([sys.executable, str(MUTATE), "--check", *args],
                       capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def main():
    rc, out = check()
    if rc != 0:
        print(f"tests/mutants.txt has gone stale:\n{out}")
        return 1
    print(out.strip())
    with tempfile.TemporaryDirectory() as tmp:
        stale = pathlib.Path(tmp) / "mutants.txt"
        stale.write_text(
            "name: planted-stale\nmodule: lib/sbuf\nfile: core/lib/sbuf.c\n"
            "find: this text is in no file of flowfs\n"
            "replace: nor this\ntests: sbuf\n")
        rc, out = check("--list", str(stale))
        if rc != 2 or "planted-stale: the text to change occurs 0 times" \
                not in out:
            print(f"a stale mutant was not refused (rc {rc}):\n{out}")
            return 1
        print("ok: a stale mutant is refused, named")
    return 0


if __name__ == "__main__":
    sys.exit(main())
