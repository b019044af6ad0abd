"""Pictures (issue 30): output/graph.svg and output/graph.dot draw a
session's job graph (Graphviz's dot layout, in the daemon), its boxes
coloured by their jobs' states once it was submitted; with --datcom=PATH,
output/for006.dat, coefficients.csv and coefficients.svg give what the
real USAF Digital DATCOM computes from the session's deck (datcom_oracle.py
builds it from ../shared/datcom/aircraft-datcom; those tests skip, saying
why, without it).

Through the mount with plain file I/O.  Every SVG is parsed as XML and
drawn to PNG by rsvg-convert (librsvg2-bin), and the PNG must not be
blank; FLOWFS_PICTURES_DIR=DIR keeps the PNGs there to look at.
"""

import csv
import errno
import io
import json
import os
import shutil
import stat
import struct
import subprocess
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
import zlib

import pytest

import datcom_oracle
from conftest import bind, daemon_env, flowfs_bin, oserror, put_json, \
    read_bytes, status_json, wait_until
from test_datcom import PC9, request
from test_jobs import build_graph, ctl, mount_jobs, wait_graph  # noqa: F401
from limits import PICTURE_MAX_EDGES, PICTURE_MAX_NODES
from test_limits import dag_edge, graph_doc

SVG = "{http://www.w3.org/2000/svg}"


# -- pictures ------------------------------------------------------------------

def groups(svg, cls):
    """The <g class="CLS"> groups of an SVG (Graphviz's nodes and edges)."""
    return [g for g in ET.fromstring(svg).iter(SVG + "g")
            if g.get("class") == cls]


def title(g):
    return g.find(SVG + "title").text


def texts(svg):
    return ["".join(t.itertext()) for t in ET.fromstring(svg).iter(SVG + "text")]


def png_pixels(data):
    """(width, height, rows of RGBA bytes) of a non-interlaced 8-bit RGB or
    RGBA PNG, as rsvg-convert writes it."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    at, idat, head = 8, b"", None
    while at < len(data):
        n, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + n]
        if kind == b"IHDR":
            head = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        at += 12 + n
    w, h, depth, color, _, _, interlace = head
    assert depth == 8 and color in (2, 6) and not interlace, head
    bpp = 4 if color == 6 else 3
    raw, rows, prev = zlib.decompress(idat), [], bytearray(w * bpp)
    for y in range(h):
        f = raw[y * (w * bpp + 1)]
        line = bytearray(raw[y * (w * bpp + 1) + 1:(y + 1) * (w * bpp + 1)])
        for i in range(len(line)):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else
                                      b if pb <= pc else c)) & 255
        rows.append(bytes(line) if bpp == 4 else
                    b"".join(bytes(line[i:i + 3]) + b"\xff"
                             for i in range(0, len(line), 3)))
        prev = line
    return w, h, rows


def drawn(svg, tmp_path, name):
    """Draw `svg` to PNG with rsvg-convert: its colours {(r, g, b): pixels}
    after checking that it is not blank (more than one colour, and ink on
    at least 0.5 % of it)."""
    rsvg = shutil.which("rsvg-convert")
    if not rsvg:
        pytest.skip("rsvg-convert is not installed (Debian package "
                    "librsvg2-bin; tools/setup test installs it)")
    src, png = tmp_path / f"{name}.svg", tmp_path / f"{name}.png"
    src.write_bytes(svg)
    subprocess.run([rsvg, "-b", "white", "-o", str(png), str(src)],
                   check=True, timeout=60)
    keep = os.environ.get("FLOWFS_PICTURES_DIR")
    if keep:
        shutil.copy(png, os.path.join(keep, png.name))
    w, h, rows = png_pixels(png.read_bytes())
    colours = {}
    for row in rows:
        for i in range(0, len(row), 4):
            rgb = tuple(row[i:i + 3])
            colours[rgb] = colours.get(rgb, 0) + 1
    ink = sum(n for rgb, n in colours.items() if rgb != (255, 255, 255))
    assert w > 50 and h > 50, (w, h)
    assert len(colours) > 1 and ink > 0.005 * w * h, (name, ink, w * h)
    # Nothing dark at the right edge, inside a frame's line: text that
    # ran past the picture's width (Graphviz sizes labels by its own
    # font metrics, not the renderer's) would be cut off there.
    cut = [y for y, row in enumerate(rows)
           if any(min(row[4 * x:4 * x + 3]) < 128 for x in range(w - 8, w - 3))]
    assert not cut, (name, "ink at the right edge in rows", cut[:5])
    return colours


def near(colours, rgb, tolerance=6):
    """Pixels of about colour `rgb` (antialiasing blends the edges)."""
    return sum(n for c, n in colours.items()
               if all(abs(a - b) <= tolerance for a, b in zip(c, rgb)))


def hex_rgb(h):
    return tuple(int(h[i:i + 2], 16) for i in (1, 3, 5))


def fill_of(g):
    """The fill of a node's box (Graphviz draws a rounded box as a path)."""
    for el in g:
        if el.tag in (SVG + "path", SVG + "polygon") and el.get("fill"):
            return el.get("fill")
    return None


