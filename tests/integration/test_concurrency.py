"""Sessions side by side (issue 13, "one lock"): writers commit a graph's
parameters.json and import DATCOM decks outside the filesystem's lock,
on a connection of their own, while readers of every session stat, read
and list.  Whatever a reader sees must be one whole state: a graph as one
of its writes left it, never half of one.  The test build checks the
lock rules as it runs (a commit by a thread without the write lock
aborts the daemon) and its sanitizers watch the threads: the fixture
fails the test on either.  It found one: two opens of parameters.json on
either side of a change shared the kernel's page cache of the file, and
one read a copy cut at the other's size (each open now reads its own
copy: direct I/O)."""

import json
import os
import random
import sqlite3
import threading
import time

import yaml

from conftest import bind, put, read_bytes
from test_datcom import PC9, request

SECONDS = 6
GRAPH_SIZES = (1, 40, 120, 300)


def graph_doc(n):
    """A graph of n nodes in a chain, every field given (so that what it
    renders back is the same each time)."""
    nodes = [{
        "id": f"n{i}",
        "node_uuid": f"00000000-0000-4000-8000-{i:012d}",
        "node_version": "1.0",
        "label": "abacus_calculation",
        "position_x": float(i), "position_y": 0.0,
        "system_values": {"machine_type": "c2_m8_cpu", "image": "img:1",
                          "docker_image": ""},
        "input_parameters": [{"name": "k", "type": "str",
                              "value": f"v{i}"}],
        "output_parameters": [],
    } for i in range(n)]
    edges = [{"id": f"e{i}", "source_node_id": f"n{i}",
              "source_parameter_name": "out_abacus_calculation",
              "target_node_id": f"n{i + 1}", "target_parameter_name": "k"}
             for i in range(n - 1)]
    return json.dumps({"nodes": nodes, "edges": edges, "meta": {
        "template_uuid": "00000000-0000-4000-8000-00000000cafe"}})


def replace(path, data):
    """The atomic replace a careful writer makes (README: a temporary
    file renamed over the name): readers see the old or the new, whole.
    (Written in place, a file is empty between open(O_TRUNC) and the
    writes, for flowfs's documents as for any file.)"""
    tmp = path.with_name(f".{path.name}.tmp")
    if isinstance(data, str):
        data = data.encode()
    with open(tmp, "wb") as f:
        f.write(data)
    os.rename(tmp, path)


class Race:
    def __init__(self):
        self.stop = threading.Event()
        self.errors = []
        self.counts = {}
        self.lock = threading.Lock()

    def run(self, name, step):
        def loop():
            n = 0
            try:
                while not self.stop.is_set():
                    step()
                    n += 1
            except Exception as e:  # noqa: B902 - reported below
                with self.lock:
                    self.errors.append(f"{name}: {e!r}")
            with self.lock:
                self.counts[name] = n
        t = threading.Thread(target=loop, name=name)
        t.start()
        return t

    def finish(self, threads):
        """Let them race for SECONDS, stop them; none failed, each ran."""
        time.sleep(SECONDS)
        self.stop.set()
        for t in threads:
            t.join(timeout=120)
            assert not t.is_alive(), f"{t.name} still running after 2 minutes"
        assert not self.errors, "\n".join(self.errors)
        assert all(self.counts.get(t.name, 0) > 0 for t in threads), \
            self.counts


def export_commands(text):
    """The tasks of a workflow.argo.yaml and the set of its containers'
    first command words."""
    doc = yaml.safe_load(text)
    templates = doc["spec"]["templates"]
    dag = next(t for t in templates
               if t["name"] == doc["spec"]["entrypoint"])["dag"]["tasks"]
    return len(dag), {t["container"]["command"][0] for t in templates
                      if "container" in t}


