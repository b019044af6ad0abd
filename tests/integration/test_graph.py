"""The job graph (issue 4, DESIGN.md §5, seed 000) through the mount.

nodes/<id>.json and edges/<id>.json, parameters.json, parameters_output/,
ctl (infer-edges) and the tool map, driven with plain file I/O (and a few
everyday tools: rm, mv, sed -i, vim -e, cat >, jq).  Expected documents are
built here from the seed's rules and printed with Python's json.dumps
(indent=2, ensure_ascii=False); nothing expected comes from flowfs itself
except the values it must invent (node_uuid, template_uuid, times), which
are checked for form and stability instead.
"""

import errno
import json
import os
import re
import shutil
import stat
import subprocess
import time
import uuid

import pytest

from conftest import (REPO, dumps, errname, oserror, put, put_json, root_log,
                      read_bytes, status_of, vim, wait_until, write_bytes)

FIXTURES = REPO.parent / "shared" / "fixtures"
N1, N2, N3, N4 = "node-$id1", "node-$id2", "node-$id3", "node-$id4"
E1, E2, E3 = "edge-$id1", "edge-$id2", "edge-$id3"
OUTPUT_NAME_RE = re.compile(r"^parameters_(.+)_(\d{8}_\d{6})\.json$")


@pytest.fixture(autouse=True)
def _no_user_config(isolated_config):
    """Every test runs with an empty $XDG_CONFIG_HOME (no user tool map)."""
    return isolated_config


@pytest.fixture
def tools_json(isolated_config):
    return isolated_config / "flowfs" / "tools.json"


# -- expected documents -----------------------------------------------------

def node_obj(id, label, node_uuid, *, machine_type="c2_m4_cpu", image="",
             docker_image="", inputs=(), outputs=(), x=0.0, y=0.0,
             version="1.2"):
    """A node as flowfs must show it, keys in the seed's order."""
    return {"id": id, "node_uuid": node_uuid, "node_version": version,
            "label": label, "position_x": x, "position_y": y,
            "system_values": {"machine_type": machine_type, "image": image,
                              "docker_image": docker_image},
            "input_parameters": list(inputs),
            "output_parameters": list(outputs)}


def edge_obj(id, src, tgt, tparam, sparam):
    return {"id": id, "source_node_id": src, "source_parameter_name": sparam,
            "target_node_id": tgt, "target_parameter_name": tparam}


def param(name, value="", type="str"):
    return {"name": name, "type": type, "value": value}


# -- helpers -----------------------------------------------------------------

def npath(session, id):
    return session / "nodes" / f"{id}.json"


def epath(session, id):
    return session / "edges" / f"{id}.json"


def read_doc(path):
    """(bytes, parsed) of a file; its st_size must be what a read gives."""
    data = read_bytes(path)
    assert os.stat(path).st_size == len(data), path
    return data, json.loads(data)


def uuid_of(path):
    return read_doc(path)[1]["node_uuid"]


def assert_uuid(s):
    assert isinstance(s, str) and str(uuid.UUID(s)) == s, s


def add_node(session, id, label, **fields):
    doc = {"label": label, **fields}
    rc = put_json(npath(session, id), doc)
    assert rc == 0, f"writing node {id}: {errname(rc)} {status_of(session)[1]}"


def add_edge(session, id, src, tgt, tparam, **fields):
    doc = {"source_node_id": src, "target_node_id": tgt,
           "target_parameter_name": tparam, **fields}
    rc = put_json(epath(session, id), doc)
    assert rc == 0, f"writing edge {id}: {errname(rc)} {status_of(session)[1]}"


def last_refusal(session):
    log = status_of(session)[1]
    assert log, "no refused write in status"
    return log[-1]


def refusals(session):
    return status_of(session)[1]


def listing(folder):
    return sorted(os.listdir(folder))


def graph(session):
    return read_doc(session / "parameters.json")[1]


def cycle_pairs(message):
    """The edges of the cycle a "would close a cycle: a -> b -> a" names."""
    m = re.search(r"would close a cycle: (.+)$", message)
    assert m, message
    names = [p.strip() for p in m.group(1).split(" -> ")]
    assert len(names) >= 2 and names[0] == names[-1], message
    return set(zip(names, names[1:]))


def sh(cmd, cwd, check=True, **kw):
    r = subprocess.run(["sh", "-c", cmd], cwd=cwd, capture_output=True,
                       text=True, **kw)
    if check:
        assert r.returncode == 0, f"{cmd}: {r.returncode}\n{r.stderr}"
    return r


@pytest.fixture
def s(session):
    return session


# -- nodes: defaults, key order, stability ---------------------------------

def test_node_defaults_filled(s):
    assert put_json(npath(s, N1), {"label": "structure_generate"}) == 0
    data, doc = read_doc(npath(s, N1))
    assert_uuid(doc["node_uuid"])
    assert data.decode() == dumps(node_obj(N1, "structure_generate",
                                           doc["node_uuid"]))
    assert not data.endswith(b"\n")
    assert listing(s / "nodes") == [f"{N1}.json"]
    # A second node gets its own fresh UUID.
    add_node(s, N2, "structure_generate")
    assert uuid_of(npath(s, N2)) != doc["node_uuid"]


def test_node_given_values_kept_and_reordered(s):
    # Keys in reverse order, ASCII-escaped non-ASCII, an integer position,
    # a non-default version: shown in the seed's key order, values as given.
    given = {"output_parameters": [param("energy", "", "float")],
             "input_parameters": [param("structure_file", "https://x/é.xyz"),
                                  param("steps", 5, "int")],
             "system_values": {"docker_image": "d:1", "image": "i:2",
                               "machine_type": "c2_m8_cpu"},
             "position_y": 2.5, "position_x": 5,
             "label": "计算_apex", "node_version": "1.3",
             "node_uuid": "7fc4da3d-1a34-504c-98cd-40e33bff838d",
             "id": N1}
    assert put(npath(s, N1), json.dumps(given).encode()) == 0
    data, _ = read_doc(npath(s, N1))
    want = node_obj(N1, "计算_apex", "7fc4da3d-1a34-504c-98cd-40e33bff838d",
                    machine_type="c2_m8_cpu", image="i:2", docker_image="d:1",
                    inputs=given["input_parameters"],
                    outputs=given["output_parameters"], x=5, y=2.5,
                    version="1.3")
    assert data.decode() == dumps(want)
    assert b'"position_x": 5,' in data          # the integer stays an integer


def test_node_parameter_keys_in_seed_order(s):
    doc = {"label": "t", "input_parameters": [
        {"value": "H2O", "type": "str", "name": "formula"}]}
    assert put_json(npath(s, N1), doc) == 0
    data, got = read_doc(npath(s, N1))
    assert data.decode() == dumps(node_obj(N1, "t", got["node_uuid"],
                                           inputs=[param("formula", "H2O")]))


def test_seed_node_round_trip(s):
    ex = FIXTURES / "seed000-example1.json"
    if not ex.is_file():
        pytest.skip(f"{ex} is absent")
    node = json.loads(ex.read_bytes())["nodes"][0]
    assert put(npath(s, node["id"]), dumps(node)) == 0
    assert read_doc(npath(s, node["id"]))[0].decode() == dumps(node)


def test_node_uuid_stays_stable(s, flowfs):
    add_node(s, N1, "a")
    u = uuid_of(npath(s, N1))
    add_node(s, N1, "b", position_x=3.0)            # omits node_uuid
    data, doc = read_doc(npath(s, N1))
    assert doc["node_uuid"] == u and doc["label"] == "b"
    assert graph(s)["nodes"][0]["node_uuid"] == u
    flowfs.remount()
    assert read_bytes(npath(s, N1)) == data
    add_node(s, N1, "c")
    assert uuid_of(npath(s, N1)) == u
    # A given UUID is taken, and kept from then on.
    other = "32452345-1a34-504c-98cd-40e33bff838d"
    add_node(s, N1, "c", node_uuid=other)
    add_node(s, N1, "d")
    assert uuid_of(npath(s, N1)) == other