# -- the job graph -------------------------------------------------------------

FILLS = {"done": "#c8e6c9", "failed": "#f8c4c4", "skipped": "#e6def0"}


def test_graph_svg_has_a_group_per_node_and_edge(mount_jobs, tmp_path):
    fs = mount_jobs("local")
    s = fs.mnt / "s"
    os.mkdir(s)
    out = s / "output"
    # no node, no picture
    assert not {"graph.svg", "graph.dot"} & set(os.listdir(out))
    assert oserror(os.stat, out / "graph.svg") == errno.ENOENT
    build_graph(s, {"a": ("root", {}), "b": ("step", {"src": ""}),
                    "c": ("step", {"src": ""}),
                    "d": ("join", {"left": "", "right": ""})},
                [("a", "data", "b", "src"), ("a", "data", "c", "src"),
                 ("b", "data", "d", "left"), ("c", "data", "d", "right")])
    assert {"graph.svg", "graph.dot"} <= set(os.listdir(out))
    svg = read_bytes(out / "graph.svg")
    assert os.stat(out / "graph.svg").st_size == len(svg)
    nodes, edges = groups(svg, "node"), groups(svg, "edge")
    assert sorted(title(g) for g in nodes) == ["a", "b", "c", "d"]
    assert sorted(title(g) for g in edges) == \
        ["a->b", "a->c", "b->d", "c->d"]
    # each box says its id and label; each arrow its parameters
    words = texts(svg)
    assert {"a", "root", "d", "join"} <= set(words), words
    assert "data \u2192 left" in words, words
    # before a submit every box is white, and the caption says why
    assert {fill_of(g) for g in nodes} == {"white"}
    assert any("not submitted yet" in t for t in words), words
    colours = drawn(svg, tmp_path, "graph-unsubmitted")
    assert near(colours, (85, 85, 85)) > 0      # the boxes' lines
    # the DOT text it is drawn from: every node and edge
    dot = read_bytes(out / "graph.dot").decode()
    assert dot.startswith("digraph jobs {"), dot[:80]
    for line in ('a\t[label="a\\nroot"];', "a -> b", "c -> d"):
        assert line in dot, (line, dot)


