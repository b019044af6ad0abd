"""Issue 26: every limit a user can reach through the mount, tried exactly
at it (accepted, and it works) and one past it (refused, with its
message).  README's "Bounded work" lists each limit with the names of its
two tests (tests/lint/test_limits_table.py checks that they exist); the
limits no file operation reaches are tried in the unit tests.

The tests far past a limit (test_limits.py and others) find a limit that
is missing; these find one that moved by one: a `<` that became `<=`, a
`+ 1` on a constant.  Big inputs are made in one piece (a string of the
right length), so that each test takes seconds.
"""

import copy
import errno
import json
import os
import sqlite3
import subprocess

import pytest

from conftest import (bind, dumps, flowfs_bin, log_entries, oserror, put,
                      put_json, read_bytes, status_of, write_bytes)
from limits import (CONTEXT_MAX, DECK_MAX_CASES, DECK_MAX_NAMELISTS,
                    DECK_MAX_SIZE, DOC_MAX, DOC_MOUNT_BUDGET,
                    DOC_SESSION_BUDGET, GRAPH_MAX_EDGES, GRAPH_MAX_NODES,
                    GRAPH_PENDING_SIZE, MiB, ROUND_MAX, ROUNDS_TOTAL_MAX)
from limits import (FILE_MAX, GRAPH_ID_MAX, NAME_MAX, ROUNDS_MAX,
                    LOG_KEEP, URL_MAX)
from test_context import context_doc, task
# engine, files and run_mount are fixtures: imported, pytest finds them
from test_engine import (ROUND1, bind_with, engine, files,  # noqa: F401
                         report_session, run_mount, science, wait_fetch,
                         wait_run, write_line)
from test_datcom import PC9
from test_fetch_limits import fetch_into, fetch_mount
from test_sandbox import exec_mount, experiment  # noqa: F401
from test_jobs import build_graph, ctl, small, wait_graph, write_tools
from test_limits import (FIRST, NEXT, close_all, dag_edges,  # noqa: F401
                         deck_problems, dsession, graph_doc, open_drafts,
                         waiting_edge)


def last_log(session):
    return [(p, m) for _, p, m in log_entries(session / "log")][-1]


def log_of(session, path):
    return [m for _, p, m in log_entries(session / "log") if p == path]


# -- names --------------------------------------------------------------------

def test_session_name_at_255_bytes(mnt):
    """A session name of 255 bytes (multibyte characters count as their
    bytes) is made, listed and renamed."""
    name = "\u20ac" * 84 + "abc"
    assert len(name.encode()) == NAME_MAX
    os.mkdir(mnt / name)
    assert name in os.listdir(mnt)
    assert json.loads(read_bytes(mnt / name / "session.json"))["id"] == name
    other = "b" * NAME_MAX
    os.rename(mnt / name, mnt / other)
    assert os.listdir(mnt / other / "uploads") == []


def test_session_name_past_255_bytes(mnt):
    name = "\u20ac" * 84 + "abcd"
    assert len(name.encode()) == NAME_MAX + 1
    with pytest.raises(OSError) as e:
        os.mkdir(mnt / name)
    assert e.value.errno == errno.ENAMETOOLONG
    os.mkdir(mnt / "s")
    with pytest.raises(OSError) as e:
        os.rename(mnt / "s", mnt / ("s" * (NAME_MAX + 1)))
    assert e.value.errno == errno.ENAMETOOLONG
    assert sorted(os.listdir(mnt)) == [".flowfs", "s"]


def test_file_name_at_255_bytes(uploads):
    name = "f" * NAME_MAX
    write_bytes(uploads / name, b"kept")
    assert os.listdir(uploads) == [name]
    assert read_bytes(uploads / name) == b"kept"
    os.rename(uploads / name, uploads / ("g" * NAME_MAX))
    os.mkdir(uploads / ("d" * NAME_MAX))
    assert sorted(os.listdir(uploads)) == ["d" * NAME_MAX, "g" * NAME_MAX]


def test_file_name_past_255_bytes(uploads):
    long = "f" * (NAME_MAX + 1)
    for call in (lambda: write_bytes(uploads / long, b"x"),
                 lambda: os.mkdir(uploads / long),
                 lambda: os.stat(uploads / long)):
        with pytest.raises(OSError) as e:
            call()
        assert e.value.errno == errno.ENAMETOOLONG
    write_bytes(uploads / "f", b"x")
    with pytest.raises(OSError) as e:
        os.rename(uploads / "f", uploads / long)
    assert e.value.errno == errno.ENAMETOOLONG
    assert os.listdir(uploads) == ["f"]


def test_node_id_at_250_bytes(session):
    """A node id of 250 bytes: its file nodes/<id>.json is a name of 255
    bytes; an edge to it and parameters.json carry it."""
    nid = "n" * GRAPH_ID_MAX
    assert put_json(session / "nodes" / f"{nid}.json",
                    {"label": "relax", "input_parameters": [
                        {"name": "x", "value": "v"}]}) == 0
    assert put_json(session / "nodes" / "a.json", {"label": "relax"}) == 0
    assert put_json(session / "edges" / "e.json", {
        "source_node_id": "a", "target_node_id": nid,
        "target_parameter_name": "x"}) == 0
    doc = json.loads(read_bytes(session / "parameters.json"))
    assert [n["id"] for n in doc["nodes"]] == [nid, "a"]
    assert doc["edges"][0]["target_node_id"] == nid
    # and as a whole document
    doc = graph_doc(0)
    doc["nodes"] = [{"id": "m" * GRAPH_ID_MAX, "label": "relax"}]
    assert put_json(session / "parameters.json", doc) == 0
    assert os.listdir(session / "nodes") == ["m" * GRAPH_ID_MAX + ".json"]