def test_node_change_shows_everywhere_at_once(s):
    add_node(s, N1, "a")
    before = read_bytes(s / "parameters.json")
    add_node(s, N1, "a2")
    after = read_doc(s / "parameters.json")[1]
    assert read_bytes(s / "parameters.json") != before
    assert after["nodes"][0]["label"] == "a2"
    out = os.listdir(s / "parameters_output")
    assert len(out) == 1
    assert read_bytes(s / "parameters_output" / out[0]) == \
        read_bytes(s / "parameters.json")


# -- the tool map --------------------------------------------------------------

def write_tools(path, obj):
    path.parent.mkdir(parents=True, exist_ok=True)
    old = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(json.dumps(obj) if not isinstance(obj, str) else obj)
    # A change within the same clock tick must still look like a change.
    st = path.stat()
    if st.st_mtime_ns <= old:
        os.utime(path, ns=(st.st_atime_ns, old + 1_000_000_000))


def test_tool_map_fills_system_values(make_flowfs, tools_json):
    write_tools(tools_json, {
        "apex_calculation": {"image": "reg/apex:0.2.1",
                             "machine_type": "c2_m8_cpu"},
        "only_image": {"image": "reg/only:1"}})
    fs = make_flowfs()
    s = fs.mnt / "s1"
    os.mkdir(s)
    cfg = json.loads(read_bytes(fs.mnt / ".flowfs" / "config"))
    assert cfg["tool_map"] == str(tools_json)
    assert "tool_map_error" not in cfg

    add_node(s, N1, "apex_calculation")
    add_node(s, N2, "only_image")
    add_node(s, N3, "unknown_tool")
    add_node(s, N4, "apex_calculation",
             system_values={"machine_type": "c32_m64_cpu"})
    sv = {d["id"]: d["system_values"] for d in graph(s)["nodes"]}
    assert sv[N1] == {"machine_type": "c2_m8_cpu", "image": "reg/apex:0.2.1",
                      "docker_image": ""}
    assert sv[N2] == {"machine_type": "c2_m4_cpu", "image": "reg/only:1",
                      "docker_image": ""}
    assert sv[N3] == {"machine_type": "c2_m4_cpu", "image": "",
                      "docker_image": ""}
    assert sv[N4] == {"machine_type": "c32_m64_cpu", "image": "reg/apex:0.2.1",
                      "docker_image": ""}
    data, doc = read_doc(npath(s, N1))
    assert data.decode() == dumps(node_obj(
        N1, "apex_calculation", doc["node_uuid"], machine_type="c2_m8_cpu",
        image="reg/apex:0.2.1"))

    # Changed while mounted: new nodes take the new map, stored ones stay.
    write_tools(tools_json, {"apex_calculation": {"image": "reg/apex:0.3",
                                                  "machine_type": "c4"}})
    add_node(s, "node-$id5", "apex_calculation")
    sv2 = {d["id"]: d["system_values"] for d in graph(s)["nodes"]}
    assert sv2["node-$id5"]["image"] == "reg/apex:0.3"
    assert sv2["node-$id5"]["machine_type"] == "c4"
    assert sv2[N1] == sv[N1]
    add_node(s, "node-$id6", "only_image")
    assert graph(s)["nodes"][-1]["system_values"]["image"] == ""

    # A map that cannot be read: said in .flowfs/config, nodes get defaults.
    write_tools(tools_json, "{not json")
    cfg = json.loads(read_bytes(fs.mnt / ".flowfs" / "config"))
    assert cfg.get("tool_map_error"), cfg
    # and in the mount's log, once
    said = [m for _, p, m in root_log(fs.mnt) if p == str(tools_json)]
    assert said == [cfg["tool_map_error"]], said
    add_node(s, "node-$id7", "apex_calculation")
    assert graph(s)["nodes"][-1]["system_values"] == {
        "machine_type": "c2_m4_cpu", "image": "", "docker_image": ""}


# -- nodes: refusals -----------------------------------------------------------

NODE_REFUSALS = {
    # name: (bytes written, a word the message must contain or None)
    "syntax": (b'{"label": "x",\n  "position_x": 1 2}', "line 2"),
    "not_object": (b'["label"]', None),
    "unknown_field": (b'{"label": "x", "colour": "red"}', "colour"),
    "label_type": (b'{"label": 5}', "label"),
    "position_type": (b'{"label": "x", "position_x": "0"}', "position_x"),
    "inputs_type": (b'{"label": "x", "input_parameters": {}}',
                    "input_parameters"),
    "system_values_type": (b'{"label": "x", "system_values": []}',
                           "system_values"),
    "missing_label": (b'{"position_x": 1.0}', "label"),
    "id_disagrees": (b'{"id": "node-$id9", "label": "x"}', "node-$id9"),
    "repeated_input": (b'{"label": "x", "input_parameters": ['
                       b'{"name": "a", "type": "str", "value": 1},'
                       b'{"name": "a", "type": "str", "value": 2}]}', '"a"'),
    "param_without_name": (b'{"label": "x", "input_parameters": ['
                           b'{"type": "str", "value": 1}]}', "name"),
}


@pytest.mark.parametrize("case", sorted(NODE_REFUSALS))
def test_node_refused_keeps_previous(s, case):
    payload, word = NODE_REFUSALS[case]
    add_node(s, N1, "keep", input_parameters=[param("f", "v")])
    before = read_bytes(npath(s, N1))
    whole = read_bytes(s / "parameters.json")
    n_log = len(refusals(s))
    assert put(npath(s, N1), payload) == errno.EINVAL
    assert read_bytes(npath(s, N1)) == before
    assert os.stat(npath(s, N1)).st_size == len(before)
    assert read_bytes(s / "parameters.json") == whole
    log = refusals(s)
    assert len(log) == n_log + 1, log
    path, msg = log[-1]
    assert path == f"nodes/{N1}.json", log[-1]
    assert msg.strip()
    if word:
        assert word in msg, msg


def test_truncate_without_writing_keeps_node(s):
    # `echo x > file` opens with O_TRUNC and may close a dup before writing.
    add_node(s, N1, "a")
    before = read_bytes(npath(s, N1))
    fd = os.open(npath(s, N1), os.O_WRONLY | os.O_TRUNC)
    os.close(fd)
    assert read_bytes(npath(s, N1)) == before
    fd = os.open(npath(s, N1), os.O_WRONLY)
    os.ftruncate(fd, 0)
    assert oserror(os.close, fd) == errno.EINVAL
    assert read_bytes(npath(s, N1)) == before


def test_refused_new_node_leaves_nothing(s):
    assert put(npath(s, N1), b'{"label": 1}') == errno.EINVAL
    # a refusal is final: the draft is gone when close() returns
    assert not os.path.lexists(npath(s, N1)), os.listdir(s / "nodes")
    assert os.listdir(s / "nodes") == []
    assert graph(s)["nodes"] == []
    assert last_refusal(s)[0] == f"nodes/{N1}.json"