def test_renders_race_writes_in_many_sessions(make_flowfs, isolated_config):
    # two tool maps in turn: each export is rendered with one, whole
    # (each allows the nodes' image, as a map must: issue 25)
    maps = [{"abacus_calculation": {"image": "img:1",
                                    "command": [word, "{{ k }}"]}}
            for word in ("echo", "printf")]
    tools = isolated_config / "flowfs" / "tools.json"
    tools.parent.mkdir(parents=True, exist_ok=True)
    tools.write_text(json.dumps(maps[0]))
    fs = make_flowfs()
    graphs = [fs.mnt / f"g{i}" for i in range(3)]
    decks = [fs.mnt / f"d{i}" for i in range(2)]
    for s in graphs + decks:
        os.mkdir(s)
    # each graph size once, quietly: what its parameters.json reads back
    docs = {n: graph_doc(n) for n in GRAPH_SIZES}
    renders = {}
    for n, doc in docs.items():
        assert put(graphs[0] / "parameters.json", doc) == 0
        renders[read_bytes(graphs[0] / "parameters.json")] = n
        assert len(os.listdir(graphs[0] / "nodes")) == n
    assert len(renders) == len(GRAPH_SIZES)
    # two decks that differ: the PC-9's, and the same at another weight
    deck_texts = []
    for wt in (4960.0, 5100.0):
        assert bind(decks[0], "datcom") == 0
        assert request(decks[0], {**PC9, "wt": wt}) == 0
        deck_texts.append(read_bytes(decks[0] / "output" / "for005.dat"))
    assert deck_texts[0] != deck_texts[1]
    for s in decks:
        assert put(s / "session.json", json.dumps({"skill": "datcom"})) == 0
        assert put(s / "request.json", "{}") == 0
        replace(s / "uploads" / "deck.dat", deck_texts[0])
    for s in graphs:
        replace(s / "parameters.json", docs[GRAPH_SIZES[0]])

    race = Race()
    threads = []
    for i, s in enumerate(graphs):
        rng = random.Random(i)

        def write_graph(s=s, rng=rng):
            replace(s / "parameters.json", docs[rng.choice(GRAPH_SIZES)])

        def read_graph(s=s):
            got = read_bytes(s / "parameters.json")
            assert got in renders, f"{s.name}: a graph no write left" \
                f" ({len(got)} bytes)"
            assert len(os.listdir(s / "nodes")) in GRAPH_SIZES
            os.stat(s / "status")
            read_bytes(s / "status")
        def read_export(s=s):
            tasks, words = export_commands(
                read_bytes(s / "output" / "workflow.argo.yaml"))
            assert tasks in GRAPH_SIZES, f"{s.name}: {tasks} tasks"
            assert words in ({"echo"}, {"printf"}), \
                f"{s.name}: commands of two maps: {words}"
        threads.append(race.run(f"write {s.name}", write_graph))
        threads.append(race.run(f"read {s.name}", read_graph))
        threads.append(race.run(f"export {s.name}", read_export))
    turn = iter(range(1, 1 << 30))

    def write_tools():
        replace(tools, json.dumps(maps[next(turn) % 2]))
        time.sleep(0.05)
    threads.append(race.run("write tools.json", write_tools))
    for i, s in enumerate(decks):
        rng = random.Random(100 + i)

        def write_deck(s=s, rng=rng):
            replace(s / "uploads" / "deck.dat", rng.choice(deck_texts))
            read_bytes(s / "status")

        def read_deck(s=s):
            text = read_bytes(s / "status")
            assert text, f"{s.name}: an empty status"
            deck = read_bytes(s / "output" / "for005.dat")
            assert b"$FLTCON" in deck, f"{s.name}: no deck: {deck[:200]!r}"
            json.loads(read_bytes(s / "status.json"))
        threads.append(race.run(f"write {s.name}", write_deck))
        threads.append(race.run(f"read {s.name}", read_deck))

    race.finish(threads)
    # what the last writes left is there and whole
    for s in graphs:
        assert read_bytes(s / "parameters.json") in renders
    for s in decks:
        assert b"$FLTCON" in read_bytes(s / "output" / "for005.dat")



def test_generated_files_map_privately(flowfs):
    """What the README says of generated files read past the page cache:
    mmap(MAP_PRIVATE) reads what read() does; MAP_SHARED gets ENODEV."""
    import errno
    import mmap
    s = flowfs.mnt / "s"
    os.mkdir(s)
    replace(s / "parameters.json", graph_doc(5))
    want = read_bytes(s / "parameters.json")
    with open(s / "parameters.json", "rb") as f:
        with mmap.mmap(f.fileno(), len(want), flags=mmap.MAP_PRIVATE,
                       prot=mmap.PROT_READ) as m:
            assert m[:] == want
        try:
            mmap.mmap(f.fileno(), len(want), flags=mmap.MAP_SHARED,
                      prot=mmap.PROT_READ).close()
        except OSError as e:
            assert e.errno == errno.ENODEV
        else:
            raise AssertionError("MAP_SHARED of a generated file worked")


def test_big_files_rewritten_while_read(flowfs):
    """A writer's big work goes outside the filesystem's lock (what an
    open file gathered, cuts of a megabyte or more, the data of removed
    files): readers of the same file and of another session meanwhile
    get no error and no byte that no version holds (but the zeros FUSE
    fills a read with that a cut made short); the file ends whole."""
    a, b = flowfs.mnt / "a", flowfs.mnt / "b"
    os.mkdir(a)
    os.mkdir(b)
    path = b / "uploads" / "big"
    versions = [bytes([65 + i]) * (3 << 20) for i in range(3)]
    path.write_bytes(versions[0])
    race = Race()
    rng = random.Random(5)

    def rewrite():
        path.write_bytes(rng.choice(versions))

    def replace_and_remove():
        replace(b / "uploads" / "other", versions[1])
        os.unlink(b / "uploads" / "other")

    def read_big():
        got = read_bytes(path)
        # Beside a rewrite in place a read may end early (a cut) or go
        # on into the new version, as on any filesystem, and (FUSE) end
        # in zeros: the kernel fills a read the cut made short with
        # zeros up to the size it knew (flowfs before this did the
        # same).  Every other byte is one a version holds: none from
        # another file, none of memory not written.
        assert set(got) <= {0, 65, 66, 67}, sorted(set(got))

    threads = [race.run("rewrite", rewrite),
               race.run("replace and remove", replace_and_remove),
               race.run("read big", read_big),
               race.run("read status", lambda: read_bytes(a / "status"))]
    race.finish(threads)
    assert read_bytes(path) in versions