def test_graph_svg_colours_the_states_of_a_failed_run(mount_jobs, tmp_path):
    fs = mount_jobs("local")
    s = fs.mnt / "s"
    os.mkdir(s)
    build_graph(s, {"a": ("root", {}), "f": ("fail", {"src": ""}),
                    "g": ("step", {"src": ""}), "u": ("root", {}),
                    "v": ("step", {"src": ""})},
                [("a", "data", "f", "src"), ("f", None, "g", "src"),
                 ("u", "data", "v", "src")])
    before = read_bytes(s / "output" / "graph.svg")
    assert ctl(s, "submit") == 0
    g = wait_graph(s)
    assert (g["state"], g["done"], g["failed"], g["skipped"]) == \
        ("failed", 3, 1, 1), g
    svg = read_bytes(s / "output" / "graph.svg")
    assert svg != before
    fills = {title(n): fill_of(n) for n in groups(svg, "node")}
    assert fills == {"a": FILLS["done"], "f": FILLS["failed"],
                     "g": FILLS["skipped"], "u": FILLS["done"],
                     "v": FILLS["done"]}, fills
    # still one group per node and edge: the legend is neither
    assert len(groups(svg, "node")) == 5 and len(groups(svg, "edge")) == 3
    words = [w.strip("\xa0 ") for w in texts(svg)]
    for word in ("done 3", "failed 1", "skipped 1", "running 0"):
        assert word in words, (word, words)
    colours = drawn(svg, tmp_path, "graph-failed-run")
    for state, fill in FILLS.items():
        assert near(colours, hex_rgb(fill), 2) > 100, (state, fill)
    assert 'fillcolor="#f8c4c4"' in read_bytes(
        s / "output" / "graph.dot").decode()


def test_pending_edges_are_dashed(mount_jobs):
    """An edge waiting to join the graph is drawn dashed between its nodes;
    one waiting for a node that is not there is counted in the caption."""
    fs = mount_jobs("local")
    s = fs.mnt / "s"
    os.mkdir(s)
    for eid, src, dst in (("e1", "a", "b"), ("e2", "b", "a"),
                          ("e3", "b", "zz")):
        assert put_json(s / "edges" / f"{eid}.json",
                        {"source_node_id": src, "source_parameter_name": "o",
                         "target_node_id": dst,
                         "target_parameter_name": "x"}) == 0
    for nid in "ab":
        assert put_json(s / "nodes" / f"{nid}.json", {
            "label": "step", "input_parameters": [{"name": "x"}]}) == 0
    # e1 joined; e2 would close a cycle, e3 waits for zz
    assert "would close a cycle" in status_text(s), status_text(s)
    svg = read_bytes(s / "output" / "graph.svg")
    edges = {title(g): g for g in groups(svg, "edge")}
    assert sorted(edges) == ["a->b", "b->a"], sorted(edges)
    dashed = {t for t, g in edges.items()
              if any(el.get("stroke-dasharray") for el in g)}
    assert dashed == {"b->a"}
    assert any("1 edge waits for nodes that are not there" in t
               for t in texts(svg)), texts(svg)


def test_a_graph_too_big_to_lay_out_says_so(mount_jobs, tmp_path):
    fs = mount_jobs("local")
    s = fs.mnt / "s"
    os.mkdir(s)
    doc = {"nodes": [{"id": f"n{i}", "label": "step"} for i in range(501)],
           "edges": [], "meta": {}}
    assert put_json(s / "parameters.json", doc) == 0
    svg = read_bytes(s / "output" / "graph.svg")
    # not laid out: no node drawn, a picture that says why
    assert groups(svg, "node") == []
    assert any("This job graph has 501 nodes and 0 edges:" in t for t in texts(svg))
    drawn(svg, tmp_path, "graph-too-big")
    # the DOT text needs no layout: it is whole
    dot = read_bytes(s / "output" / "graph.dot").decode()
    assert "n0\t[label" in dot and "n500\t[label" in dot



def bound_graph(edges):
    """PICTURE_MAX_NODES nodes n0..n499 and `edges` edges between them,
    each from a node to one of the next few (a layout of seconds, not of
    a dense tangle)."""
    pairs = [(i, d) for d in (1, 2, 3, 4)
             for i in range(PICTURE_MAX_NODES - d)]
    # an input takes one edge: x1 from the node before, x2 from two before
    doc = graph_doc(PICTURE_MAX_NODES, [
        dict(dag_edge(k, i, i + d), target_parameter_name=f"x{d}")
        for k, (i, d) in enumerate(pairs[:edges])])
    for node in doc["nodes"]:
        node["input_parameters"] = [{"name": f"x{d}"} for d in (1, 2, 3, 4)]
    return doc