def test_draft_exists_while_open(s):
    add_node(s, N1, "a")
    p = npath(s, N2)
    part = b'{"label": "dra'
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, part)
        assert stat.S_ISREG(os.stat(p).st_mode)
        assert f"{N2}.json" in os.listdir(s / "nodes")
        # Not part of the graph yet: an edge naming it waits for it
        assert [n["id"] for n in graph(s)["nodes"]] == [N1]
        assert put_json(epath(s, E1), {"source_node_id": N1,
                                       "target_node_id": N2,
                                       "target_parameter_name": "input"}) \
            == 0
        assert graph(s)["edges"] == []
        assert status_of(s)[0] == [f'edges/{E1}.json: waits for its target'
                                   f' node "{N2}", which does not exist']
        os.write(fd, b'ft"}')
    finally:
        os.close(fd)
    assert [n["id"] for n in graph(s)["nodes"]] == [N1, N2]
    assert read_doc(p)[1]["label"] == "draft"
    # its close placed the edge
    assert [e["id"] for e in graph(s)["edges"]] == [E1]


@pytest.mark.parametrize("folder", ["nodes", "edges"])
def test_created_and_closed_without_a_write_is_gone_a_moment_later(s, folder):
    """README: a new <id>.json created and closed without a write
    (`touch`) is gone a moment later, when the kernel sends the release;
    nothing is stored or refused."""
    add_node(s, N1, "a")
    add_node(s, N2, "b", input_parameters=[param("structure_file")])
    add_edge(s, E1, N1, N2, "structure_file")
    listing = sorted(os.listdir(s / folder))
    doc = read_bytes(s / "parameters.json")
    p = s / folder / "x-new.json"
    os.close(os.open(p, os.O_WRONLY | os.O_CREAT, 0o644))
    wait_until(lambda: not os.path.lexists(p),
               f"the unwritten {folder}/x-new.json goes")
    assert sorted(os.listdir(s / folder)) == listing
    # touch(1) itself, which also sets the new file's times
    r = subprocess.run(["touch", str(p)], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0, r.stderr
    wait_until(lambda: not os.path.lexists(p),
               f"the touched {folder}/x-new.json goes")
    assert sorted(os.listdir(s / folder)) == listing
    assert read_bytes(s / "parameters.json") == doc
    assert refusals(s) == []
    # the name is free again: a real document there is stored
    if folder == "nodes":
        add_node(s, "x-new", "c")
    else:
        add_node(s, N3, "c", input_parameters=[param("input")])
        add_edge(s, "x-new", N2, N3, "input")
    assert "x-new.json" in os.listdir(s / folder)


def test_draft_refused_first_close_is_gone_when_close_returns(s):
    p = npath(s, N1)
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, b'{"label": "x", "bogus": 1}')
        assert os.path.exists(p)
    finally:
        rc = oserror(os.close, fd)
    assert rc == errno.EINVAL, errname(rc)
    assert not os.path.lexists(p)
    assert os.listdir(s / "nodes") == []
    assert last_refusal(s)[0] == f"nodes/{N1}.json"


@pytest.mark.parametrize("folder", ["nodes", "edges"])
def test_draft_size_is_what_a_reader_reads(s, folder):
    # DESIGN §2: st_size equals what a read returns at that moment.  While
    # a new document is written, a reader finds no stored document yet:
    # size 0 and no bytes; after the close, both show the document.
    p = s / folder / "x-draft.json"
    parts = [b'{"label": "dra', b'ft", ', b'"position_x": 1.5}']
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    seen = []
    try:
        for part in parts:
            os.write(fd, part)
            seen.append((os.stat(p).st_size, read_bytes(p)))
    finally:
        err = oserror(os.close, fd)
    assert seen == [(0, b"")] * len(parts)
    if folder == "nodes":
        assert err == 0
        data = read_bytes(p)
        assert os.stat(p).st_size == len(data) > 0
        assert json.loads(data)["position_x"] == 1.5


def test_fsync_validates(s):
    add_node(s, N1, "a")
    before = read_bytes(npath(s, N1))
    fd = os.open(npath(s, N1), os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, b'{"label": "a", "nope": 1}')
        assert oserror(os.fsync, fd) == errno.EINVAL
        assert read_bytes(npath(s, N1)) == before
        os.lseek(fd, 0, os.SEEK_SET)
        os.ftruncate(fd, 0)
        os.write(fd, b'{"label": "synced"}')
        os.fsync(fd)
        assert read_doc(npath(s, N1))[1]["label"] == "synced"
    finally:
        os.close(fd)


def test_folder_or_symlink_named_json_refused(s):
    assert oserror(os.mkdir, s / "nodes" / "x.json") == errno.EINVAL
    assert oserror(os.symlink, "/etc/hostname", s / "nodes" / "y.json") \
        == errno.EINVAL
    assert oserror(os.mkdir, s / "edges" / "e.json") == errno.EINVAL
    assert os.listdir(s / "nodes") == []


# -- scratch files and editors -------------------------------------------------

SCRATCH = ["notes.txt", f"{N1}.json~", "4913", f".{N1}.json.swp",
           ".goutputstream-ABC123", f"{N1}.json.tmp"]


@pytest.mark.parametrize("folder", ["nodes", "edges"])
def test_scratch_files_kept(s, folder):
    d = s / folder
    for i, name in enumerate(SCRATCH):
        # Not JSON at all: they are never interpreted.
        write_bytes(d / name, f"scratch {i} {{not json".encode())
    assert listing(d) == sorted(SCRATCH)
    for i, name in enumerate(SCRATCH):
        assert read_bytes(d / name) == f"scratch {i} {{not json".encode()
    assert graph(s)["nodes"] == [] and graph(s)["edges"] == []
    for name in SCRATCH:
        os.unlink(d / name)
    assert os.listdir(d) == []


def test_editor_save_by_rename(s):
    add_node(s, N1, "a")
    u = uuid_of(npath(s, N1))
    tmp = s / "nodes" / f".{N1}.json.swx"
    write_bytes(tmp, json.dumps({"label": "renamed in"}).encode())
    os.rename(tmp, npath(s, N1))
    assert not tmp.exists()
    data, doc = read_doc(npath(s, N1))
    assert data.decode() == dumps(node_obj(N1, "renamed in", u))
    assert listing(s / "nodes") == [f"{N1}.json"]

    # A refused save: EINVAL from rename, the node and the temp file stay.
    before = read_bytes(npath(s, N1))
    write_bytes(tmp, b'{"label": "x", "id": "node-$other"}')
    assert oserror(os.rename, tmp, npath(s, N1)) == errno.EINVAL
    assert read_bytes(npath(s, N1)) == before
    assert read_bytes(tmp) == b'{"label": "x", "id": "node-$other"}'
    assert last_refusal(s)[0] == f"nodes/{N1}.json"


def test_rename_scratch_onto_new_node(s):
    tmp = s / "nodes" / "new.tmp"
    write_bytes(tmp, b'{"label": "fresh"}')
    os.rename(tmp, npath(s, N1))
    assert listing(s / "nodes") == [f"{N1}.json"]
    assert read_doc(npath(s, N1))[1]["id"] == N1


def test_backup_copy_keeps_node(s):
    add_node(s, N1, "a")
    data = read_bytes(npath(s, N1))
    os.rename(npath(s, N1), s / "nodes" / f"{N1}.json~")
    assert read_bytes(s / "nodes" / f"{N1}.json~") == data
    assert read_bytes(npath(s, N1)) == data
    assert [n["id"] for n in graph(s)["nodes"]] == [N1]


def test_sed_in_place(s):
    add_node(s, N1, "old_label", input_parameters=[param("f", "v")])
    u = uuid_of(npath(s, N1))
    sh(f"sed -i 's/old_label/new_label/' 'nodes/{N1}.json'", cwd=s)
    data, doc = read_doc(npath(s, N1))
    assert data.decode() == dumps(node_obj(N1, "new_label", u,
                                           inputs=[param("f", "v")]))
    assert listing(s / "nodes") == [f"{N1}.json"]
    # sed writing something invalid: refused on the rename, node kept.
    sh(f"sed -i 's/\"label\"/\"lable\"/' 'nodes/{N1}.json'", cwd=s,
       check=False)
    assert read_bytes(npath(s, N1)) == data
    assert "lable" in last_refusal(s)[1]