def test_a_big_write_read_as_it_goes(flowfs):
    """While a big file is written (committed 8 MiB at a time by a thread
    of its own, beside the writer: the spill), readers of it see every
    byte written so far, whichever part is gathered, on its way or
    stored, and readers of another session get on."""
    a, b = flowfs.mnt / "a", flowfs.mnt / "b"
    os.mkdir(a)
    os.mkdir(b)
    path = b / "uploads" / "big"
    data = random.Random(7).randbytes(48 << 20)
    step = 100_003  # writes that end inside chunks and spills
    done = threading.Event()
    race = Race()

    def write():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            for off in range(0, len(data), step):
                os.write(fd, data[off:off + step])
        finally:
            os.close(fd)
        done.set()

    def read_big():
        got = read_bytes(path)
        assert got == data[:len(got)], f"differs from what was written" \
            f" (read {len(got)} bytes)"

    path.write_bytes(b"")   # there before the readers start
    writer = threading.Thread(target=write)
    writer.start()
    threads = [race.run("read big", read_big),
               race.run("read status", lambda: read_bytes(a / "status"))]
    writer.join(timeout=120)
    assert done.is_set(), "the writer did not finish"
    race.finish(threads)
    assert read_bytes(path) == data


def test_a_reader_goes_on_while_a_writer_waits(flowfs):
    """No session's read waits for another's write (issue 13): while the
    commit of session b's parameters.json is held up — another program
    holds the database's write lock — session a's status and b's old
    graph can be read, and the write then completes.  With one lock for
    every request, the reads waited for the write to give up.  (No time
    is asserted: only the order of the two.)"""
    a, b = flowfs.mnt / "a", flowfs.mnt / "b"
    os.mkdir(a)
    os.mkdir(b)
    replace(b / "parameters.json", graph_doc(3))
    old = read_bytes(b / "parameters.json")
    blocker = sqlite3.connect(flowfs.db, isolation_level=None, timeout=30)
    writer_done = threading.Event()
    result = {}

    def write():
        try:
            result["put"] = put(b / "parameters.json", graph_doc(40))
        finally:
            writer_done.set()

    blocker.execute("BEGIN IMMEDIATE")
    try:
        t = threading.Thread(target=write)
        t.start()
        # let it reach the commit, which now waits for the lock
        time.sleep(0.5)
        assert not writer_done.is_set(), "the write did not wait"
        os.stat(a / "status")
        assert read_bytes(a / "status")
        assert read_bytes(b / "parameters.json") == old
        reads_done_first = not writer_done.is_set()
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    t.join(timeout=60)
    assert reads_done_first, "the reads waited for the write"
    assert result.get("put") == 0
    assert read_bytes(b / "parameters.json") != old


def test_a_reader_goes_on_while_an_export_renders(make_flowfs,
                                                  isolated_config):
    """The exports of a big graph take a second or more to render (the
    plan, then every task): rendered under the filesystem's lock, as they
    were (and again for each lookup, stat and open), another session's
    reads waited for each render and got in only between two.  While
    session b's workflow.argo.yaml of a 10,000-node graph is read once,
    session a's status is read over and over: dozens of times, where the
    old code let a handful through.  (No time is asserted: only how many
    reads one read lets through.)  The export read is the graph's,
    whole, and kept: a second read is the same."""
    cfg = isolated_config / "flowfs"
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / "tools.json").write_text(json.dumps(
        {"abacus_calculation": {"image": "img:1",
                                "command": ["echo", "{{ k }}"]}}))
    fs = make_flowfs()
    a, b = fs.mnt / "a", fs.mnt / "b"
    os.mkdir(a)
    os.mkdir(b)
    n = 10000
    assert put(b / "parameters.json", graph_doc(n)) == 0
    assert read_bytes(a / "status")
    export = b / "output" / "workflow.argo.yaml"
    rendered = threading.Event()
    result = {}

    def read_export():
        try:
            result["text"] = read_bytes(export)
        finally:
            rendered.set()

    t = threading.Thread(target=read_export)
    t.start()
    reads = 0
    while not rendered.is_set():
        os.stat(a / "status")
        assert read_bytes(a / "status")
        reads += 1
    t.join(timeout=300)
    assert reads >= 20, f"a's status was read {reads} times meanwhile"
    doc = yaml.safe_load(result["text"])
    dag = next(t for t in doc["spec"]["templates"]
               if t["name"] == doc["spec"]["entrypoint"])["dag"]["tasks"]
    assert len(dag) == n
    assert read_bytes(export) == result["text"]