def test_a_graph_at_the_bound_is_laid_out(mount_jobs, tmp_path):
    """Exactly 500 nodes and 1000 edges: drawn, every node and edge."""
    fs = mount_jobs("local")
    s = fs.mnt / "s"
    os.mkdir(s)
    assert put_json(s / "parameters.json",
                    bound_graph(PICTURE_MAX_EDGES)) == 0
    svg = read_bytes(s / "output" / "graph.svg")
    assert len(groups(svg, "node")) == PICTURE_MAX_NODES
    assert len(groups(svg, "edge")) == PICTURE_MAX_EDGES


def test_a_graph_one_edge_past_the_bound_says_so(mount_jobs):
    fs = mount_jobs("local")
    s = fs.mnt / "s"
    os.mkdir(s)
    assert put_json(s / "parameters.json",
                    bound_graph(PICTURE_MAX_EDGES + 1)) == 0
    svg = read_bytes(s / "output" / "graph.svg")
    assert groups(svg, "node") == []
    assert any("This job graph has 500 nodes and 1001 edges:" in t
               for t in texts(svg)), texts(svg)

# -- DATCOM --------------------------------------------------------------------

COLUMNS = ["CD", "CL", "CM", "CN", "CA", "XCP", "CLA", "CMA", "CYB", "CNB",
           "CLB"]


@pytest.fixture
def datcom_bin():
    return datcom_oracle.require()


def datcom_mount(make_flowfs, program, *more):
    return make_flowfs(extra_args=[f"--datcom={program}", *more])


def datcom_session(fs, name, params):
    s = fs.mnt / name
    os.mkdir(s)
    assert bind(s, "datcom") == 0
    assert request(s, params) == 0
    assert status_text(s) == "ready\n", status_text(s)
    return s


def status_text(s):
    return read_bytes(s / "status").decode()


def curves(svg):
    """The curves of the first panel of gnuplot's SVG: its plots are groups
    gnuplot_plot_<curve><panel>."""
    ids = {g.get("id") for g in ET.fromstring(svg).iter(SVG + "g")}
    return sorted(i for i in ids if i and i.startswith("gnuplot_plot_")
                  and i.endswith("a"))


def test_pc9_coefficients_are_datcoms_table(make_flowfs, isolated_config,
                                            datcom_bin, tmp_path):
    fs = datcom_mount(make_flowfs, datcom_bin)
    s = datcom_session(fs, "pc9", PC9)
    out = s / "output"
    assert {"for006.dat", "coefficients.csv", "coefficients.svg"} <= \
        set(os.listdir(out))
    # DATCOM on the deck by the tests' own run: the same printout
    want = datcom_oracle.run(datcom_bin, read_bytes(out / "for005.dat"))
    printout = read_bytes(out / "for006.dat")
    assert printout.decode("ascii") == want.output
    assert os.stat(out / "for006.dat").st_size == len(printout)
    rows = list(csv.reader(io.StringIO(
        read_bytes(out / "coefficients.csv").decode())))
    assert rows[0] == ["case", "case_id", "configuration", "mach",
                       "altitude", "alpha", *COLUMNS, "why_empty"]
    table = [[alpha] + [vals.get(c, "") for c in COLUMNS]
             for t in want.tables for alpha, vals in t.rows]
    assert len(want.tables) == 1 and len(table) == 6
    assert [r[5:17] for r in rows[1:]] == table
    assert {tuple(r[:5]) for r in rows[1:]} == {
        ("1", "PC-9 TURBOPROP TRAINER",
         "WING-BODY-VERTICAL TAIL-HORIZONTAL TAIL CONFIGURATION", "0.549",
         "10000.00")}
    assert [r[17] for r in rows[1:]] == [""] * 6
    svg = read_bytes(out / "coefficients.svg")
    assert curves(svg) == ["gnuplot_plot_1a"]
    words = " ".join(texts(svg))
    for word in ("lift coefficient", "drag coefficient", "angle of attack",
                 "pitching-moment coefficient", "M 0.549, 10000.00 ft"):
        assert word in words, (word, words)
    drawn(svg, tmp_path, "coefficients-pc9")
    assert status_json(s)["datcom"] == {"state": "done"}
    config = json.loads(read_bytes(fs.mnt / ".flowfs" / "config"))
    assert config["datcom"] == {"program": str(datcom_bin.resolve()),
                                "timeout": 30}
    assert "DATCOM ran on the deck" in read_bytes(s / "log").decode()