def test_vim_ex_mode_save(s):
    add_node(s, N1, "old_label")
    u = uuid_of(npath(s, N1))
    for backupcopy in ("yes", "no"):
        new = f"v_{backupcopy}"
        r = vim(npath(s, N1),
                f"%s/\"label\": \"[^\"]*\"/\"label\": \"{new}\"/",
                setting=f"backupcopy={backupcopy} writebackup")
        assert r.returncode == 0, (backupcopy, r.stdout, r.stderr)
        data, doc = read_doc(npath(s, N1))
        assert data.decode() == dumps(node_obj(N1, new, u)), backupcopy
    assert sorted(os.listdir(s / "nodes")) == [f"{N1}.json"]


# -- deleting and renaming nodes ---------------------------------------------

def chain(s, n=3):
    """Nodes 1..n with input "inp", edges i -> i+1 (edge-$id<i>)."""
    for i in range(1, n + 1):
        add_node(s, f"node-$id{i}", f"tool{i}",
                 input_parameters=[param("inp")])
    for i in range(1, n):
        add_edge(s, f"edge-$id{i}", f"node-$id{i}", f"node-$id{i + 1}", "inp")


def test_rm_node_deletes_its_edges(s):
    chain(s, 4)
    add_edge(s, "edge-$id9", N1, N3, "inp")
    os.unlink(npath(s, N2))
    assert listing(s / "edges") == ["edge-$id3.json", "edge-$id9.json"]
    assert [e["id"] for e in graph(s)["edges"]] == ["edge-$id3", "edge-$id9"]
    assert oserror(os.stat, epath(s, E1)) == errno.ENOENT


@pytest.mark.parametrize("order", ["nodes_first", "edges_first"])
def test_rm_star(s, order):
    chain(s, 4)
    first, second = ("nodes", "edges") if order == "nodes_first" \
        else ("edges", "nodes")
    sh(f"rm {first}/*", cwd=s)
    assert os.listdir(s / first) == []
    if order == "nodes_first":
        assert os.listdir(s / "edges") == []
    sh(f"rm -f {second}/*", cwd=s)
    assert os.listdir(s / "nodes") == [] and os.listdir(s / "edges") == []
    g = graph(s)
    assert g["nodes"] == [] and g["edges"] == []


def test_mv_node_renames_it_and_its_edges(s):
    chain(s, 3)
    u = uuid_of(npath(s, N2))
    sh(f"mv 'nodes/{N2}.json' 'nodes/node-$mid.json'", cwd=s)
    assert listing(s / "nodes") == [f"{N1}.json", f"{N3}.json",
                                    "node-$mid.json"]
    data, doc = read_doc(s / "nodes" / "node-$mid.json")
    assert data.decode() == dumps(node_obj("node-$mid", "tool2", u,
                                           inputs=[param("inp")]))
    e1 = read_doc(epath(s, E1))
    assert e1[0].decode() == dumps(edge_obj(E1, N1, "node-$mid", "inp",
                                            "out_tool1"))
    assert read_doc(epath(s, E2))[1]["source_node_id"] == "node-$mid"
    g = graph(s)
    assert [n["id"] for n in g["nodes"]] == [N1, "node-$mid", N3]
    assert {(e["source_node_id"], e["target_node_id"]) for e in g["edges"]} \
        == {(N1, "node-$mid"), ("node-$mid", N3)}


def test_mv_node_onto_existing_replaces_it(s):
    chain(s, 3)
    add_node(s, N4, "tool4")
    os.rename(npath(s, N4), npath(s, N3))     # N3 goes, with edge-$id2
    assert listing(s / "nodes") == [f"{N1}.json", f"{N2}.json", f"{N3}.json"]
    assert read_doc(npath(s, N3))[1]["label"] == "tool4"
    assert listing(s / "edges") == [f"{E1}.json"]


def test_mv_edge_renames_it(s):
    chain(s, 2)
    os.rename(epath(s, E1), epath(s, "edge-$x"))
    assert listing(s / "edges") == ["edge-$x.json"]
    assert read_doc(epath(s, "edge-$x"))[0].decode() == dumps(
        edge_obj("edge-$x", N1, N2, "inp", "out_tool1"))


# -- edges ---------------------------------------------------------------------

def test_edge_defaults_and_order(s):
    add_node(s, N1, "structure_generate")
    add_node(s, N2, "apex", input_parameters=[param("structure_file")])
    # Keys in another order; source_parameter_name omitted.
    doc = {"target_parameter_name": "structure_file", "target_node_id": N2,
           "source_node_id": N1}
    assert put_json(epath(s, E1), doc) == 0
    data, _ = read_doc(epath(s, E1))
    assert data.decode() == dumps(edge_obj(E1, N1, N2, "structure_file",
                                           "out_structure_generate"))
    # A given source_parameter_name (any name) is kept.
    assert put_json(epath(s, E1), {**doc, "source_parameter_name": "energy",
                                   "id": E1}) == 0
    assert read_doc(epath(s, E1))[0].decode() == dumps(
        edge_obj(E1, N1, N2, "structure_file", "energy"))
    assert graph(s)["edges"] == [edge_obj(E1, N1, N2, "structure_file",
                                          "energy")]


def test_edge_to_node_without_inputs_takes_input(s):
    add_node(s, N1, "a")
    add_node(s, N2, "b")
    add_edge(s, E1, N1, N2, "input")
    assert put_json(epath(s, E2), {"source_node_id": N2, "target_node_id": N1,
                                   "target_parameter_name": "other"}) \
        == errno.EINVAL
    assert "other" in last_refusal(s)[1]


def edge_refusal(s, id, doc):
    """Write a bad edge; check EINVAL, nothing changed, one status line;
    return its message."""
    before = sorted((p.name, read_bytes(p)) for p in (s / "edges").iterdir())
    whole = read_bytes(s / "parameters.json")
    n_log = len(refusals(s))
    rc = put(epath(s, id), json.dumps(doc).encode()
             if not isinstance(doc, bytes) else doc)
    assert rc == errno.EINVAL, errname(rc)
    if f"{id}.json" not in dict(before):
        assert not os.path.lexists(epath(s, id))
    after = sorted((p.name, read_bytes(p)) for p in (s / "edges").iterdir())
    assert after == before
    assert read_bytes(s / "parameters.json") == whole
    log = refusals(s)
    assert len(log) == n_log + 1
    assert log[-1][0] == f"edges/{id}.json"
    return log[-1][1]


def test_an_edge_before_its_nodes_waits_for_them(s):
    """Files of a copied session come back in any order (rsync sends
    edges/ before nodes/): an edge whose node is not there yet is kept (its
    file shows the fields it gave, as an edge's file does), is no part of
    the graph, and status says what it waits for; once its nodes come, it
    joins the graph."""
    text = json.dumps({"target_parameter_name": "structure_file",
                       "source_node_id": N1, "target_node_id": N2})
    assert put(epath(s, E1), b" " * 100000 + text.encode()) == 0
    assert read_bytes(epath(s, E1)) == json.dumps(
        {"id": E1, "source_node_id": N1, "target_node_id": N2,
         "target_parameter_name": "structure_file"}, indent=2).encode()
    assert json.loads(read_bytes(s / "parameters.json"))["edges"] == []
    assert status_of(s)[0] == [
        f'edges/{E1}.json: waits for its source node "{N1}" and its target'
        f' node "{N2}", which do not exist']
    add_node(s, N1, "a")
    assert status_of(s)[0] == [
        f'edges/{E1}.json: waits for its target node "{N2}", which does'
        ' not exist']
    add_node(s, N2, "b", input_parameters=[param("structure_file")])
    assert status_of(s)[0] == ["ready"]
    (edge,) = json.loads(read_bytes(s / "parameters.json"))["edges"]
    assert edge == {"id": E1, "source_node_id": N1,
                    "source_parameter_name": "out_a", "target_node_id": N2,
                    "target_parameter_name": "structure_file"}
    assert json.loads(read_bytes(epath(s, E1))) == edge


