"""Bounded work (issue 12, "One writer stalls or bloats the daemon"): a
DATCOM deck, a job graph, a transcript, a context and the documents being
written each have a limit (README, Security); past it the writer gets an
errno and the session's status or log a line that says which limit.

Each test is an attack of the issue, cut down to just past the limit, so
that it runs in seconds: on a daemon without the limits every write here
is accepted (and the deck parsed on every read of status).
"""

import errno
import json
import os

import pytest

from conftest import (bind, wait_until, log_entries, put, put_json, status_of,
                      write_bytes)
from limits import (CONTEXT_MAX, DECK_MAX_CASES, DECK_MAX_NAMELISTS,
                    DECK_MAX_SIZE, DOC_MAX, DOC_MOUNT_BUDGET,
                    DOC_SESSION_BUDGET, GRAPH_MAX_EDGES, GRAPH_MAX_NODES,
                    GRAPH_PENDING_MAX, GRAPH_PENDING_SIZE, MiB,
                    ROUND_MAX, ROUNDS_TOTAL_MAX)


@pytest.fixture
def dsession(make_flowfs, isolated_config):
    """A session bound to datcom."""
    s = make_flowfs().mnt / "s"
    os.mkdir(s)
    assert bind(s, "datcom") == 0
    return s


def deck_problems(session):
    return [p for p in status_of(session)[0]
            if p.startswith("uploads/deck.dat: ")]


# -- the deck ---------------------------------------------------------------