def test_one_curve_per_mach(make_flowfs, isolated_config, datcom_bin,
                            tmp_path):
    fs = datcom_mount(make_flowfs, datcom_bin)
    params = dict(PC9, nmach=3, mach=[0.3, 0.45, 0.5489], nalt=3,
                  alt=[0.0, 5000.0, 10000.0])
    s = datcom_session(fs, "pc9m", params)
    text = read_bytes(s / "output" / "coefficients.csv").decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [(r["mach"], r["altitude"]) for r in rows[::6]] == \
        [("0.300", "0.00"), ("0.450", "5000.00"), ("0.549", "10000.00")]
    assert len(rows) == 18
    svg = read_bytes(s / "output" / "coefficients.svg")
    assert curves(svg) == ["gnuplot_plot_1a", "gnuplot_plot_2a",
                           "gnuplot_plot_3a"]
    words = " ".join(texts(svg))
    for key in ("M 0.300, 0.00 ft", "M 0.450, 5000.00 ft",
                "M 0.549, 10000.00 ft"):
        assert key in words, (key, words)
    colours = drawn(svg, tmp_path, "coefficients-three-machs")
    # three curves in three colours (gnuplot's first line colours)
    for rgb in ((0x94, 0x00, 0xd3), (0x00, 0x9e, 0x73), (0x56, 0xb4, 0xe9)):
        assert near(colours, rgb, 8) > 50, rgb


def hanging_datcom():
    """A DATCOM that never ends on any deck, in a folder everyone may read
    (a root daemon's sandbox runs as flowfs-sandbox)."""
    folder = tempfile.mkdtemp(prefix="flowfs-hang-")
    os.chmod(folder, 0o755)
    path = os.path.join(folder, "datcom")
    with open(path, "w") as f:
        f.write("#!/bin/sh\nexec sleep 600\n")
    os.chmod(path, 0o755)
    return folder, path