def test_status_mtime_follows_waiting_edges(s):
    """status and status.json change their mtime with their content: a
    line for an edge that waits appears, and goes when its nodes come (it
    stayed at the last change of session.json, request.json, uploads/)."""
    before = os.stat(s / "status").st_mtime_ns
    add_edge(s, E1, N1, N2, "input")
    assert status_of(s)[0] != ["ready"]
    waiting = os.stat(s / "status").st_mtime_ns
    assert waiting > before
    assert os.stat(s / "status.json").st_mtime_ns == waiting
    add_node(s, N1, "a")
    add_node(s, N2, "b")
    assert status_of(s)[0] == ["ready"]
    assert os.stat(s / "status").st_mtime_ns > waiting


def test_edge_refusals(s):
    add_node(s, N1, "a", input_parameters=[param("in_a")])
    add_node(s, N2, "b", input_parameters=[param("structure_file"),
                                           param("x")])
    add_edge(s, E1, N1, N2, "structure_file")

    msg = edge_refusal(s, E2, {"source_node_id": N1, "target_node_id": N2,
                               "target_parameter_name": "nope"})
    assert "nope" in msg
    msg = edge_refusal(s, E2, {"source_node_id": N1, "target_node_id": N2,
                               "target_parameter_name": "structure_file"})
    assert msg.endswith(f"duplicates {E1}"), msg
    # The default source parameter makes it equal too.
    msg = edge_refusal(s, E2, {"source_node_id": N1, "target_node_id": N2,
                               "target_parameter_name": "structure_file",
                               "source_parameter_name": "out_a"})
    assert f"duplicates {E1}" in msg
    msg = edge_refusal(s, E2, {"id": E3, "source_node_id": N1,
                               "target_node_id": N2,
                               "target_parameter_name": "x"})
    assert E3 in msg
    msg = edge_refusal(s, E2, {"source_node_id": N1, "target_node_id": N2,
                               "target_parameter_name": "x", "weight": 1})
    assert "weight" in msg
    msg = edge_refusal(s, E2, {"source_node_id": N1, "target_node_id": 2,
                               "target_parameter_name": "x"})
    assert "target_node_id" in msg
    msg = edge_refusal(s, E2, b'{"source_node_id": "node-$id1",')
    assert "line 1" in msg
    # Replacing the existing edge with a bad one keeps it byte-identical.
    edge_refusal(s, E1, {"source_node_id": N1, "target_node_id": N2,
                         "target_parameter_name": "nope"})
    # A different source parameter is a different edge.
    add_edge(s, E2, N1, N2, "structure_file", source_parameter_name="o2")


def test_edge_cycles_named(s):
    for i in range(1, 5):
        add_node(s, f"node-$id{i}", f"t{i}")
    add_node(s, "node-$side", "side")
    add_edge(s, E1, N1, N2, "input")
    add_edge(s, E2, N2, N3, "input")
    add_edge(s, E3, N3, N4, "input")
    add_edge(s, "edge-$side", N2, "node-$side", "input")

    msg = edge_refusal(s, "edge-$back", {"source_node_id": N4,
                                         "target_node_id": N1,
                                         "target_parameter_name": "input"})
    assert cycle_pairs(msg) == {(N1, N2), (N2, N3), (N3, N4), (N4, N1)}, msg
    msg = edge_refusal(s, "edge-$two", {"source_node_id": N2,
                                        "target_node_id": N1,
                                        "target_parameter_name": "input"})
    assert cycle_pairs(msg) == {(N1, N2), (N2, N1)}, msg
    msg = edge_refusal(s, "edge-$self", {"source_node_id": N3,
                                         "target_node_id": N3,
                                         "target_parameter_name": "input"})
    assert cycle_pairs(msg) == {(N3, N3)}, msg
    # Changing an existing edge so that it closes a cycle is refused too.
    msg = edge_refusal(s, E3, {"source_node_id": N3, "target_node_id": N1,
                               "target_parameter_name": "input"})
    assert cycle_pairs(msg) == {(N1, N2), (N2, N3), (N3, N1)}, msg
    # Forward edges are fine (a DAG, not a tree).
    add_edge(s, "edge-$fwd", N1, N4, "input")


def test_node_losing_a_fed_input_refused(s):
    add_node(s, N1, "a")
    add_node(s, N2, "b", input_parameters=[param("structure_file"),
                                           param("other")])
    add_edge(s, E1, N1, N2, "structure_file")
    before = read_bytes(npath(s, N2))
    assert put_json(npath(s, N2), {"label": "b",
                                   "input_parameters": [param("other")]}) \
        == errno.EINVAL
    assert read_bytes(npath(s, N2)) == before
    path, msg = last_refusal(s)
    assert path == f"nodes/{N2}.json"
    assert E1 in msg and "structure_file" in msg, msg
    # Dropping an input no edge feeds is fine.
    add_node(s, N2, "b", input_parameters=[param("structure_file")])


