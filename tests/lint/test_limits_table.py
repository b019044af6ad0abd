#!/usr/bin/python3
"""README's table of limits ("### Bounded work": | limit | enforced in |
at it | one past it |) names, per limit, the test that tries it exactly
at the limit and the one that tries it one past: every row must name two
tests that exist, and the files that enforce it must exist.

A test is `test_x.py::test_name` (tests/integration/; a parametrized
test with or without its `[id]`, as pytest --collect-only lists it) or
`test_x.c::test_name` (tests/unit/: a cmocka test, defined there and run
by the file's main()).  One test may fill both columns when it tries
both sides.

Run by meson test (suite lint) as one test, and the check is tried once
on a copy of the table with a test renamed, which it must refuse.
Exit 1 naming each row at fault.

    test_limits_table.py [--readme PATH]
"""

import pathlib
import re
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[2]
HEADER = ["limit", "enforced in", "at it", "one past it"]


def table_rows(readme):
    """[(line number, [cells])] of the limits table, or an error."""
    lines = readme.read_text().splitlines()
    try:
        start = lines.index("### Bounded work")
    except ValueError:
        raise SystemExit(f"{readme}: no section \"### Bounded work\"")
    rows, in_table = [], False
    for n, line in enumerate(lines[start + 1:], start + 2):
        if line.startswith("## "):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")] \
            if line.startswith("|") else None
        if not in_table:
            in_table = cells == HEADER
            continue
        if cells is None:
            break
        if set(line.replace("|", "").strip()) <= set("-: "):
            continue
        rows.append((n, cells))
    if not rows:
        raise SystemExit(f"{readme}: no table | {' | '.join(HEADER)} | in"
                         " \"### Bounded work\"")
    return rows


def unit_tests(path):
    """The cmocka tests a unit file defines and registers."""
    text = path.read_text()
    defined = set(re.findall(r"^static void (test_\w+)\(void \*\*state\)",
                             text, re.M))
    return {t for t in defined if len(re.findall(rf"\b{t}\b", text)) >= 2}


def collected(files):
    """Every pytest node id of these integration files."""
    if not files:
        return set()
    p = subprocess.run([sys.executable, "-m", "pytest", "--collect-only",
                        "-q", "-p", "no:cacheprovider",
                        *sorted(str(REPO / "tests" / "integration" / f)
                                for f in files)],
                       cwd=REPO, capture_output=True, text=True)
    ids = set()
    for line in p.stdout.splitlines():
        if "::" in line:
            ids.add(line.split("tests/integration/", 1)[-1].strip())
    if p.returncode not in (0, 5) and not ids:
        raise SystemExit("pytest --collect-only failed:\n" + p.stdout
                         + p.stderr)
    return ids


def check(readme):
    """The problems of the table in `readme`, one line each."""
    rows = table_rows(readme)
    problems, named = [], []
    for n, cells in rows:
        where = f"{readme.name}:{n}"
        if len(cells) != 4:
            problems.append(f"{where}: {len(cells)} cells, not 4")
            continue
        limit, enforced, at, past = cells
        if not limit:
            problems.append(f"{where}: no limit")
        folder = None
        for f in (x.strip() for x in enforced.split(",")):
            if "/" in f:
                folder = f.rsplit("/", 1)[0]
            elif folder:
                f = f"{folder}/{f}"
            if not ((REPO / "core" / f).is_file() or (REPO / f).is_file()):
                problems.append(f"{where}: {limit}: no file {f}")
        for side, cell in (("at it", at), ("one past it", past)):
            ids = re.findall(r"`([^`]+)`", cell)
            if len(ids) != 1:
                problems.append(f"{where}: {limit}: {side}: names"
                                f" {len(ids)} tests, not one")
                continue
            named.append((where, limit, side, ids[0]))
    py = {t.split("::")[0] for _, _, _, t in named if ".py::" in t}
    ids = collected(py)
    units = {}
    for where, limit, side, test in named:
        file, _, name = test.partition("::")
        if file.endswith(".py"):
            ok = test in ids or ("[" not in name and
                                 any(i.startswith(test + "[") for i in ids))
        elif file.endswith(".c"):
            path = REPO / "tests" / "unit" / file
            if path not in units:
                units[path] = unit_tests(path) if path.is_file() else set()
            ok = name in units[path]
        else:
            ok = False
        if not ok:
            problems.append(f"{where}: {limit}: {side}: {test}: no such"
                            " test")
    return len(rows), problems


def main(argv):
    readme = REPO / "README.md"
    if argv[1:2] == ["--readme"] and len(argv) == 3:
        readme = pathlib.Path(argv[2])
    elif argv[1:]:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    count, problems = check(readme)
    for p in problems:
        print(p)
    if problems:
        print(f"FAILED: {len(problems)} problems in the {count} rows of the"
              " limits table")
        return 1
    print(f"ok: the {count} rows of the limits table name tests that exist")
    if argv[1:]:
        return 0
    # the check itself: a row naming a test that is not there is refused
    text = readme.read_text()
    for old, new in (("test_edges.py::test_session_name_at_255_bytes",
                      "test_edges.py::test_session_name_at_254_bytes"),
                     ("test_ferr.c::test_message_at_limit",
                      "test_ferr.c::test_message_near_limit")):
        if old not in text:
            print(f"FAILED: the self-check's row ({old}) is not in the table")
            return 1
        with tempfile.TemporaryDirectory() as tmp:
            planted = pathlib.Path(tmp) / "README.md"
            planted.write_text(text.replace(old, new, 1))
            _, found = check(planted)
        if not any(new in p and "no such test" in p for p in found):
            print(f"FAILED: a row naming {new}, which does not exist, passed")
            return 1
        print(f"ok: a row naming {new} (no such test) is refused")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