def test_a_deck_that_hangs_datcom_ends_at_the_time_limit(
        make_flowfs, isolated_config, tmp_path):
    """DATCOM that never ends (real DATCOM does on some decks flowfs
    refuses; here a stand-in that sleeps) is stopped at --datcom-timeout:
    a status line and every file say so, and meanwhile another session's
    status reads at once."""
    folder, program = hanging_datcom()
    try:
        fs = datcom_mount(make_flowfs, program, "--datcom-timeout=3")
        a = datcom_session(fs, "a", PC9)
        b = fs.mnt / "b"
        os.mkdir(b)
        got = {}

        def read_csv():
            got["csv"] = read_bytes(a / "output" / "coefficients.csv")

        reader = threading.Thread(target=read_csv)
        reader.start()
        wait_until(lambda: "datcom: running on the deck" in status_text(a),
                   "a's status says DATCOM runs", 10)
        # b's status reads on while a's reader waits for DATCOM: one read
        # every 50 ms over the 3 s limit, where a reader holding the
        # filesystem's lock would let one through
        reads = 0
        while reader.is_alive():
            assert status_text(b) == "ready\n"
            reads += 1
            time.sleep(0.05)
        reader.join()
        assert reads >= 10, reads
        why = ("DATCOM did not end within 3 s (--datcom-timeout) and was"
               " stopped")
        assert got["csv"] == f"flowfs: {why}\n".encode()
        assert f"output/for006.dat: {why}" in status_text(a)
        assert status_json(a)["datcom"] == {"state": "failed",
                                            "message": why}
        assert read_bytes(a / "output" / "for006.dat").endswith(
            f"flowfs: {why}\n".encode())
        svg = read_bytes(a / "output" / "coefficients.svg")
        assert "DATCOM failed on this deck" in texts(svg)
        drawn(svg, tmp_path, "coefficients-timed-out")
        # once per deck: the result is kept, not run again (a DATCOM that
        # now prints at once would give another answer)
        with open(program, "w") as f:
            f.write("#!/bin/sh\necho not run again\n")
        assert read_bytes(a / "output" / "coefficients.csv") == \
            f"flowfs: {why}\n".encode()
    finally:
        shutil.rmtree(folder, ignore_errors=True)



def test_datcom_runs_two_decks_at_once_and_three_wait(
        make_flowfs, isolated_config):
    """DATCOMRUN_GOING (2) runs and DATCOMRUN_WAITING (3) waiting readers,
    all sessions together: five readers of five decks all get DATCOM's
    answer; a sixth deck read meanwhile is told DATCOM is busy, at once,
    and that is not kept: read again later, it runs."""
    folder, program = hanging_datcom()
    try:
        fs = datcom_mount(make_flowfs, program, "--datcom-timeout=4")
        sessions = [datcom_session(fs, f"s{i}", dict(PC9, wt=4000.0 + i))
                    for i in range(6)]
        got = {}

        def read_csv(i):
            got[i] = read_bytes(sessions[i] / "output" / "coefficients.csv")

        readers = [threading.Thread(target=read_csv, args=(i,))
                   for i in range(5)]
        for r in readers:
            r.start()
        wait_until(lambda: sum("datcom: running on the deck" in
                               status_text(s) for s in sessions[:5]) == 2,
                   "two of the five decks running", 10)
        time.sleep(1)       # the other three readers have come to wait
        busy = read_bytes(sessions[5] / "output" / "coefficients.csv")
        assert busy == (b"flowfs: DATCOM is busy with other decks (at most"
                        b" 2 at once): read this file again in a moment\n")
        for r in readers:
            r.join()
        why = ("flowfs: DATCOM did not end within 4 s (--datcom-timeout) and"
               " was stopped\n").encode()
        assert got == {i: why for i in range(5)}, got
        assert read_bytes(sessions[5] / "output" / "coefficients.csv") == why
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_without_datcom_there_are_no_results(make_flowfs, isolated_config):
    fs = make_flowfs()
    s = datcom_session(fs, "s", PC9)
    names = set(os.listdir(s / "output"))
    assert "for005.dat" in names
    assert not {"for006.dat", "coefficients.csv", "coefficients.svg"} & names
    assert oserror(os.stat, s / "output" / "for006.dat") == errno.ENOENT
    assert json.loads(read_bytes(fs.mnt / ".flowfs" / "config"))[
        "datcom"] is None
    assert "datcom" not in status_json(s)


def test_datcom_must_be_a_program(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("not a program\n")
    notes.chmod(stat.S_IRUSR | stat.S_IWUSR)
    (tmp_path / "mnt").mkdir()
    r = subprocess.run([str(flowfs_bin()), f"--db={tmp_path / 'f.db'}",
                        f"--datcom={notes}", str(tmp_path / "mnt")],
                       capture_output=True, text=True, timeout=30,
                       env=daemon_env())
    assert r.returncode == 1, r
    assert f"--datcom={notes}: not a program" in r.stderr, r.stderr