def test_late_close_of_a_removed_node_keeps_the_new_one(s):
    """As for rounds: the late last close of a removed nodes/x.json must
    not drop the file created under the same name since."""
    path = npath(s, N1)
    old = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(old, json.dumps({"label": "a"}).encode())
        os.fsync(old)
        os.unlink(path)
        new = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    finally:
        os.close(old)
    try:
        assert os.stat(path).st_size == 0
        os.write(new, json.dumps({"label": "b"}).encode())
    finally:
        os.close(new)
    assert json.loads(read_bytes(path))["label"] == "b"
    # The old handle's RELEASE may still be on its way: an unwritten
    # create, closed after it, goes at its own (later) release; once it
    # is gone, look again.
    sentinel = s / "nodes" / "zz-sentinel.json"
    os.close(os.open(sentinel, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
    wait_until(lambda: not os.path.lexists(sentinel),
               "the unwritten nodes/zz-sentinel.json goes at its release")
    assert os.listdir(s / "nodes") == [f"{N1}.json"]
    assert json.loads(read_bytes(path))["label"] == "b"
    assert [n["label"] for n in graph(s)["nodes"]] == ["b"]


def test_same_bytes_change_nothing(s):
    add_node(s, N1, "a")
    p = s / "parameters.json"
    m_node = os.stat(npath(s, N1)).st_mtime_ns
    m_all = os.stat(p).st_mtime_ns
    out = os.listdir(s / "parameters_output")
    add_node(s, N1, "a")                       # the same document again
    assert os.stat(npath(s, N1)).st_mtime_ns == m_node
    assert os.stat(p).st_mtime_ns == m_all
    assert os.listdir(s / "parameters_output") == out
    add_node(s, N1, "b")
    assert os.stat(p).st_mtime_ns > m_all
    assert os.stat(npath(s, N1)).st_mtime_ns > m_node


def test_replacing_an_edge_is_not_a_cycle_with_itself(s):
    add_node(s, N1, "a")
    add_node(s, N2, "b")
    add_edge(s, E1, N1, N2, "input")
    # Reversing the only edge between them: the old edge goes first.
    add_edge(s, E1, N2, N1, "input")
    assert graph(s)["edges"] == [edge_obj(E1, N2, N1, "input", "out_b")]


# -- parameters.json -------------------------------------------------------------

def fixture_bytes(name):
    p = FIXTURES / name
    if not p.is_file():
        pytest.skip(f"{p} is absent")
    return p.read_bytes()


def test_empty_parameters_json(flowfs, s):
    data, doc = read_doc(s / "parameters.json")
    t = doc["meta"]["template_uuid"]
    assert_uuid(t)
    assert data.decode() == dumps({"nodes": [], "edges": [],
                                   "meta": {"template_uuid": t}})
    assert read_bytes(s / "parameters.json") == data
    os.mkdir(flowfs.mnt / "s2")
    assert graph(flowfs.mnt / "s2")["meta"]["template_uuid"] != t
    flowfs.remount()
    assert read_bytes(s / "parameters.json") == data


@pytest.mark.parametrize("example", ["seed000-example1.json",
                                     "seed000-example2.json"])
def test_seed_example_round_trip(flowfs, s, example):
    raw = fixture_bytes(example)
    doc = json.loads(raw)
    want = dumps(doc).encode()
    assert put(s / "parameters.json", raw) == 0
    assert read_doc(s / "parameters.json")[0] == want
    assert want == raw.rstrip(b"\n")        # the fixture is the seed's printout
    # The pieces, one file each, in the same form.
    assert listing(s / "nodes") == sorted(f"{n['id']}.json"
                                          for n in doc["nodes"])
    for n in doc["nodes"]:
        assert read_doc(npath(s, n["id"]))[0].decode() == dumps(n)
    assert listing(s / "edges") == sorted(f"{e['id']}.json"
                                          for e in doc["edges"])
    for e in doc["edges"]:
        assert read_doc(epath(s, e["id"]))[0].decode() == dumps(e)
    out = os.listdir(s / "parameters_output")
    assert len(out) == 1
    assert read_doc(s / "parameters_output" / out[0])[0] == want
    flowfs.remount()
    assert read_bytes(s / "parameters.json") == want
    # Written compactly, read back the same.
    assert put(s / "parameters.json",
               json.dumps(doc, separators=(",", ":")).encode()) == 0
    assert read_bytes(s / "parameters.json") == want


def test_parameters_json_replaces_whole_graph(s):
    ex2 = json.loads(fixture_bytes("seed000-example2.json"))
    chain(s, 2)
    add_node(s, "node-$extra", "extra")
    assert put(s / "parameters.json", dumps(ex2)) == 0
    assert listing(s / "nodes") == [f"{N1}.json", f"{N2}.json", f"{N3}.json"]
    assert graph(s) == ex2
    ex1 = json.loads(fixture_bytes("seed000-example1.json"))
    assert put(s / "parameters.json", dumps(ex1)) == 0
    assert listing(s / "nodes") == [f"{N1}.json"]
    assert os.listdir(s / "edges") == []
    assert read_bytes(s / "parameters.json") == dumps(ex1).encode()


def bad_docs(ex2):
    def mod(f):
        d = json.loads(json.dumps(ex2))
        f(d)
        return json.dumps(d).encode()

    def unknown_node(d):
        d["edges"][1]["target_node_id"] = "node-$id9"

    def cycle(d):
        d["edges"].append({"id": "edge-$id3", "source_node_id": "node-$id3",
                           "source_parameter_name": "out_apex_calculation",
                           "target_node_id": "node-$id1",
                           "target_parameter_name": "formula"})

    def dup_node(d):
        d["nodes"][2]["id"] = "node-$id1"

    def unknown_field(d):
        d["nodes"][2]["colour"] = "red"

    def bad_param(d):
        d["edges"][0]["target_parameter_name"] = "nope"

    def dup_edge(d):
        e = dict(d["edges"][0])
        e["id"] = "edge-$id7"
        d["edges"].append(e)

    def no_label(d):
        del d["nodes"][1]["label"]

    def nodes_type(d):
        d["nodes"] = {}

    return {
        "unknown_node": (mod(unknown_node), "edges[1]", '"node-$id9"'),
        "cycle": (mod(cycle), None, "would close a cycle"),
        "no_label": (mod(no_label), "nodes[1]", "label"),
        "dup_node_id": (mod(dup_node), "nodes[2]", "node-$id1"),
        "unknown_field": (mod(unknown_field), "nodes[2]", "colour"),
        "missing_param": (mod(bad_param), "edges[0]", "nope"),
        "dup_edge": (mod(dup_edge), "edges[2]", "duplicates edge-$id1"),
        "nodes_type": (mod(nodes_type), None, "nodes"),
        "syntax": (dumps(ex2).encode()[:-3], None, "line"),
        "not_object": (b"[]", None, None),
    }


def test_parameters_json_all_or_nothing(s):
    ex2 = json.loads(fixture_bytes("seed000-example2.json"))
    add_node(s, N1, "kept", input_parameters=[param("formula")])
    add_node(s, "node-$old", "old")
    add_edge(s, E1, "node-$old", N1, "formula")
    whole = read_bytes(s / "parameters.json")
    nodes_before = {p.name: read_bytes(p) for p in (s / "nodes").iterdir()}
    out_before = os.listdir(s / "parameters_output")
    for case, (payload, where, word) in bad_docs(ex2).items():
        n = len(refusals(s))
        assert put(s / "parameters.json", payload) == errno.EINVAL, case
        assert read_bytes(s / "parameters.json") == whole, case
        assert {p.name: read_bytes(p) for p in (s / "nodes").iterdir()} \
            == nodes_before, case
        assert os.listdir(s / "parameters_output") == out_before, case
        log = refusals(s)
        assert len(log) == n + 1, case
        path, msg = log[-1]
        assert path == "parameters.json", (case, log[-1])
        if where:
            assert msg.startswith(where + ": "), (case, msg)
        if word:
            assert word in msg, (case, msg)


def test_parameters_json_keeps_uuids_and_fills_defaults(s):
    add_node(s, N1, "a")
    u1 = uuid_of(npath(s, N1))
    t = graph(s)["meta"]["template_uuid"]
    doc = {"nodes": [{"id": N1, "label": "a2"}, {"id": N2, "label": "b",
                     "input_parameters": [param("input_file")]}],
           "edges": [{"id": E1, "source_node_id": N1, "target_node_id": N2,
                      "target_parameter_name": "input_file"}],
           "meta": {}}
    assert put_json(s / "parameters.json", doc) == 0
    g = graph(s)
    assert g["nodes"][0]["node_uuid"] == u1
    u2 = g["nodes"][1]["node_uuid"]
    assert_uuid(u2)
    assert u2 != u1
    assert g["meta"]["template_uuid"] == t     # none given: kept
    want = {"nodes": [node_obj(N1, "a2", u1),
                      node_obj(N2, "b", u2, inputs=[param("input_file")])],
            "edges": [edge_obj(E1, N1, N2, "input_file", "out_a2")],
            "meta": {"template_uuid": t}}
    assert read_bytes(s / "parameters.json").decode() == dumps(want)
    # A given template_uuid becomes the session's.
    t2 = "68a4ed99-9fff-4b1a-9b47-98a8624b5143"
    assert put_json(s / "parameters.json",
                    {**want, "meta": {"template_uuid": t2}}) == 0
    assert graph(s)["meta"]["template_uuid"] == t2
    assert put_json(s / "parameters.json",
                    {"nodes": want["nodes"], "edges": [], "meta": {}}) == 0
    assert graph(s)["meta"]["template_uuid"] == t2
    assert os.listdir(s / "edges") == []


def test_parameters_json_without_meta_keeps_the_template_uuid(s):
    """Issue 29: a document without "meta" was refused ('missing "meta"')
    though the README did not say it was needed; meta holds only the
    template_uuid the session keeps anyway, so leaving it out is taken as
    "meta": {} is: the graph is replaced, the session's uuid kept."""
    t = graph(s)["meta"]["template_uuid"]
    doc = {"nodes": [{"id": N1, "label": "a"}], "edges": []}
    assert put_json(s / "parameters.json", doc) == 0
    g = graph(s)
    assert [n["id"] for n in g["nodes"]] == [N1]
    assert g["meta"] == {"template_uuid": t}
    # nodes and edges are still needed; a meta given must be an object
    n = len(refusals(s))
    assert put_json(s / "parameters.json", {"nodes": []}) == errno.EINVAL
    assert put_json(s / "parameters.json",
                    {**doc, "meta": []}) == errno.EINVAL
    assert [m for _, m in refusals(s)[n:]] == [
        'missing "edges"', '"meta" must be an object']
    assert [n["id"] for n in graph(s)["nodes"]] == [N1]

def test_creation_order(s):
    add_node(s, "node-$b", "b")
    add_node(s, "node-$a", "a")
    add_node(s, "node-$c", "c")
    add_edge(s, "edge-$z", "node-$b", "node-$a", "input")
    add_edge(s, "edge-$y", "node-$a", "node-$c", "input")
    add_node(s, "node-$a", "a-again")       # a change keeps its place
    g = graph(s)
    assert [n["id"] for n in g["nodes"]] == ["node-$b", "node-$a", "node-$c"]
    assert [e["id"] for e in g["edges"]] == ["edge-$z", "edge-$y"]


# -- parameters_output/ ----------------------------------------------------------

def local_name(epoch, offset_s):
    return time.strftime("%Y%m%d_%H%M%S", time.gmtime(epoch + offset_s))


# POSIX TZ strings need no tz database: "FLW-05:45" is UTC+05:45.
TZ, TZ_OFFSET = "FLW-05:45", 5 * 3600 + 45 * 60


@pytest.mark.parametrize("sid,sid8", [
    ("s1", "s1"),
    ("abcdefghijkl", "abcdefgh"),
    ("会话标识符号一二三四", "会话标识符号一二"),
    ("ab-é-Ω-xyz", "ab-é-Ω-x"),
])
def test_parameters_output_name(make_flowfs, monkeypatch, sid, sid8):
    monkeypatch.setenv("TZ", TZ)
    fs = make_flowfs()
    t0 = time.time()
    os.mkdir(fs.mnt / sid)
    t1 = time.time()
    s = fs.mnt / sid
    out = s / "parameters_output"
    names = os.listdir(out)
    assert len(names) == 1, names
    m = OUTPUT_NAME_RE.match(names[0])
    assert m and m.group(1) == sid8, names
    # Never changed: the session's creation, local time of the daemon's TZ.
    assert m.group(2) in {local_name(t, TZ_OFFSET)
                          for t in range(int(t0) - 1, int(t1) + 2)}, names
    assert read_doc(out / names[0])[0] == read_bytes(s / "parameters.json")
    # what is written there is dropped (a copy of the session brings
    # back its old name): the folder holds the one file
    assert oserror(write_bytes, out / "x.json", b"{}") == 0
    assert oserror(write_bytes, out / names[0], b"{}") == 0
    assert os.listdir(out) == names
    assert read_doc(out / names[0])[0] == read_bytes(s / "parameters.json")


def test_parameters_output_follows_changes(make_flowfs, monkeypatch):
    monkeypatch.setenv("TZ", TZ)
    fs = make_flowfs()
    s = fs.mnt / "sess-0123456789"
    os.mkdir(s)
    first = os.listdir(s / "parameters_output")
    time.sleep(1.1)                          # a name has 1 s resolution
    t0 = time.time()
    add_node(s, N1, "a")
    t1 = time.time()
    names = os.listdir(s / "parameters_output")
    assert len(names) == 1 and names != first, (first, names)
    m = OUTPUT_NAME_RE.match(names[0])
    assert m and m.group(1) == "sess-012"
    assert m.group(2) in {local_name(t, TZ_OFFSET)
                          for t in range(int(t0), int(t1) + 1)}
    assert oserror(os.stat, s / "parameters_output" / first[0]) \
        == errno.ENOENT
    p = s / "parameters_output" / names[0]
    assert read_doc(p)[0] == read_bytes(s / "parameters.json")
    # The name is the graph's last change, the file's mtime too.
    mt = os.stat(p).st_mtime
    assert local_name(int(mt), TZ_OFFSET) == m.group(2)
    # A refused write is no change.
    assert put(npath(s, N1), b"{}") == errno.EINVAL
    assert os.listdir(s / "parameters_output") == names
    fs.remount()
    assert os.listdir(s / "parameters_output") == names


# -- ctl -----------------------------------------------------------------------

def ctl(s, text):
    """write() text to ctl in one call; errno of open/write/close."""
    def go():
        fd = os.open(s / "ctl", os.O_WRONLY | os.O_TRUNC)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)
    return oserror(go)


def test_ctl_mode_and_read(s):
    """ctl is its owner's, and reads as empty: copying a session out
    copies it (nothing happens when the copy is written back)."""
    st = os.stat(s / "ctl")
    assert stat.S_IMODE(st.st_mode) == 0o600 and stat.S_ISREG(st.st_mode)
    assert read_bytes(s / "ctl") == b""
    fd = os.open(s / "ctl", os.O_RDWR)
    assert os.read(fd, 100) == b""
    os.close(fd)


def test_ctl_unknown_command(s):
    assert ctl(s, "bogus\n") == errno.EINVAL
    assert last_refusal(s) == (
        "ctl", 'unknown command "bogus" (ctl takes: infer-edges, run, cancel, submit)')
    assert ctl(s, "infer-edges\nfrobnicate now\n") == errno.EINVAL
    assert last_refusal(s) == (
        "ctl", 'unknown command "frobnicate now" (ctl takes: infer-edges, run, cancel, submit)')
    assert ctl(s, "\n") == 0


KEYWORDS = ["file", "path", "url", "input", "output", "structure", "data",
            "result"]


def test_infer_edges_each_keyword(s):
    # node 0, then one node per keyword whose second input mentions it
    # (in upper case: the match is on the lower-cased name).
    add_node(s, "node-$id0", "start")
    ids, labels = ["node-$id0"], ["start"]
    want = []
    for i, kw in enumerate(KEYWORDS, start=1):
        nid = f"node-$k{i}"
        target = f"My{kw.upper()}_{i}"
        add_node(s, nid, f"tool_{kw}",
                 input_parameters=[param("zeta"), param(target),
                                   param(f"{kw}_later")])
        # from out_<the previous node's label>
        want.append(edge_obj(f"edge-$id{i}", ids[-1], nid, target,
                             f"out_{labels[-1]}"))
        ids.append(nid)
        labels.append(f"tool_{kw}")
    assert ctl(s, "infer-edges\n") == 0
    assert graph(s)["edges"] == want
    for e in want:
        assert read_doc(epath(s, e["id"]))[0].decode() == dumps(e)


def test_infer_edges_keyword_late_in_a_long_name(s):
    # Python's "path" in name.lower() looks at the whole name
    long_name = "q" * 300 + "_PATH"
    add_node(s, "node-$a", "start")
    add_node(s, "node-$b", "tool_b",
             input_parameters=[param("zeta"), param(long_name)])
    assert ctl(s, "infer-edges\n") == 0
    assert [e["target_parameter_name"] for e in graph(s)["edges"]] == \
        [long_name]


def test_infer_edges_fallbacks_and_kept_edges(s):
    add_node(s, N1, "a", input_parameters=[param("alpha")])
    add_node(s, N2, "b", input_parameters=[param("alpha"), param("beta")])
    add_node(s, N3, "c")
    add_node(s, N4, "d", input_parameters=[param("result_x"),
                                           param("file_y")])
    add_node(s, "node-$id5", "e", input_parameters=[param("Data")])
    # The user's own edges: one elsewhere (kept), one equal to a rule edge.
    add_edge(s, E2, N1, N3, "input")
    add_edge(s, "edge-$id7", N4, "node-$id5", "Data")
    sh("echo infer-edges > ctl", cwd=s)
    g = graph(s)
    assert g["edges"] == [
        edge_obj(E2, N1, N3, "input", "out_a"),
        edge_obj("edge-$id7", N4, "node-$id5", "Data", "out_d"),
        edge_obj(E1, N1, N2, "alpha", "out_a"),        # first input
        edge_obj(E3, N2, N3, "input", "out_b"),        # no inputs
        edge_obj("edge-$id4", N3, N4, "result_x", "out_c"),    # in order
    ]
    # Again: nothing new.
    before = read_bytes(s / "parameters.json")
    assert ctl(s, "infer-edges") == 0
    assert read_bytes(s / "parameters.json") == before


def test_infer_edges_skips_a_cycle(s):
    add_node(s, N1, "a")
    add_node(s, N2, "b")
    add_node(s, N3, "c")
    add_edge(s, "edge-$back", N3, N1, "input")
    n = len(refusals(s))
    assert ctl(s, "infer-edges\n") == 0
    g = graph(s)
    assert {(e["source_node_id"], e["target_node_id"]) for e in g["edges"]} \
        == {(N3, N1), (N1, N2)}
    log = refusals(s)
    assert len(log) == n + 1, log
    path, msg = log[-1]
    assert path == "ctl"
    assert N2 in msg and N3 in msg and "cycle" in msg, msg


def test_infer_edges_on_empty_graph(s):
    assert ctl(s, "infer-edges\n") == 0
    add_node(s, N1, "alone")
    assert ctl(s, "infer-edges\n") == 0
    assert graph(s)["edges"] == []


# -- sessions holding a graph --------------------------------------------------

def test_rmdir_and_rm_rf(flowfs, s):
    add_node(s, N1, "a")
    assert oserror(os.rmdir, s) == errno.ENOTEMPTY
    assert os.path.isdir(s)
    chain(s, 3)
    r = subprocess.run(["rm", "-rf", str(s)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert not os.path.exists(s)
    # Without nodes the session holds no user data.
    os.mkdir(flowfs.mnt / "s3")
    add_node(flowfs.mnt / "s3", N1, "a")
    os.unlink(npath(flowfs.mnt / "s3", N1))
    os.rmdir(flowfs.mnt / "s3")


def test_persisted_across_remount(flowfs, s):
    chain(s, 3)
    whole = read_bytes(s / "parameters.json")
    nodes = {p.name: read_bytes(p) for p in (s / "nodes").iterdir()}
    out = os.listdir(s / "parameters_output")
    flowfs.remount()
    assert read_bytes(s / "parameters.json") == whole
    assert {p.name: read_bytes(p) for p in (s / "nodes").iterdir()} == nodes
    assert os.listdir(s / "parameters_output") == out


def test_mv_session_keeps_graph(flowfs, s):
    chain(s, 2)
    whole = read_bytes(s / "parameters.json")
    os.rename(s, flowfs.mnt / "renamed-session")
    t = flowfs.mnt / "renamed-session"
    assert read_bytes(t / "parameters.json") == whole
    (name,) = os.listdir(t / "parameters_output")
    assert name.startswith("parameters_renamed-_")


# -- the README walk-through ---------------------------------------------------

def test_readme_walkthrough(flowfs):
    jq = shutil.which("jq")
    if not jq:
        pytest.skip("jq is not installed (tools/setup installs it)")
    m = flowfs.mnt
    script = r"""
set -e
mkdir s
cat > 's/nodes/node-$id1.json' <<'EOF'
{"label": "structure_generate",
 "input_parameters": [{"name": "formula", "type": "str", "value": "H2O"}]}
EOF
cat > 's/nodes/node-$id2.json' <<'EOF'
{"label": "apex_optimization",
 "input_parameters": [{"name": "structure_file", "type": "str", "value": ""}]}
EOF
cat > 's/edges/edge-$id1.json' <<'EOF'
{"source_node_id": "node-$id1", "target_node_id": "node-$id2",
 "target_parameter_name": "structure_file"}
EOF
jq -c '.nodes[] | {id: .id, label: .label, machine: .system_values.machine_type}' s/parameters.json
echo ---
jq -c '.edges[]' s/parameters.json
echo ---
ls s/parameters_output/
"""
    r = sh(script, cwd=m)
    nodes_out, edges_out, ls_out = r.stdout.split("---\n")
    cj = lambda o: json.dumps(o, separators=(",", ":"), ensure_ascii=False)
    assert nodes_out.splitlines() == [
        cj({"id": N1, "label": "structure_generate", "machine": "c2_m4_cpu"}),
        cj({"id": N2, "label": "apex_optimization", "machine": "c2_m4_cpu"})]
    assert edges_out.splitlines() == [cj(edge_obj(
        E1, N1, N2, "structure_file", "out_structure_generate"))]
    assert re.fullmatch(r"parameters_s_\d{8}_\d{6}\.json\n", ls_out), ls_out
    # The ids and uuids the shell saw are the ones a program reads.
    r = subprocess.run([jq, "-r", ".nodes[].node_uuid", "s/parameters.json"],
                       cwd=m, capture_output=True, text=True, check=True)
    uuids = r.stdout.split()
    assert uuids == [uuid_of(npath(m / "s", N1)), uuid_of(npath(m / "s", N2))]
    # A shell redirect ignores close()'s error; status shows it.
    sh("echo '{\"label\": 3}' > 's/nodes/node-$id3.json' || true", cwd=m)
    assert last_refusal(m / "s")[0] == f"nodes/{N3}.json"
    sh("echo bogus > s/ctl || true", cwd=m)
    assert last_refusal(m / "s")[0] == "ctl"


@pytest.mark.parametrize("template_uuid", ["", None, "not-a-uuid-but-kept"])
def test_rewriting_parameters_json_unchanged_changes_nothing(flowfs, s, template_uuid):
    """Writing back what parameters.json reads is no change: mtime, the
    parameters_output name and the nodes' inode numbers stay — also with
    an empty, null or odd template_uuid."""
    doc = {"nodes": [{"id": "n1", "label": "structure_generate"},
                     {"id": "n2", "label": "apex_optimization",
                      "input_parameters": [{"name": "structure_file", "type": "str",
                                            "value": ""}]}],
           "edges": [{"id": "e1", "source_node_id": "n1", "target_node_id": "n2",
                      "target_parameter_name": "structure_file"}],
           "meta": {"template_uuid": template_uuid}}
    assert put(s / "parameters.json", json.dumps(doc)) == 0, status_of(s)
    data = read_bytes(s / "parameters.json")
    before = (os.stat(s / "parameters.json").st_mtime_ns, os.listdir(s / "parameters_output"),
              os.stat(npath(s, "n1")).st_ino, os.stat(npath(s, "n2")).st_ino)
    assert put(s / "parameters.json", data) == 0
    assert read_bytes(s / "parameters.json") == data
    after = (os.stat(s / "parameters.json").st_mtime_ns, os.listdir(s / "parameters_output"),
             os.stat(npath(s, "n1")).st_ino, os.stat(npath(s, "n2")).st_ino)
    assert after == before