def test_deck_past_its_size_is_not_read(dsession):
    """The issue's 54 MiB deck, cut to just past 1 MiB: status says it is
    too big (it is never parsed), and a deck within it reads again."""
    card = b" $FLTCON WT=4960.0$\n"
    deck = card * (DECK_MAX_SIZE // len(card) + 1)
    assert len(deck) > DECK_MAX_SIZE
    write_bytes(dsession / "uploads" / "deck.dat", deck)
    assert deck_problems(dsession) == [
        f"uploads/deck.dat: {len(deck)} bytes: at most {DECK_MAX_SIZE}"
        " are read"]
    assert json.loads((dsession / "status.json").read_bytes())["ready"] \
        is False
    write_bytes(dsession / "uploads" / "deck.dat", card + b"NEXT CASE\n")
    assert deck_problems(dsession) == []


@pytest.mark.parametrize("deck, line, column, what, limit", [
    # namelists, well within the size
    (b" $FLTCON WT=1.0$\n" * (DECK_MAX_NAMELISTS + 1),
     DECK_MAX_NAMELISTS + 1, 3, "namelists", DECK_MAX_NAMELISTS),
    (b" $FLTCON WT=1.0$\nNEXT CASE\n" * DECK_MAX_CASES
     + b" $FLTCON WT=2.0$\n", 2 * DECK_MAX_CASES + 1, 1, "cases",
     DECK_MAX_CASES),
], ids=["namelists", "cases"])
def test_deck_counts(dsession, deck, line, column, what, limit):
    """More namelists or cases than a deck holds: a problem in status
    naming the line where the limit was passed."""
    assert len(deck) < DECK_MAX_SIZE
    write_bytes(dsession / "uploads" / "deck.dat", deck)
    assert deck_problems(dsession) == [
        f"uploads/deck.dat: line {line}, column {column}: more than"
        f" {limit} {what}: a deck holds at most {limit}"]


def test_deck_rewritten_in_place_is_read_again(dsession):
    """Status keeps a parsed deck until the file changes: a rewrite of
    the same size (same inode) shows at once."""
    good = b" $FLTCON WT=4960.0$\nNEXT CASE\n"
    bad = b" $FLTCON WT=49.0,,$\nNEXT CASE\n"
    assert len(bad) == len(good)
    path = dsession / "uploads" / "deck.dat"
    write_bytes(path, good)
    assert deck_problems(dsession) == []
    ino = os.stat(path).st_ino
    fd = os.open(path, os.O_WRONLY)
    try:
        assert os.pwrite(fd, bad, 0) == len(bad)
    finally:
        os.close(fd)
    assert os.stat(path).st_ino == ino
    problems = deck_problems(dsession)
    assert len(problems) == 1 and "line 1, column" in problems[0], problems
    write_bytes(path, good)
    assert deck_problems(dsession) == []


# -- the job graph ----------------------------------------------------------

def graph_doc(nodes, edges=()):
    return {"nodes": [{"id": f"n{i}", "label": "relax"}
                      for i in range(nodes)],
            "edges": list(edges), "meta": {}}


def last_log(session):
    return [(p, m) for _, p, m in log_entries(session / "log")][-1]


def test_graph_node_and_edge_counts(session):
    """parameters.json past the node or edge limit is refused before its
    nodes are checked; a graph at the limit takes no new node file, but a
    node rewritten in place is no new node."""
    assert put_json(session / "parameters.json",
                    graph_doc(GRAPH_MAX_NODES + 1)) == errno.EINVAL
    assert last_log(session) == (
        "parameters.json",
        f'"nodes": {GRAPH_MAX_NODES + 1} nodes: a graph holds at most'
        f" {GRAPH_MAX_NODES}")
    edge = {"source_node_id": "n0", "target_node_id": "n1"}
    edges = [dict(edge, id=f"e{i}") for i in range(GRAPH_MAX_EDGES + 1)]
    assert put_json(session / "parameters.json",
                    graph_doc(2, edges)) == errno.EINVAL
    assert last_log(session) == (
        "parameters.json",
        f'"edges": {GRAPH_MAX_EDGES + 1} edges: a graph holds at most'
        f" {GRAPH_MAX_EDGES}")
    assert put_json(session / "parameters.json",
                    graph_doc(GRAPH_MAX_NODES)) == 0
    assert put_json(session / "nodes" / "extra.json",
                    {"label": "relax"}) == errno.EINVAL
    assert last_log(session) == (
        "nodes/extra.json",
        f"the graph has {GRAPH_MAX_NODES} nodes: a graph holds at most"
        f" {GRAPH_MAX_NODES}")
    assert not os.path.exists(session / "nodes" / "extra.json")
    assert put_json(session / "nodes" / "n7.json",
                    {"label": "scf"}) == 0


INPUT_X = {"label": "relax", "input_parameters": [{"name": "x", "value": "v"}]}


def dag_edge(k, i, j):
    return {"id": f"e{k}", "source_node_id": f"n{i}",
            "target_node_id": f"n{j}", "target_parameter_name": "x"}


def dag_edges(count):
    """`count` distinct edges n_i -> n_j (i < j) between as few nodes as
    give that many pairs: no duplicate, no cycle."""
    nodes = 2
    while nodes * (nodes - 1) // 2 < count:
        nodes += 1
    pairs = ((i, j) for j in range(nodes) for i in range(j))
    return nodes, [dag_edge(k, i, j) for k, (i, j) in zip(range(count),
                                                          pairs)]


def test_graph_edge_files_past_the_limit(session):
    """Edge files written one by one up to the limit (the graph filled by
    parameters.json to 100 short of it first, so that the test takes
    seconds): the 20,001st file is refused, EINVAL and a log line naming
    the limit; a waiting edge counts too; deleting an edge file makes
    room for one."""
    files = 100
    nodes, edges = dag_edges(GRAPH_MAX_EDGES + 1)
    doc = {"nodes": [dict(INPUT_X, id=f"n{i}") for i in range(nodes)],
           "edges": edges[:GRAPH_MAX_EDGES - files], "meta": {}}
    assert put_json(session / "parameters.json", doc) == 0
    for e in edges[GRAPH_MAX_EDGES - files:GRAPH_MAX_EDGES]:
        assert put_json(session / "edges" / f"{e['id']}.json", e) == 0
    assert len(os.listdir(session / "edges")) == GRAPH_MAX_EDGES
    over = edges[GRAPH_MAX_EDGES]
    path = session / "edges" / f"{over['id']}.json"
    assert put_json(path, over) == errno.EINVAL
    assert last_log(session) == (
        f"edges/{over['id']}.json",
        f"the graph has {GRAPH_MAX_EDGES} edges: a graph holds at most"
        f" {GRAPH_MAX_EDGES}")
    assert not os.path.exists(path)
    waiting = dict(over, id="waits", source_node_id="nowhere")
    assert put_json(session / "edges" / "waits.json",
                    waiting) == errno.EINVAL
    assert last_log(session)[0] == "edges/waits.json"
    # an edge rewritten takes no new room
    assert put_json(session / "edges" / "e5.json", dict(over, id="e5")) == 0
    os.unlink(session / "edges" / "e0.json")
    assert put_json(path, dict(edges[0], id=over["id"])) == 0
    assert len(json.loads((session / "parameters.json").read_bytes())
               ["edges"]) == GRAPH_MAX_EDGES


def waiting_edge(i, param="x"):
    return {"source_node_id": f"a{i}", "target_node_id": f"b{i}",
            "target_parameter_name": param}


def test_waiting_edges_count(session):
    """Edges whose nodes are not there wait, 1000 at most per session:
    the 1001st is refused (EINVAL, a log line saying so) and its file is
    not there; a waiting edge rewritten takes no new place, and one that
    joins the graph when its nodes come makes room."""
    for i in range(GRAPH_PENDING_MAX):
        assert put_json(session / "edges" / f"w{i}.json",
                        waiting_edge(i)) == 0
    over = session / "edges" / "over.json"
    assert put_json(over, waiting_edge(GRAPH_PENDING_MAX)) == errno.EINVAL
    assert last_log(session) == (
        "edges/over.json",
        f"cannot wait for its nodes: {GRAPH_PENDING_MAX} edges wait"
        " already, the most a session keeps (write their nodes, or"
        " parameters.json)")
    assert not os.path.exists(over)
    assert put_json(session / "edges" / "w0.json", waiting_edge(0, "y")) == 0
    assert put_json(session / "nodes" / "a1.json", {"label": "relax"}) == 0
    assert put_json(session / "nodes" / "b1.json", INPUT_X) == 0
    assert put_json(over, waiting_edge(GRAPH_PENDING_MAX)) == 0
    waits = [p for p in status_of(session)[0] if p.startswith("edges/")]
    assert len(waits) == GRAPH_PENDING_MAX, len(waits)


def test_waiting_edge_size(session):
    """An edge that would wait, bigger than 4096 bytes as its file would
    show it, is refused (EINVAL, a log line with its size and the limit);
    one within it waits."""
    big = waiting_edge(0, param="p" * GRAPH_PENDING_SIZE)
    path = session / "edges" / "big.json"
    assert put_json(path, big) == errno.EINVAL
    p, message = last_log(session)
    shown = len(json.dumps(dict(big, id="big"), indent=2))
    assert p == "edges/big.json" and message == (
        f"too big to wait for its nodes: {shown} bytes as its file would"
        f" show it (at most {GRAPH_PENDING_SIZE})"), message
    assert not os.path.exists(path)
    fits = waiting_edge(0, param="p" * (GRAPH_PENDING_SIZE - 200))
    assert len(json.dumps(dict(fits, id="big"), indent=2)) \
        <= GRAPH_PENDING_SIZE
    assert put_json(path, fits) == 0
    assert json.loads(path.read_bytes()) == dict(fits, id="big")


# -- the transcript ---------------------------------------------------------

FIRST = {"phenomenon": "P", "hypothesis": "H", "model": "M",
         "experiment": "print(1)", "observation": "1"}
NEXT = {"inference": "I", "hypothesis": "H", "model": "M",
        "experiment": "print(2)", "observation": "2"}


@pytest.fixture
def sw(session):
    assert bind(session, "scientific-workflow") == 0
    return session


def test_round_size(sw):
    big = dict(FIRST, observation="x" * ROUND_MAX)
    assert put_json(sw / "rounds" / "1.json", big) == errno.EINVAL
    path, message = last_log(sw)
    assert path == "rounds/1.json" and message.endswith(
        f" bytes: a round holds at most {ROUND_MAX}"), message
    assert not os.path.exists(sw / "rounds" / "1.json")


def test_rounds_total(sw):
    """Rounds just under the size of one, until together they would pass
    the total: that round is refused, and the transcript has the others."""
    fill = "x" * (ROUND_MAX - 4096)
    n, err = 1, 0
    while n <= ROUNDS_TOTAL_MAX // ROUND_MAX + 2:
        doc = dict(FIRST if n == 1 else NEXT, observation=fill)
        err = put_json(sw / "rounds" / f"{n}.json", doc)
        if err:
            break
        n += 1
    assert err == errno.EINVAL and n == ROUNDS_TOTAL_MAX // ROUND_MAX + 1, n
    path, message = last_log(sw)
    assert path == f"rounds/{n}.json" and message.endswith(
        f"a session's rounds hold at most {ROUNDS_TOTAL_MAX} together"), \
        message
    assert sorted(os.listdir(sw / "rounds")) == sorted(
        f"{i}.json" for i in range(1, n))


# -- the context ------------------------------------------------------------

def test_context_size(session):
    doc = {"role": "assistant", "content": "x" * CONTEXT_MAX,
           "tool_calls": []}
    assert put_json(session / "context.json", doc) == errno.EINVAL
    path, message = last_log(session)
    assert path == "context.json" and message == (
        f"{len(json.dumps(doc))} bytes: a context holds at most"
        f" {CONTEXT_MAX}"), message
    assert (session / "context.json").read_bytes() == b"null"


# -- documents being written ------------------------------------------------

def open_drafts(folder, count, name="session.json"):
    """Open `name` in `folder` up to `count` times, a 1-byte write at its
    largest offset each: the descriptors, how many took their byte, and
    the errno of the open or write refused (0: none)."""
    fds, wrote = [], 0
    try:
        for _ in range(count):
            fds.append(os.open(folder / name, os.O_WRONLY))
            os.pwrite(fds[-1], b"x", DOC_MAX - 1)
            wrote += 1
    except OSError as e:
        return fds, wrote, e.errno
    return fds, wrote, 0


def close_all(fds):
    for fd in fds:
        try:
            os.close(fd)
        except OSError as e:
            # what each holds is no document: refused, as any would be
            assert e.errno == errno.EINVAL


def test_open_documents_bounded_per_session(session):
    """The issue's 200 descriptors on session.json, each with one byte
    written at 16 MiB: the fifth passes the session's 64 MiB."""
    per = DOC_SESSION_BUDGET // DOC_MAX
    fds, wrote, err = open_drafts(session, per + 1)
    try:
        assert (wrote, err) == (per, errno.ENOSPC)
        lines = [m for _, p, m in log_entries(session / "log")
                 if p == "session.json" and m.startswith("no room")]
        assert len(lines) == 1 and lines[0].endswith(
            " bytes: documents being written hold at most"
            f" {DOC_SESSION_BUDGET // MiB} MiB per session and"
            f" {DOC_MOUNT_BUDGET // MiB} MiB in all until they are closed"), \
            lines
    finally:
        close_all(fds)
    # closed, they hold nothing: room again
    fds, wrote, err = open_drafts(session, per)
    close_all(fds)
    assert (wrote, err) == (per, 0)


def test_open_documents_bounded_per_mount(flowfs):
    sessions = DOC_MOUNT_BUDGET // DOC_SESSION_BUDGET
    per = DOC_SESSION_BUDGET // DOC_MAX
    held = []
    try:
        for i in range(sessions):
            os.mkdir(flowfs.mnt / f"s{i}")
            fds, wrote, err = open_drafts(flowfs.mnt / f"s{i}", per)
            held += fds
            assert (wrote, err) == (per, 0)
        os.mkdir(flowfs.mnt / "last")
        fds, wrote, err = open_drafts(flowfs.mnt / "last", 1)
        held += fds
        assert (wrote, err) == (0, errno.ENOSPC)
    finally:
        close_all(held)
    # room comes back with each RELEASE, which the kernel sends after
    # close() returns
    wait_until(lambda: put(flowfs.mnt / "last" / "request.json", b"{}") == 0,
               "room again once the drafts are released")


HOLD_DRAFTS = r"""
import os, sys
count, size = int(sys.argv[1]), int(sys.argv[2])
fds, wrote, err = [], 0, 0
try:
    for _ in range(count):
        fds.append(os.open("session.json", os.O_WRONLY))
        os.pwrite(fds[-1], b"x", size - 1)
        wrote += 1
except OSError as e:
    err = e.errno
print(wrote, err, flush=True)
sys.stdin.read()
"""


class Holder:
    """Another user's process holding `count` drafts of session.json open
    in `folder` (made and given to that user if missing) until closed."""

    def __init__(self, uid, folder, count):
        import subprocess
        drop = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
        if not folder.exists():
            os.mkdir(folder)
            os.chown(folder, uid, uid)
        self.proc = subprocess.Popen(
            [*drop, "/usr/bin/python3", "-c", HOLD_DRAFTS, str(count),
             str(DOC_MAX)], cwd=folder, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True)
        wrote, err = self.proc.stdout.readline().split()
        self.got = (int(wrote), int(err))

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.mark.root      # other users on the mount: allow_other
def test_other_users_cannot_take_the_mounts_budget(make_flowfs):
    """On a mount shared with -o allow_other (sessions root gave to other
    users), one user's open drafts could take the whole mount's budget
    (256 MiB), so everyone else's failed:
    a user other than the mount's holds at most a session's budget, all of
    them together half the mount's, and the owner keeps the rest."""
    fs = make_flowfs(extra_args=["-o", "allow_other"])
    per = DOC_SESSION_BUDGET // DOC_MAX
    held, owners = [], []
    try:
        held.append(Holder(4242, fs.mnt / "a1", per))
        assert held[-1].got == (per, 0)
        # the same user's second session: past his own budget
        held.append(Holder(4242, fs.mnt / "a2", 1))
        assert held[-1].got == (0, errno.ENOSPC)
        lines = [m for _, p, m in log_entries(fs.mnt / "a2" / "log")
                 if m.startswith("no room")]
        assert len(lines) == 1 and lines[0].endswith(
            f" MiB per session, {DOC_SESSION_BUDGET // MiB} MiB per user other"
            f" than the mount's ({DOC_MOUNT_BUDGET // 2 // MiB} MiB for all of"
            f" them) and {DOC_MOUNT_BUDGET // MiB} MiB in all until they are"
            " closed"), lines
        held.append(Holder(4243, fs.mnt / "b", per))
        assert held[-1].got == (per, 0)
        # a third user: the others' half is taken
        held.append(Holder(4244, fs.mnt / "c", 1))
        assert held[-1].got == (0, errno.ENOSPC)
        # the owner keeps the other half, in sessions of its own
        for name in ("o1", "o2"):
            os.mkdir(fs.mnt / name)
            fds, wrote, err = open_drafts(fs.mnt / name, per)
            owners += fds
            assert (wrote, err) == (per, 0)
    finally:
        for h in held:
            h.close()
        close_all(owners)
    # closed (and released, after close() returns), they hold nothing

    def room_again():
        h = Holder(4244, fs.mnt / "c", 1)
        h.close()
        return h.got == (1, 0)
    wait_until(room_again, "room again once the drafts are released")


def test_a_file_renamed_onto_a_document_is_held_to_its_size(session):
    """rsync's way (a temporary file renamed onto the name) is held to
    the 16 MiB a write is: refused with EFBIG before it is read, a log
    line says why, and parameters.json is as it was."""
    before = (session / "parameters.json").read_bytes()
    doc = json.dumps({"nodes": [], "edges": [],
                      "meta": {"pad": "x" * (DOC_MAX + 1)}}).encode()
    tmp = session / ".parameters.json.XXXXXX"
    write_bytes(tmp, doc)
    with pytest.raises(OSError) as e:
        os.rename(tmp, session / "parameters.json")
    assert e.value.errno == errno.EFBIG
    assert last_log(session) == (
        "parameters.json", f"{len(doc)} bytes: a document holds at most"
        f" {DOC_MAX // MiB} MiB")
    assert (session / "parameters.json").read_bytes() == before


def test_generated_copies_open_for_reading_count_too(sw):
    """A generated file open for reading holds the copy it was rendered
    into (30 readers of a 15 MiB summary.json took 464 MiB): those have a
    budget of their own, so the fifth open of a 15 MiB summary.json in one
    session is refused, the log can still be read, and closing gives the
    room back."""
    assert put_json(sw / "request.json", {"input": {
        "description": "d", "io_instructions": "i"}}) == 0
    fill = "x" * (ROUND_MAX - 4096)
    for n in range(1, 16):
        doc = dict(FIRST if n == 1 else NEXT, observation=fill)
        assert put_json(sw / "rounds" / f"{n}.json", doc) == 0
    summary = sw / "output" / "summary.json"
    size = summary.stat().st_size
    per = DOC_SESSION_BUDGET // size
    assert per == 4, size
    fds = []
    try:
        with pytest.raises(OSError) as e:
            for _ in range(per + 1):
                fds.append(os.open(summary, os.O_RDONLY))
        assert e.value.errno == errno.ENOSPC
        assert len(fds) == per
        assert last_log(sw) == (
            "output/summary.json", f"no room to hold {size} bytes:"
            " generated files open hold at most"
            f" {DOC_SESSION_BUDGET // MiB} MiB per session and"
            f" {DOC_MOUNT_BUDGET // MiB} MiB in all until they are closed")
    finally:
        for fd in fds:
            os.close(fd)

    def opens():
        try:
            os.close(os.open(summary, os.O_RDONLY))
        except OSError as e:
            assert e.errno == errno.ENOSPC
            return False
        return True
    wait_until(opens, "room again once the copies are released")
    # opened for writing (a copy dropped on close), it holds its copy too
    fds = []
    try:
        with pytest.raises(OSError) as e:
            for _ in range(per + 1):
                fds.append(os.open(summary, os.O_WRONLY))
        assert e.value.errno == errno.ENOSPC and len(fds) == per
    finally:
        for fd in fds:
            os.close(fd)