def test_node_id_past_250_bytes(session):
    nid = "n" * (GRAPH_ID_MAX + 1)
    doc = graph_doc(0)
    doc["nodes"] = [{"id": nid, "label": "relax"}]
    assert put_json(session / "parameters.json", doc) == errno.EINVAL
    assert last_log(session) == (
        "parameters.json", f'nodes[0]: "id" "{nid[:40]}..." is longer than'
        f" {GRAPH_ID_MAX} bytes")
    # its file would be a name of 256 bytes
    assert put_json(session / "nodes" / f"{nid}.json",
                    {"label": "relax"}) == errno.ENAMETOOLONG
    assert os.listdir(session / "nodes") == []


# -- documents ----------------------------------------------------------------

def padded_doc(title, size):
    """session.json of exactly `size` bytes: blanks (JSON allows them;
    what is stored and shown stays small), then {"title": title}."""
    text = json.dumps({"title": title}).encode()
    text = b"\n" * (size - len(text)) + text
    assert len(text) == size
    return text


def test_document_at_16_mib(session):
    """session.json of exactly 16 MiB is taken in; written again by
    renaming a file of that size onto it (rsync's way), too."""
    assert put(session / "session.json", padded_doc("one", DOC_MAX)) == 0
    assert json.loads(read_bytes(session / "session.json"))["title"] == "one"
    write_bytes(session / ".session.json.tmp", padded_doc("two", DOC_MAX))
    os.rename(session / ".session.json.tmp", session / "session.json")
    assert json.loads(read_bytes(session / "session.json"))["title"] == "two"
    assert log_of(session, "session.json") == []


def test_document_past_16_mib(session):
    """One byte more: the write that reaches past 16 MiB fails (EFBIG), a
    byte written at 16 MiB too, one just before it is held; what was
    held is no document (EINVAL from close), and session.json is as it
    was."""
    text = padded_doc("one", DOC_MAX + 1)
    fd = os.open(session / "session.json", os.O_WRONLY | os.O_TRUNC)
    done, err = 0, 0
    try:
        while not err:
            try:
                done += os.write(fd, text[done:])
            except OSError as e:
                err = e.errno
        # the kernel's piece that crosses the limit is refused whole
        assert err == errno.EFBIG and DOC_MAX - MiB < done < DOC_MAX
        assert oserror(os.pwrite, fd, b" ", DOC_MAX) == errno.EFBIG
        assert os.pwrite(fd, b" ", DOC_MAX - 1) == 1
    finally:
        assert oserror(os.close, fd) == errno.EINVAL
    assert json.loads(read_bytes(session / "session.json"))["title"] == ""


def test_drafts_at_the_session_budget(flowfs):
    """Four drafts of 16 MiB: the session's 64 MiB exactly, all held
    (with another session's draft open, so that the mount's total is past
    a session's and each session's share is counted)."""
    per = DOC_SESSION_BUDGET // DOC_MAX
    os.mkdir(flowfs.mnt / "other")
    os.mkdir(flowfs.mnt / "s")
    held, wrote, err = open_drafts(flowfs.mnt / "other", 1)
    try:
        assert (wrote, err) == (1, 0)
        fds, wrote, err = open_drafts(flowfs.mnt / "s", per)
        held += fds
        assert (wrote, err) == (per, 0)
    finally:
        close_all(held)
    assert not [m for _, _, m in log_entries(flowfs.mnt / "s" / "log")
                if m.startswith("no room")]


