"""Real Digital DATCOM as the tests' oracle (issue 28): builds it from
../shared/datcom/aircraft-datcom (its BUILD.md recipe) into the build
folder, runs a deck through it with a timeout, and reads its output.

flowfs never runs DATCOM; the tests do, so that every deck flowfs writes is
checked by the program that reads it rather than by rules restated here.

    python3 tests/integration/datcom_oracle.py build BUILD_DIR
        builds BUILD_DIR/datcom/datcom once (tools/test calls this); prints
        why not and exits 0 when ../shared or gfortran is absent
    python3 tests/integration/datcom_oracle.py run DECK [BUILD_DIR]
        runs one deck and prints what was found in DATCOM's output

In the tests: `binary = require()` (a pytest skip saying why when DATCOM
cannot be had), then `run(binary, deck_bytes)`, a Result.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SOURCE = REPO.parent / "shared" / "datcom" / "aircraft-datcom"
# BUILD.md; dplot.f is a plotting program of its own (a second main)
FFLAGS = ["-std=legacy", "-fno-automatic", "-finit-local-zero", "-O1", "-w"]
# A deck DATCOM answers at all takes it well under a second here; one it
# hangs on (Mach 0.001, a 5-digit section without camber) never ends.
TIMEOUT = 20.0


def build_dir():
    return Path(os.environ.get("FLOWFS_BUILD_DIR", REPO / "build-test"))


def binary_path(build=None):
    return Path(build or build_dir()) / "datcom" / "datcom"


def unavailable(build=None):
    """Why DATCOM cannot be had here (a sentence), or None."""
    if binary_path(build).is_file():
        return None
    if not (SOURCE / "src").is_dir():
        return (f"{SOURCE} is absent (the project's workspace beside the "
                "checkout): no real DATCOM to run decks through")
    if not shutil.which("gfortran"):
        return "gfortran is not installed (tools/setup test installs it)"
    return None


def build(build=None, quiet=False):
    """BUILD_DIR/datcom/datcom, built when missing (about 20 s); None when
    unavailable().  Built in a temporary name and renamed, so a run that
    is stopped leaves no half binary behind."""
    path = binary_path(build)
    if path.is_file():
        return path
    if unavailable(build):
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    sources = sorted(str(p) for p in (SOURCE / "src").glob("*.f")
                     if p.name != "dplot.f")
    tmp = path.with_name(f".datcom.{os.getpid()}")
    objs = Path(tempfile.mkdtemp(prefix=".objs-", dir=str(path.parent)))
    started = time.monotonic()
    try:
        # BUILD.md's one command, as two compiles side by side (two
        # cores) and a link
        jobs = [subprocess.Popen(["gfortran", *FFLAGS, "-c", *half],
                                 cwd=str(objs), stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
                for half in (sources[0::2], sources[1::2])]
        logs = [j.communicate()[0] for j in jobs]
        r = None
        if all(j.returncode == 0 for j in jobs):
            r = subprocess.run(["gfortran", *FFLAGS,
                                *sorted(map(str, objs.glob("*.o"))), "-o",
                                str(tmp)], capture_output=True, text=True,
                               stdin=subprocess.DEVNULL)
            logs.append(r.stdout + r.stderr)
        if r is None or r.returncode != 0:
            tmp.unlink(missing_ok=True)
            raise RuntimeError("building DATCOM failed:\n" + "".join(logs))
    finally:
        shutil.rmtree(objs, ignore_errors=True)
    os.chmod(tmp, 0o755)
    os.replace(tmp, path)
    if not quiet:
        print(f"built {path} in {time.monotonic() - started:.0f} s")
    return path


def require():
    """The DATCOM binary, or a pytest skip saying why there is none."""
    import pytest
    why = unavailable()
    if why:
        pytest.skip(why)
    path = binary_path()
    if not path.is_file():
        pytest.skip(f"{path} is not built (tools/test builds it; or "
                    f"python3 {Path(__file__).relative_to(REPO)} build "
                    f"{build_dir()})")
    return path


# -- reading DATCOM's output ---------------------------------------------------

# Input errors: CONERR's marks on an echoed card (rvalue.f, testor.f,
# ccard.f), the namelist reader's, and a case not run.  check.f's own
# "*** ERROR ***" lines (LOOP 1 with NALT other than NMACH, ...) are
# DATCOM correcting a value and going on: `corrections`, not these.
INPUT_ERRORS = re.compile(
    r"(?<!\*)\*\* ERROR \*\*(?!\*)|ILLEGAL CONTROL CARD|NAMELIST INPUT ERROR"
    r"|THIS CASE NOT RUN|MISSING NAMELIST TERMINATION|-ERROR--")
CORRECTIONS = re.compile(r"\*\*\* ERROR \*\*\*")
# What DATCOM prints where it gives up on a case or a part of it.
BREAKDOWNS = re.compile(
    r"NOT ADEQUATELY DEFINED|HAVE FAILED|ARRAY OVERFLOW")
TABLE_HEAD = re.compile(r"^0 ALPHA +CD +CL +CM ")
NUMBER = re.compile(r"^-?(\d+\.\d*|\.\d+)(E[+-]?\d+)?$")


@dataclass
class Table:
    """One coefficient table: its configuration title and rows of
    (alpha, {column: text})."""
    title: str
    mach: str
    columns: list
    rows: list = field(default_factory=list)

    def numeric_rows(self):
        """Rows whose CD and CL are numbers (CM needs a reference length
        DATCOM may not have: a body alone without CBARR prints it ****)."""
        return [r for r in self.rows
                if all(NUMBER.match(r[1].get(c, "")) for c in ("CD", "CL"))]

    def numeric(self):
        return bool(self.numeric_rows())


@dataclass
class Result:
    output: str             # output.dat
    stderr: str
    returncode: int
    timed_out: bool
    seconds: float
    input_errors: list = field(default_factory=list)   # lines
    corrections: list = field(default_factory=list)    # lines
    breakdowns: list = field(default_factory=list)     # lines
    tables: list = field(default_factory=list)         # Table

    @property
    def crashed(self):
        """The program stopped with a runtime error (a signal, a Fortran
        runtime error) before the end of the job."""
        return (self.timed_out or self.returncode < 0 or
                "Fortran runtime error" in self.stderr or
                "END OF JOB" not in self.output)

    def numeric_tables(self):
        return [t for t in self.tables if t.numeric()]

    def summary(self):
        parts = [f"{len(self.tables)} tables ({len(self.numeric_tables())} "
                 f"with numbers)"]
        if self.timed_out:
            parts.append(f"timed out after {self.seconds:.0f} s")
        elif self.crashed:
            parts.append(f"crashed (exit status {self.returncode}: "
                         f"{self.stderr.strip().splitlines()[:1]})")
        for what in ("input_errors", "corrections", "breakdowns"):
            lines = getattr(self, what)
            if lines:
                parts.append(f"{len(lines)} {what.replace('_', ' ')}: "
                             f"{lines[0].strip()[:120]!r}")
        return "; ".join(parts)


def _table_title(lines, head):
    """The configuration line above a table's head (`WING-BODY
    CONFIGURATION`) and the Mach number of its flight-condition row."""
    title, mach = "", ""
    for k in range(head - 1, max(head - 16, -1), -1):
        line = lines[k].strip()
        if line.endswith("CONFIGURATION") and not title:
            title = line
        m = re.match(r"^0 ?(\d*\.\d+)\s", lines[k])
        if m and not mach:
            mach = m.group(1)
    return title, mach


def parse_output(text):
    """The tables of DATCOM's output.  DATCOM leaves a cell blank where it
    has no value, so each value of a row goes to the column whose head is
    nearest to it."""
    lines = text.split("\n")
    tables = []
    for i, line in enumerate(lines):
        if not TABLE_HEAD.match(line):
            continue
        heads = [(m.group(), (m.start() + m.end()) / 2)
                 for m in re.finditer(r"\S+", line)][1:]
        title, mach = _table_title(lines, i)
        t = Table(title, mach, [h for h, _ in heads])
        k = i + 1
        if k < len(lines) and lines[k].strip() == "0":
            k += 1
        while k < len(lines):
            row = lines[k]
            if not row.strip() or row[0] != " " or \
                    not re.match(r"^ +-?\.?\d", row):
                break
            vals = {}
            for m in re.finditer(r"\S+", row):
                mid = (m.start() + m.end()) / 2
                name = min(heads, key=lambda h: abs(h[1] - mid))[0]
                vals.setdefault(name, m.group())
            t.rows.append((row.split()[0], vals))
            k += 1
        tables.append(t)
    return tables


def classify(output, stderr="", returncode=0, timed_out=False, seconds=0.0):
    r = Result(output, stderr, returncode, timed_out, seconds)
    for line in output.split("\n"):
        if INPUT_ERRORS.search(line):
            r.input_errors.append(line)
        elif CORRECTIONS.search(line):
            r.corrections.append(line)
        if BREAKDOWNS.search(line):
            r.breakdowns.append(line)
    r.tables = parse_output(output)
    return r


def run(binary, deck, timeout=TIMEOUT, keep=None):
    """Run the deck (bytes) through DATCOM in a folder of its own (`keep`
    when given, else a temporary one); a Result.  DATCOM takes its
    argument into a CHARACTER*32: the deck is `d.dat` there."""
    work = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="datcom-"))
    try:
        work.mkdir(parents=True, exist_ok=True)
        (work / "d.dat").write_bytes(deck)
        started = time.monotonic()
        timed_out, rc, err = False, 0, ""
        try:
            p = subprocess.run([str(binary), "d.dat"], cwd=str(work),
                               stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, timeout=timeout)
            rc, err = p.returncode, p.stderr.decode(errors="replace")
        except subprocess.TimeoutExpired:
            timed_out, rc = True, -9
        seconds = time.monotonic() - started
        out = work / "output.dat"
        text = out.read_bytes().decode("ascii", errors="replace") \
            if out.is_file() else ""
        return classify(text, err, rc, timed_out, seconds)
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


# -- editing a deck flowfs wrote (to make what flowfs refuses) --------------

def read_cards(text):
    """The cards of a deck in flowfs's own format (one case, no texts):
    [["control", line] | ["namelist", name, [[var, index, [values]]]]]."""
    cards, cur = [], None
    for line in text.rstrip("\n").split("\n"):
        if line == "NEXT CASE":
            break
        if not line.startswith(" "):
            cards.append(["control", line])
            continue
        if line.startswith(" $"):
            name, _, body = line[2:].partition(" ")
            cur = ["namelist", name, []]
            cards.append(cur)
        else:
            body = line[2:]
        for piece in body.rstrip("$").split(","):
            if not piece:
                continue
            m = re.match(r"^([A-Z][A-Z0-9]*)(?:\((\d+)\))?=(.*)$", piece)
            if m:
                cur[2].append([m.group(1), int(m.group(2) or 0),
                               [m.group(3)]])
            else:
                cur[2][-1][2].append(piece)
    return cards


def write_cards(cards):
    """A deck of the cards (read_cards()'s form): 80 columns, namelists
    wrapped after a comma onto lines of two blanks, NEXT CASE at the end."""
    out = []
    for card in cards:
        if card[0] == "control":
            out.append(card[1])
            continue
        line = f" ${card[1]} "
        pieces = []
        for var, index, vals in card[2]:
            head = f"{var}({index})=" if index else f"{var}="
            pieces.append(head + vals[0])
            pieces.extend(vals[1:])
        for k, piece in enumerate(pieces):
            piece += "," if k < len(pieces) - 1 else "$"
            if len(line) + len(piece) > 80:
                out.append(line)
                line = "  "
            line += piece
        out.append(line if pieces else line + "$")
    return "\n".join(out) + "\nNEXT CASE\n"


def edit(text, namelist=None, var=None, values=None, control=None,
         new=None):
    """The deck `text` with variable `var` of `namelist` given `values`
    (a list of spellings; None removes it), or with the control card
    starting `control` replaced by `new` (None removes it)."""
    cards = read_cards(text)
    if control is not None:
        cards = [c for c in cards
                 if not (c[0] == "control" and c[1].startswith(control))] \
            if new is None else \
            [["control", new] if c[0] == "control" and
             c[1].startswith(control) else c for c in cards]
    if namelist is not None:
        for c in cards:
            if c[0] != "namelist" or c[1] != namelist:
                continue
            was = [v for v in c[2] if v[0] == var]
            if values is None:
                c[2] = [v for v in c[2] if v[0] != var]
            elif was:
                was[0][2] = list(values)
            else:
                c[2].append([var, 1 if len(values) > 1 else 0, values])
    return write_cards(cards)


def breakdown_kind(r):
    """What DATCOM printed where it broke down, in a few words."""
    if r.timed_out:
        return "no end (timed out)"
    text = " ".join(r.breakdowns)
    if "SLOPE HAVE FAILED" in text:
        return "section method failed (SLOPE)"
    if "NOT ADEQUATELY DEFINED" in text:
        return "body not adequately defined"
    m = re.search(r"At line \d+ of file src/(\w+)\.f", r.stderr)
    if m:
        return f"runtime error in {m.group(1).upper()}"
    if r.crashed:
        return "stopped before the end"
    cells = {row[1].get(c, "") for t in r.tables for row in t.rows
             for c in ("CD", "CL")}
    for word in ("NaN", "NDM"):
        if word in cells:
            return f"{word} for CD or CL"
    if any(c.startswith("*") for c in cells):
        return "**** for CD or CL"
    return "no coefficient table"


def judge(r, noted):
    """A deck flowfs wrote, run: 'clean' (a table with numbers), 'noted'
    (status notes it: DATCOM may print part of the results), or 'broke'
    (DATCOM broke down: no table with numbers though flowfs said ready,
    or it crashed or did not end).  An input-error marker, or a value
    DATCOM corrected (check.f's *** ERROR ***) without a note, fails:
    flowfs must never write the one and always say the other."""
    assert not r.input_errors, \
        f"DATCOM marks input errors: {r.input_errors[:3]}"
    assert noted or not r.corrections, \
        f"DATCOM corrected a value flowfs did not note: {r.corrections[:2]}"
    if r.crashed:
        return "broke"
    if noted:
        return "noted"
    return "clean" if r.numeric_tables() else "broke"


def main(argv):
    if len(argv) >= 2 and argv[0] == "build":
        why = unavailable(argv[1])
        if why:
            print(f"DATCOM is not built: {why}")
            return 0
        path = build(argv[1], quiet=True)
        print(f"{path}")
        return 0
    if len(argv) >= 2 and argv[0] == "run":
        path = binary_path(argv[2] if len(argv) > 2 else None)
        r = run(path, Path(argv[1]).read_bytes())
        print(r.summary())
        for t in r.tables:
            print(f"  {t.title or '?'} MACH {t.mach}: {len(t.rows)} rows, "
                  f"{len(t.numeric_rows())} with numbers")
        return 1 if r.input_errors or r.crashed else 0
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