def test_drafts_at_the_mount_budget(flowfs):
    """Sixteen drafts of 16 MiB in four sessions: the mount's 256 MiB
    exactly, all held."""
    per = DOC_SESSION_BUDGET // DOC_MAX
    held = []
    try:
        for i in range(DOC_MOUNT_BUDGET // DOC_SESSION_BUDGET):
            os.mkdir(flowfs.mnt / f"s{i}")
            fds, wrote, err = open_drafts(flowfs.mnt / f"s{i}", per)
            held += fds
            assert (wrote, err) == (per, 0)
    finally:
        close_all(held)


# -- the deck -----------------------------------------------------------------

CARD = b" $FLTCON WT=4960.0$\n"


def test_deck_at_1_mib(dsession):
    """A deck of exactly 1 MiB is read (padded with blank lines, which a
    deck may hold): no problem about its size, its parameters used."""
    deck = CARD + b"NEXT CASE\n"
    deck += b"\n" * (DECK_MAX_SIZE - len(deck))
    assert len(deck) == DECK_MAX_SIZE
    write_bytes(dsession / "uploads" / "deck.dat", deck)
    assert not [p for p in deck_problems(dsession) if "are read" in p]
    assert json.loads(read_bytes(dsession / "parameter.json"))["wt"] == 4960.0


def test_deck_at_3000_namelists(dsession):
    deck = b" $FLTCON WT=1.0$\n" * DECK_MAX_NAMELISTS
    write_bytes(dsession / "uploads" / "deck.dat", deck)
    assert not [p for p in deck_problems(dsession) if "namelists" in p]


def test_deck_at_300_cases(dsession):
    deck = b" $FLTCON WT=1.0$\nNEXT CASE\n" * DECK_MAX_CASES
    write_bytes(dsession / "uploads" / "deck.dat", deck)
    assert not [p for p in deck_problems(dsession) if "cases" in p]
    notes = json.loads(read_bytes(dsession / "status.json"))["notes"]
    assert f"uploads/deck.dat: {DECK_MAX_CASES} cases; the first is used" \
        in notes, notes


# -- the job graph ------------------------------------------------------------

def test_graph_nodes_at_20000(session):
    """19,999 nodes by parameters.json, the 20,000th by its own file:
    taken; the graph holds them all."""
    assert put_json(session / "parameters.json",
                    graph_doc(GRAPH_MAX_NODES - 1)) == 0
    assert put_json(session / "nodes" / "last.json", {"label": "relax"}) == 0
    doc = json.loads(read_bytes(session / "parameters.json"))
    assert len(doc["nodes"]) == GRAPH_MAX_NODES
    assert doc["nodes"][-1]["id"] == "last"


def test_graph_edges_at_20000(session):
    """A parameters.json of exactly 20,000 edges is taken whole."""
    nodes, edges = dag_edges(GRAPH_MAX_EDGES)
    doc = {"nodes": [{"id": f"n{i}", "label": "relax", "input_parameters": [
        {"name": "x", "value": "v"}]} for i in range(nodes)],
        "edges": edges, "meta": {}}
    assert put_json(session / "parameters.json", doc) == 0
    assert len(os.listdir(session / "edges")) == GRAPH_MAX_EDGES


def sized_waiting_edge(size):
    """An edge whose nodes are not there, `size` bytes as its file (id
    "w") shows it."""
    edge = waiting_edge(0, param="")
    pad = size - len(json.dumps(dict(edge, id="w"), indent=2))
    edge["target_parameter_name"] = "p" * pad
    assert len(json.dumps(dict(edge, id="w"), indent=2)) == size
    return edge


def test_waiting_edge_at_4096_bytes(session):
    path = session / "edges" / "w.json"
    assert put_json(path, sized_waiting_edge(GRAPH_PENDING_SIZE)) == 0
    assert len(read_bytes(path)) == GRAPH_PENDING_SIZE
    assert [p for p in status_of(session)[0] if p.startswith("edges/w.json")]


def test_waiting_edge_past_4096_bytes(session):
    path = session / "edges" / "w.json"
    assert put_json(path, sized_waiting_edge(GRAPH_PENDING_SIZE + 1)) \
        == errno.EINVAL
    assert last_log(session) == (
        "edges/w.json", f"too big to wait for its nodes:"
        f" {GRAPH_PENDING_SIZE + 1} bytes as its file would show it (at most"
        f" {GRAPH_PENDING_SIZE})")
    assert not os.path.exists(path)


# -- rounds ---------------------------------------------------------------------

@pytest.fixture
def sw(session):
    assert bind(session, "scientific-workflow") == 0
    return session


def sized_round(base, size):
    """Round `base` with its observation padded to `size` bytes as
    stored (json.dumps(indent=2, ensure_ascii=False))."""
    doc = dict(base, observation="")
    pad = size - len(dumps(doc).encode())
    doc["observation"] = "o" * pad
    assert len(dumps(doc).encode()) == size
    return doc


def test_round_at_1_mib(sw):
    assert put_json(sw / "rounds" / "1.json", sized_round(FIRST, ROUND_MAX)) \
        == 0
    assert len(read_bytes(sw / "rounds" / "1.json")) == ROUND_MAX


def test_round_past_1_mib(sw):
    doc = sized_round(FIRST, ROUND_MAX + 1)
    assert put_json(sw / "rounds" / "1.json", doc) == errno.EINVAL
    assert last_log(sw) == (
        "rounds/1.json",
        f"{ROUND_MAX + 1} bytes: a round holds at most {ROUND_MAX}")
    assert os.listdir(sw / "rounds") == []


def fill_rounds(session, last_size):
    """Rounds 1..16 of 1 MiB each as stored but round 1, which leaves
    room for a 17th round of `last_size` bytes to make exactly 16 MiB."""
    small = len(dumps(dict(NEXT, observation="")).encode())
    count = ROUNDS_TOTAL_MAX // ROUND_MAX
    for n in range(1, count + 1):
        size = ROUND_MAX - (small if n == 1 else 0)
        doc = sized_round(FIRST if n == 1 else NEXT, size)
        assert put_json(session / "rounds" / f"{n}.json", doc) == 0
    return count + 1, sized_round(NEXT, small + last_size)


def test_rounds_at_16_mib_together(sw):
    n, doc = fill_rounds(sw, 0)
    assert put_json(sw / "rounds" / f"{n}.json", doc) == 0
    total = sum(len(read_bytes(sw / "rounds" / f"{i}.json"))
                for i in range(1, n + 1))
    assert total == ROUNDS_TOTAL_MAX


def test_rounds_past_16_mib_together(sw):
    n, doc = fill_rounds(sw, 1)
    size = len(dumps(doc).encode())
    assert put_json(sw / "rounds" / f"{n}.json", doc) == errno.EINVAL
    assert last_log(sw) == (
        f"rounds/{n}.json", f"{size} bytes after {ROUNDS_TOTAL_MAX - size + 1}"
        " in the other rounds: a session's rounds hold at most"
        f" {ROUNDS_TOTAL_MAX} together")
    assert not os.path.exists(sw / "rounds" / f"{n}.json")


def test_round_number_at_1000(sw):
    """rounds/1000.json is a round (the rounds before it missing: a
    gap, which status names)."""
    assert put_json(sw / "rounds" / f"{ROUNDS_MAX}.json", NEXT) == 0
    assert os.listdir(sw / "rounds") == [f"{ROUNDS_MAX}.json"]
    assert "rounds/1.json is missing: rounds are numbered from 1 without" \
        f" gaps (rounds/{ROUNDS_MAX}.json exists)" in status_of(sw)[0]
    # a round is checked: a first round's tags are refused there
    assert put_json(sw / "rounds" / f"{ROUNDS_MAX}.json", FIRST) \
        == errno.EINVAL


def test_round_number_past_1000(sw):
    """rounds/1001.json is no round: a scratch file, kept as written and
    not checked, and no gap in status."""
    assert put(sw / "rounds" / f"{ROUNDS_MAX + 1}.json", b"not json") == 0
    assert read_bytes(sw / "rounds" / f"{ROUNDS_MAX + 1}.json") \
        == b"not json"
    assert not [p for p in status_of(sw)[0] if p.startswith("rounds/")]


# -- the context -----------------------------------------------------------------

def sized_context(size, indent):
    """context_doc() as text of `size` bytes, written indented (as it is
    stored) or compact."""
    doc = context_doc()

    def text():
        if indent:
            return dumps(doc).encode()
        return json.dumps(doc, ensure_ascii=False,
                          separators=(",", ":")).encode()
    doc["summary"] = ""
    doc["summary"] = "s" * (size - len(text()))
    assert len(text()) == size
    return doc, text()


def test_context_at_1_mib(session):
    """1 MiB as written, and as stored: the same bytes, taken."""
    doc, text = sized_context(CONTEXT_MAX, indent=True)
    assert put(session / "context.json", text) == 0
    assert read_bytes(session / "context.json") == text


def test_context_past_1_mib_as_written(session):
    _, text = sized_context(CONTEXT_MAX + 1, indent=True)
    assert put(session / "context.json", text) == errno.EINVAL
    assert last_log(session) == (
        "context.json", f"{CONTEXT_MAX + 1} bytes: a context holds at most"
        f" {CONTEXT_MAX}")
    assert read_bytes(session / "context.json") == b"null"


def test_context_past_1_mib_as_stored(session):
    """Written compactly within 1 MiB, stored indented one byte past it."""
    doc, _ = sized_context(CONTEXT_MAX + 1, indent=True)
    text = json.dumps(doc, ensure_ascii=False).encode()
    assert len(text) < CONTEXT_MAX
    assert put(session / "context.json", text) == errno.EINVAL
    assert last_log(session) == (
        "context.json", f"{CONTEXT_MAX + 1} bytes as stored (indented): a"
        f" context holds at most {CONTEXT_MAX}")


def test_context_phases_at_3_tasks_at_8(session):
    """Three phases, the last with 8 tasks over two rounds: taken."""
    doc = context_doc()
    third = copy.deepcopy(doc["phases"][1])
    third["id"] = 3
    third["rounds"] = [
        {"round_id": 1, "plan": {"tasks": [task(i) for i in range(1, 6)]}},
        {"round_id": 2, "plan": {"tasks": [task(i) for i in range(6, 9)]}}]
    doc["phases"].append(third)
    assert put(session / "context.json", json.dumps(doc)) == 0
    assert json.loads(read_bytes(session / "context.json")) == doc
    assert "Phases: 3 of at most 3" in \
        read_bytes(session / "context.txt").decode()


# -- uploads: the largest file ------------------------------------------------------

def test_file_size_at_16_tib(uploads):
    """truncate to exactly 2^44 - 4096 bytes (16 TiB less 4 KiB: what ext4
    holds, so what a file beside the database may be), and a write that
    ends there."""
    f = uploads / "f"
    write_bytes(f, b"data")
    os.truncate(f, FILE_MAX)
    assert os.stat(f).st_size == FILE_MAX
    fd = os.open(f, os.O_RDWR)
    try:
        assert os.pwrite(fd, b"z", FILE_MAX - 1) == 1
        assert os.pread(fd, 2, FILE_MAX - 2) == b"\0z"
        assert os.fstat(fd).st_size == FILE_MAX
    finally:
        os.close(fd)
    os.truncate(f, 4)
    assert read_bytes(f) == b"data"


def test_file_size_past_16_tib(uploads):
    f = uploads / "f"
    write_bytes(f, b"data")
    assert oserror(os.truncate, f, FILE_MAX + 1) == errno.EFBIG
    fd = os.open(f, os.O_RDWR)
    try:
        assert oserror(os.ftruncate, fd, FILE_MAX + 1) == errno.EFBIG
        assert oserror(os.pwrite, fd, b"z", FILE_MAX) == errno.EFBIG
        # one that reaches past it writes the bytes that fit
        assert os.pwrite(fd, b"yz", FILE_MAX - 1) == 1
        assert os.fstat(fd).st_size == FILE_MAX
    finally:
        os.close(fd)


# -- the log --------------------------------------------------------------------------

def refuse(session, i):
    assert put(session / "session.json", f'{{"x{i}": 1}}') == errno.EINVAL


def test_log_keeps_500_lines(session):
    for i in range(LOG_KEEP):
        refuse(session, i)
    lines = log_entries(session / "log")
    assert len(lines) == LOG_KEEP
    assert lines[0][2].startswith('unknown field "x0"')


def test_log_drops_the_501st_line_back(session):
    for i in range(LOG_KEEP + 1):
        refuse(session, i)
    lines = log_entries(session / "log")
    assert len(lines) == LOG_KEEP
    assert lines[0][2].startswith('unknown field "x1"')
    assert lines[-1][2].startswith(f'unknown field "x{LOG_KEEP}"')


# -- the database's schema ----------------------------------------------------------

def schema_db(make_flowfs):
    """A database made by this flowfs (one session in it), unmounted: the
    FlowFS and its schema version."""
    fs = make_flowfs()
    os.mkdir(fs.mnt / "keep")
    version = json.loads(read_bytes(fs.mnt / ".flowfs" / "config"))[
        "database_schema"]
    fs.stop()
    fs.check()
    return fs, version


def set_version(db, version):
    con = sqlite3.connect(db)
    con.execute(f"PRAGMA user_version = {version}")
    con.commit()
    con.close()


def test_schema_at_this_flowfs(make_flowfs):
    """A database of this flowfs's version mounts again, as it is."""
    fs, version = schema_db(make_flowfs)
    set_version(fs.db, version)
    fs.start()
    assert os.listdir(fs.mnt / "keep" / "uploads") == []
    assert json.loads(read_bytes(fs.mnt / ".flowfs" / "config"))[
        "database_schema"] == version


def test_schema_one_newer_refused(make_flowfs):
    """A database exactly one version newer: refused with one line, and
    left byte for byte (no migration run backwards over it)."""
    fs, version = schema_db(make_flowfs)
    set_version(fs.db, version + 1)
    before = fs.db.read_bytes()
    r = subprocess.run([str(flowfs_bin()), f"--db={fs.db}", str(fs.mnt)],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and not os.path.ismount(fs.mnt)
    assert r.stderr == (
        f"flowfs: {fs.db} has database schema {version + 1}, newer than this"
        f" flowfs understands ({version}); use a newer flowfs\n")
    assert fs.db.read_bytes() == before


# -- the daemon's options -------------------------------------------------------------

# README "Running the daemon yourself": (option, lowest, highest)
RANGES = [
    ("--engine-timeout", 1, 86400), ("--engine-retries", 0, 100),
    ("--engine-backoff-ms", 1, 60000), ("--exec-timeout", 1, 86400),
    ("--exec-disk", 1, 1048576), ("--exec-memory", 64, 1048576),
    ("--fetch-timeout", 1, 604800), ("--fetch-jobs", 1, 64),
    ("--runs", 1, 64), ("--datcom-timeout", 1, 3600), ("--jobs", 1, 4096),
]


@pytest.mark.parametrize("end", [1, 2], ids=["lowest", "highest"])
def test_options_at_their_ends(make_flowfs, end):
    """Every whole-number option at the end of its range at once, and
    --fetch-low-speed at 1G:86400 and --fetch-allow with 32 addresses:
    the daemon mounts (and says how many job slots it has)."""
    args = [f"{r[0]}={r[end]}" for r in RANGES]
    allow = ",".join(f"10.0.0.{i}" for i in range(1, 33))
    args += ["--fetch-low-speed=1G:86400", f"--fetch-allow={allow}"]
    fs = make_flowfs(extra_args=args)
    config = json.loads(read_bytes(fs.mnt / ".flowfs" / "config"))
    assert config["jobs"]["slots"] == RANGES[-1][end]


@pytest.mark.parametrize("option,value,lo,hi", [
    (name, v, lo, hi) for name, lo, hi in RANGES for v in (lo - 1, hi + 1)])
def test_options_one_past_their_ends(tmp_path, option, value, lo, hi):
    r = subprocess.run([str(flowfs_bin()), f"--db={tmp_path / 'x.db'}",
                        f"{option}={value}", str(tmp_path)],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and r.stderr == (
        f'flowfs: {option} takes a whole number from {lo} to {hi}, not'
        f' "{value}"\n'), r
    assert not os.path.ismount(tmp_path)


@pytest.mark.parametrize("value", [
    "1073741825:30", "1G:86401", ",".join(f"10.0.0.{i}" for i in range(33))],
    ids=["low-speed-bytes", "low-speed-seconds", "fetch-allow-33"])
def test_fetch_options_one_past_their_ends(tmp_path, value):
    option = "--fetch-allow" if "," in value else "--fetch-low-speed"
    r = subprocess.run([str(flowfs_bin()), f"--db={tmp_path / 'x.db'}",
                        f"{option}={value}", str(tmp_path)],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2, r
    assert r.stderr.startswith(
        "flowfs: --fetch-allow takes addresses or ranges such as 192.168.1.10"
        " or 10.1.0.0/16, comma-separated (at most 32), not "
        if option == "--fetch-allow" else
        "flowfs: --fetch-low-speed takes BYTES:SECONDS such as 1K:30 (at"
        " most 1G and 86400), or 0"), r.stderr


# -- URL inputs -----------------------------------------------------------------------

FETCHED = "fetch uploads/csv_file.csv: "


@pytest.fixture
def fetching(make_flowfs, skill_folder, isolated_config, files):
    """factory: a mount fetching from the loopback file server (with
    more options), and a session there whose csv_file is `url`."""
    def start(url, *extra):
        fs = fetch_mount(make_flowfs, skill_folder, "--fetch-allow-private",
                         *extra)
        return fetch_into(fs.mnt, "s", url)
    return start


def long_url(files, size):
    """A URL of `size` bytes the file server answers (a.csv's bytes)."""
    name = "a" * (size - len(f"{files.base}/file/.csv")) + ".csv"
    files.files[name] = b"a,b\n1,2\n"
    url = f"{files.base}/file/{name}"
    assert len(url) == size
    return url


def test_url_at_8191_bytes(fetching, files):
    s = fetching(long_url(files, URL_MAX))
    assert wait_fetch(s) == FETCHED + "done: 0.0 MiB"
    assert read_bytes(s / "uploads" / "csv_file.csv") == b"a,b\n1,2\n"


def test_url_past_8191_bytes(make_flowfs, skill_folder, isolated_config,
                             files):
    fs = fetch_mount(make_flowfs, skill_folder, "--fetch-allow-private")
    s = fs.mnt / "s"
    os.mkdir(s)
    assert bind(s, "stats") == 0
    url = long_url(files, URL_MAX + 1)
    assert put_json(s / "request.json", {"input": {"csv_file": url}}) \
        == errno.EINVAL
    assert last_log(s) == ("request.json", f"key 'csv_file': a URL of"
                           f" {URL_MAX + 1} bytes: a URL input is at most"
                           f" {URL_MAX} bytes")
    assert files.hits == {}


@pytest.mark.parametrize("how", ["file", "chunked"])
def test_fetch_at_max_fetch(fetching, files, how):
    """A file of exactly --max-fetch bytes comes in, whether the server
    says its length first or not."""
    files.files["a.csv"] = b"x" * 1023 + b"\n"
    s = fetching(f"{files.base}/{how}/a.csv", "--max-fetch=1K")
    assert wait_fetch(s) == FETCHED + "done: 0.0 MiB"
    assert len(read_bytes(s / "uploads" / "csv_file.csv")) == 1024


@pytest.mark.parametrize("how", ["file", "chunked"])
def test_fetch_past_max_fetch(fetching, files, how):
    files.files["a.csv"] = b"x" * 1024 + b"\n"
    s = fetching(f"{files.base}/{how}/a.csv", "--max-fetch=1K")
    assert wait_fetch(s) == FETCHED + "failed: larger than the limit of" \
        " 1024 bytes (--max-fetch)"
    assert os.listdir(s / "uploads") == []


def test_fetch_after_5_redirects(fetching, files):
    files.files["a.csv"] = b"a,b\n"
    s = fetching(f"{files.base}/redirect/5/a.csv")
    assert wait_fetch(s) == FETCHED + "done: 0.0 MiB"
    assert files.hits["/file/a.csv"] == 1


def test_fetch_past_5_redirects(fetching, files):
    files.files["a.csv"] = b"a,b\n"
    s = fetching(f"{files.base}/redirect/6/a.csv")
    assert wait_fetch(s) == FETCHED + "failed: more than 5 redirects"
    assert "/file/a.csv" not in files.hits


# -- experiments (--allow-exec) --------------------------------------------------------

# the program's last act: wait for the daemon's next looks at its folder
# (every 0.25 s), so that what it made is measured while it runs
SETTLE = "import time\ntime.sleep(1)\nprint('made')\n"


@pytest.fixture
def shm_exec_mount(run_mount, monkeypatch):
    """exec_mount with the scratch folders in memory (TMPDIR=/dev/shm):
    ten thousand files on a busy disk take seconds."""
    if os.access("/dev/shm", os.W_OK | os.X_OK):
        monkeypatch.setenv("TMPDIR", "/dev/shm")
    return run_mount("--allow-exec")


def entries(count):
    """A folder `d` and count - 1 files in it: `count` new entries."""
    return ("import os\nos.mkdir('d')\n"
            f"for i in range({count - 1}):\n    open(f'd/{{i}}', 'w').close()\n"
            + SETTLE)


def nested(depth):
    return (f"import os\nfor i in range({depth}):\n"
            "    os.mkdir('d')\n    os.chdir('d')\n" + SETTLE)


def test_experiment_entries_at_10000(shm_exec_mount, engine):
    _, line, obs = experiment(shm_exec_mount, engine, entries(10000))
    assert (line, obs) == ("run: done", "made")


def test_experiment_entries_past_10000(shm_exec_mount, engine):
    _, line, obs = experiment(shm_exec_mount, engine, entries(10001))
    assert (line, obs) == ("run: done", "(stopped: it made more than 10000"
                           " files and folders in its folder)")


def test_experiment_depth_at_64(exec_mount, engine):
    _, line, obs = experiment(exec_mount, engine, nested(64))
    assert (line, obs) == ("run: done", "made")


def test_experiment_depth_past_64(exec_mount, engine):
    _, line, obs = experiment(exec_mount, engine, nested(65))
    assert (line, obs) == ("run: done",
                           "(stopped: it nested folders more than 64 deep)")


def output_left(session):
    return [m for p, m in status_of(session)[1] if p == "output"]


def test_experiment_files_kept_at_1000(shm_exec_mount, engine):
    s, line, obs = experiment(shm_exec_mount, engine, (
        "for i in range(1000):\n    open(f'f{i:04}', 'w').write(str(i))\n"
        "print('made')\n"))
    assert (line, obs) == ("run: done", "made")
    assert len([n for n in os.listdir(s / "output") if n[0] == "f"]) == 1000
    assert output_left(s) == []


def test_experiment_file_at_64_mib(exec_mount, engine):
    s, line, obs = experiment(exec_mount, engine, (
        "with open('big', 'wb') as f:\n    f.truncate(64 << 20)\n"
        "print('made')\n"))
    assert (line, obs) == ("run: done", "made")
    assert os.stat(s / "output" / "big").st_size == 64 * MiB
    assert output_left(s) == []


def test_experiment_file_past_64_mib(exec_mount, engine):
    s, line, obs = experiment(exec_mount, engine, (
        "with open('big', 'wb') as f:\n    f.truncate((64 << 20) + 1)\n"
        "print('made')\n"))
    assert (line, obs) == ("run: done", "made")
    assert "big" not in os.listdir(s / "output")
    assert output_left(s) == [
        "1 file the experiments made left out (big): over 64 MiB, past 256"
        " MiB or 1000 files kept from one run, or a name flowfs keeps"]


# -- what nothing tested before issue 26 ------------------------------------------------

# every control character, each escaped by json.dumps as \uXXXX or its
# short form (\t, \n, ...); DEL and a C1 control it leaves as they are
CONTROLS = "".join(chr(c) for c in range(0x20)) + "\x7f\x85"


def test_graph_files_escape_controls_as_json_dumps(session):
    """A raw U+001F (and every other control character) in a node's
    texts comes out of nodes/, edges/, parameters.json and
    parameters_output/ as json.dumps(indent=2, ensure_ascii=False) writes
    it: escaped, never raw."""
    text = "a" + CONTROLS + "z"
    name = text.replace("\x00", "")     # a NUL ends no name: refused there
    node = {"label": "relax" + name, "input_parameters": [
        {"name": "x" + name, "value": text},
        {"name": "y", "value": ["\x1f", {"k\x1f": "\x1f"}]}]}
    assert put_json(session / "nodes" / "n.json", node) == 0, last_log(session)
    assert put_json(session / "nodes" / "m.json", {"label": "l"}) == 0
    assert put_json(session / "edges" / "e.json", {
        "source_node_id": "m", "target_node_id": "n",
        "source_parameter_name": "out" + name,
        "target_parameter_name": "x" + name}) == 0, last_log(session)
    out = os.listdir(session / "parameters_output")
    for path in (session / "nodes" / "n.json", session / "edges" / "e.json",
                 session / "parameters.json",
                 session / "parameters_output" / out[0]):
        raw = read_bytes(path)
        assert raw == dumps(json.loads(raw)).encode(), path
        assert b"\x1f" not in raw and b"\\u001f" in raw, path
        assert b"\\t" in raw and b"\\n" in raw and b"\\b" in raw, path
        assert (b"\\u0000" in raw) == (path.parent.name != "edges"), path
        # what json.dumps leaves: DEL and U+0085 as they are
        assert "\x7f\x85" in raw.decode(), path
    shown = json.loads(read_bytes(session / "nodes" / "n.json"))
    assert shown["label"] == "relax" + name
    assert shown["input_parameters"][0]["name"] == "x" + name
    assert shown["input_parameters"][0]["value"] == text
    assert shown["input_parameters"][1]["value"] == ["\x1f", {"k\x1f": "\x1f"}]


def test_the_deck_cache_sees_a_rewrite_of_the_same_size_and_mtime(dsession):
    """A deck rewritten in place with the same size, its mtime then set
    back to what it was (touch -d, rsync -t, tar x): status reads it
    again (its change time moved), and shows the new deck's problem."""
    good = b" $FLTCON WT=4960.0$\nNEXT CASE\n"
    bad = b" $FLTCON WT=49.0,,$\nNEXT CASE\n"
    assert len(bad) == len(good)
    path = dsession / "uploads" / "deck.dat"
    write_bytes(path, good)
    assert deck_problems(dsession) == []
    before = os.stat(path)
    fd = os.open(path, os.O_WRONLY)
    try:
        assert os.pwrite(fd, bad, 0) == len(bad)
    finally:
        os.close(fd)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == \
        (before.st_ino, before.st_size, before.st_mtime_ns)
    problems = deck_problems(dsession)
    assert len(problems) == 1 and problems[0].startswith(
        "uploads/deck.dat: line 1, column "), problems
    assert json.loads(read_bytes(dsession / "status.json"))["ready"] is False


@pytest.mark.parametrize("doc", [
    {"skill": "datcom\u0000"}, {"skill": "dat\u0000com"},
    {"skill": "\u0000"}, {"skill": "datcom", "engine": "claude\u0000"},
    {"skill": "datcom", "engine": "\u0000claude"}],
    ids=["skill-end", "skill-middle", "skill-only", "engine-end",
         "engine-start"])
def test_a_nul_in_skill_or_engine_is_refused(make_flowfs, isolated_config,
                                             doc):
    """"datcom\\u0000" would bind datcom if the NUL cut the name short:
    refused, nothing bound, the log says why."""
    s = make_flowfs().mnt / "s"
    os.mkdir(s)
    assert put_json(s / "session.json", doc) == errno.EINVAL
    key = "engine" if "engine" in doc else "skill"
    assert last_log(s) == ("session.json",
                           f'"{key}" must be a name (a string) or null')
    shown = json.loads(read_bytes(s / "session.json"))
    assert (shown["skill"], shown["engine"]) == (None, None)
    assert "skill" not in os.listdir(s)
    # the title may hold one: it is text, not a name
    assert put_json(s / "session.json", {"title": "a\u0000b"}) == 0
    assert json.loads(read_bytes(s / "session.json"))["title"] == "a\u0000b"


# -- the job graph's commands ------------------------------------------------------------

PY = "/usr/bin/python3"
# writes how many arguments it got and how many bytes they hold
COUNT = ("import sys; a = sys.argv[1:]; open('n.txt', 'w').write("
         "f'{len(a)} {sum(len(x.encode()) + 1 for x in a)}')")
ARGV_MAX, ITEM_MAX, COMMAND_MAX = 256, 4096, 256 * 1024


@pytest.fixture
def jobs_mount(make_flowfs, isolated_config, tmp_path):
    def mount(command):
        write_tools(isolated_config, small({"count": {
            "command": command, "outputs": {"n": "n.txt"}}}))
        fs = make_flowfs(extra_args=["--executor=local", "--jobs=1",
                                     f"--work-dir={tmp_path / 'work'}"])
        s = fs.mnt / "s"
        os.mkdir(s)
        return s
    return mount


def counted(s, inputs=None):
    """Submit node n (label count, with `inputs`): what its command got,
    as (arguments, their bytes with a NUL each) after python -c CODE."""
    build_graph(s, {"n": ("count", inputs or {})})
    assert ctl(s, "submit") == 0, jobs_log(s)[-1:]
    assert wait_graph(s)["state"] == "done"
    n, size = read_bytes(s / "jobs" / "n" / "n.txt").split()
    return int(n), int(size)


def jobs_log(s):
    return [(p, m) for _, p, m in log_entries(s / "log")]


def test_job_command_at_256_items(jobs_mount):
    s = jobs_mount([PY, "-c", COUNT] + ["a"] * (ARGV_MAX - 3))
    assert counted(s) == (ARGV_MAX - 3, 2 * (ARGV_MAX - 3))


def test_job_command_past_256_items(jobs_mount):
    s = jobs_mount([PY, "-c", COUNT] + ["a"] * (ARGV_MAX - 2))
    build_graph(s, {"n": ("count", {})})
    assert ctl(s, "submit") == errno.EINVAL
    assert jobs_log(s)[-1][1].endswith(
        f'"count": command must be a list of 1 to {ARGV_MAX} strings (an'
        ' argv; no shell reads it)'), jobs_log(s)[-1]
    assert os.listdir(s / "jobs") == []


def test_job_command_item_at_4096_bytes(jobs_mount):
    s = jobs_mount([PY, "-c", COUNT, "i" * ITEM_MAX])
    assert counted(s) == (1, ITEM_MAX + 1)


def test_job_command_item_past_4096_bytes(jobs_mount):
    s = jobs_mount([PY, "-c", COUNT, "i" * (ITEM_MAX + 1)])
    build_graph(s, {"n": ("count", {})})
    assert ctl(s, "submit") == errno.EINVAL
    assert jobs_log(s)[-1][1].endswith(
        f'"count": command[3] is {ITEM_MAX + 1} bytes; at most {ITEM_MAX}'), \
        jobs_log(s)[-1]


def big_command(jobs_mount, extra):
    """A command rendering to COMMAND_MAX + extra bytes (each argument
    with its NUL), the bulk from two values of the node (one argument
    holds at most 128 KiB on Linux)."""
    s = jobs_mount([PY, "-c", COUNT, "{{ x }}", "{{ y }}"])
    fixed = len(PY) + 1 + len("-c") + 1 + len(COUNT) + 1 + 2
    left = COMMAND_MAX + extra - fixed
    return s, {"x": "x" * (left // 2), "y": "y" * (left - left // 2)}


def test_job_command_at_256_kib(jobs_mount):
    s, inputs = big_command(jobs_mount, 0)
    assert counted(s, inputs) == (2, COMMAND_MAX - len(PY) - len(COUNT) - 5)


def test_job_command_past_256_kib(jobs_mount):
    s, inputs = big_command(jobs_mount, 1)
    build_graph(s, {"n": ("count", inputs)})
    assert ctl(s, "submit") == errno.E2BIG
    assert jobs_log(s)[-1] == ("ctl", f'node "n": its command renders to'
                               f" more than {COMMAND_MAX} bytes")
    assert os.listdir(s / "jobs") == []


# -- runs: what an engine is asked again, and how often ----------------------------------

def datcom_run(run_mount, engine, refusals):
    """A datcom run whose engine sends `refusals` refused parameter sets,
    then PC-9's: the run's last line."""
    fs = run_mount()
    s = fs.mnt / "pc9"
    os.mkdir(s)
    bind_with(s, "datcom", {"input": {"description": "The PC-9 trainer"}})
    for _ in range(refusals):
        engine.reply(content="", tool_calls=[("set_parameters", {"nalpha": 2})])
    engine.reply(content="", tool_calls=[("set_parameters", PC9)])
    assert write_line(s / "ctl", "run\n") == 0
    return s, wait_run(s)


def test_datcom_parameters_refused_3_times(run_mount, engine):
    """Refused three times, the fourth set is taken."""
    s, line = datcom_run(run_mount, engine, 3)
    assert line == "run: done"
    assert json.loads(read_bytes(s / "request.json"))["parameter"] == PC9
    assert len(engine.requests) == 4


def test_datcom_parameters_refused_4_times(run_mount, engine):
    s, line = datcom_run(run_mount, engine, 4)
    assert line.startswith("run: failed: the engine's parameters were"
                           " refused 4 times; the last time: "), line
    assert len(engine.requests) == 4


def rounds_run(run_mount, engine, bad):
    """A one-round scientific-workflow run whose engine first answers
    `bad` times without the round's tags: the run's last line."""
    fs = run_mount()
    s = fs.mnt / "t"
    os.mkdir(s)
    science(s, 1)
    for _ in range(bad):
        engine.reply(content="I would rather chat.")
    engine.reply(content=ROUND1)
    assert write_line(s / "ctl", "run\n") == 0
    return s, wait_run(s)


def test_round_asked_again_3_times(run_mount, engine):
    s, line = rounds_run(run_mount, engine, 3)
    # without --allow-exec the run stops before the experiment: the
    # round was taken
    assert line.startswith("run: failed: round 1: experiments run only"), line
    assert len(engine.requests) == 4
    assert "phenomenon" in json.loads(read_bytes(s / "rounds" / "1.json"))


def test_round_asked_again_4_times(run_mount, engine):
    s, line = rounds_run(run_mount, engine, 4)
    assert line == ('run: failed: round 1: rounds/1.json: the first round'
                    ' needs "phenomenon"'), line
    assert len(engine.requests) == 4
    assert os.listdir(s / "rounds") == []


def turns_run(run_mount, skill_folder, engine, calls):
    """A report run whose engine calls write_artifact in `calls` turns,
    then answers: the run's last line."""
    fs, s = report_session(run_mount, skill_folder)
    for i in range(calls):
        engine.reply(content="", tool_calls=[(
            "write_artifact", {"name": "report.md", "content": f"v{i}\n"})])
    engine.reply(content='{"answer": 1}')
    assert write_line(s / "ctl", "run\n") == 0
    return s, wait_run(s)


def test_engine_calls_tools_for_11_turns(run_mount, skill_folder, engine):
    """Tools called in 11 turns, the answer in the 12th: the run ends."""
    s, line = turns_run(run_mount, skill_folder, engine, 11)
    assert line == "run: done"
    assert read_bytes(s / "output" / "report.md") == b"v10\n"
    assert len(engine.requests) == 12


def test_engine_calls_tools_for_12_turns(run_mount, skill_folder, engine):
    s, line = turns_run(run_mount, skill_folder, engine, 12)
    assert line == "run: failed: the engine still called tools after 12" \
        " turns", line
    assert len(engine.requests) == 12
