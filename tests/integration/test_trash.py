"""The freedesktop.org trash on a mount (issue 11), driven the way a desktop
drives it: `gio trash` moves a session, a file or a node into
MNT/.Trash-<uid>/; `gio trash --list` (gvfsd-trash over a D-Bus session bus)
lists it with its original place; `gio trash --restore` puts it back;
`gio remove trash:///...` deletes it for good.  Nothing here writes the
trash's files itself.

gio 2.74 restores non-ASCII original paths wrongly (fixed in glib 2.84),
so the names here are ASCII.  `gio trash --empty` empties every trash of
the user, other mounts' too: it runs only as tools/test's throwaway user
(with a home trash of the test's own); elsewhere items are removed one by
one.
"""

import errno
import json
import os
import shutil
import subprocess
import urllib.parse

import pytest

from conftest import (FULL_DATA, clean, diff_keys, dumps, expect,
                      fill_session, put_json, read_bytes, root_log, run,
                      status_of, user_data, write_bytes)


def gio(*args, ok=True):
    """gio in a D-Bus session of its own (gvfsd-trash starts on demand);
    (exit status, stdout, stderr without the bus's chatter)."""
    if shutil.which("gio") is None or shutil.which("dbus-run-session") is None:
        pytest.fail("gio and dbus-run-session are not installed"
                    " (tools/setup installs libglib2.0-bin, gvfs-daemons,"
                    " dbus-daemon)")
    r = subprocess.run(["dbus-run-session", "--", "gio", *args],
                       capture_output=True, text=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    err = "\n".join(line for line in r.stderr.splitlines()
                    if "connection to the bus" not in line)
    if ok:
        assert r.returncode == 0, (args, r.stdout, err)
    return r.returncode, r.stdout, err


def listed(mnt):
    """[(original path, trash URI)] of what `gio trash --list` lists from
    this mount, in the trash's order of names."""
    _, out, _ = gio("trash", "--list")
    found = []
    for line in out.splitlines():
        uri, _, orig = line.partition("\t")
        if orig.startswith(f"{mnt}/"):
            found.append((orig, uri))
    return sorted(found, key=lambda item: urllib.parse.unquote(item[1]))


def trash_dir(mnt):
    return mnt / f".Trash-{os.getuid()}"


def info(mnt, name):
    return (trash_dir(mnt) / "info" / f"{name}.trashinfo").read_text()


def forget(mnt, *args):
    """Delete for good with `gio *args` (remove URI, trash --empty).
    gvfsd-trash deletes in the background, after gio has exited, and stops
    with its D-Bus session: the session is kept until the trash's
    expunged/ is empty again, and fails when it is not after 30 s."""
    expunged = trash_dir(mnt) / "expunged"
    r = subprocess.run(["dbus-run-session", "--", "sh", "-c",
                        'e=$1; shift; gio "$@" || exit 1; i=0;'
                        ' while [ -n "$(ls -A "$e" 2>/dev/null)" ] &&'
                        ' [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done;'
                        ' [ -z "$(ls -A "$e" 2>/dev/null)" ] ||'
                        ' { echo "$e still holds $(ls -A "$e")" >&2; exit 1; }',
                        "sh", str(expunged), *args],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_a_session_goes_to_the_trash_and_comes_back_whole(flowfs):
    mnt = flowfs.mnt
    s = mnt / "full"
    before = fill_session(s)
    gio("trash", str(s))
    assert sorted(os.listdir(mnt)) == [".Trash-%d" % os.getuid(), ".flowfs"]
    expect(errno.ENOENT, os.stat, s)
    t = trash_dir(mnt)
    st = os.stat(t)
    assert (st.st_uid, st.st_mode & 0o777) == (os.getuid(), 0o700)
    assert os.listdir(t / "files") == ["full"]
    assert "Path=full\n" in info(mnt, "full")
    # in the trash it is still the whole session, read-only to nobody
    assert user_data(t / "files" / "full")["uploads/data.csv"] == \
        before["uploads/data.csv"]
    assert os.readlink(t / "files" / "full" / "skill") == \
        "../../../.flowfs/skills/scientific-workflow"
    assert os.path.isdir(t / "files" / "full" / "skill")
    # its name is free at the root meanwhile
    os.mkdir(s)
    os.rmdir(s)
    (orig, uri), = listed(mnt)
    assert orig == str(s)
    gio("trash", "--restore", uri)
    assert sorted(os.listdir(mnt)) == sorted([".flowfs", t.name, "full"])
    assert user_data(s) == before
    assert json.loads(read_bytes(s / "session.json"))["id"] == "full"
    assert os.listdir(t / "files") == []
    assert listed(mnt) == []
    # the same after a remount: nothing was copied, the session moved
    flowfs.remount()
    assert user_data(s) == before


def test_files_and_nodes_go_to_the_trash_and_come_back(flowfs):
    mnt = flowfs.mnt
    s = mnt / "s"
    before = fill_session(s)
    node = read_bytes(s / "nodes" / "n2.json")
    for path in (s / "uploads" / "data.csv", s / "uploads" / "sub",
                 s / "output" / "result.txt", s / "nodes" / "n2.json"):
        gio("trash", str(path))
        expect(errno.ENOENT, os.lstat, path)
    t = trash_dir(mnt) / "files"
    assert sorted(os.listdir(t)) == ["data.csv", "n2.json", "result.txt", "sub"]
    assert read_bytes(t / "n2.json") == node
    assert read_bytes(t / "sub" / "deep.txt") == b"deep\n"
    # a node taken away takes its edges (as rm does)
    assert os.listdir(s / "nodes") == ["n1.json"]
    assert os.listdir(s / "edges") == []
    assert "Path=s/uploads/data.csv\n" in info(mnt, "data.csv")
    items = listed(mnt)
    assert sorted(o for o, _ in items) == sorted(str(p) for p in (
        s / "uploads" / "data.csv", s / "uploads" / "sub",
        s / "output" / "result.txt", s / "nodes" / "n2.json"))
    for orig, uri in items:
        gio("trash", "--restore", uri)
        assert os.path.lexists(orig)
    assert read_bytes(s / "nodes" / "n2.json") == node
    # all back, the node with the edge it left with (issue 29: the
    # README's "goes back where it was" held for files, not for a node)
    after = user_data(s)
    assert after == before, diff_keys(before, after)
    assert os.listdir(t) == []
    assert status_of(s) == (["ready"], [])


def test_nodes_restored_in_any_order_bring_their_edges_back(flowfs):
    """Issue 29: a node restored from the trash came back without its
    edges.  Each node takes the edges it had when it went; restored in
    any order, the graph is whole again (an edge whose other node is
    still in the trash waits for it, and status says so).  An edge whose
    name was taken meanwhile stays the new one's, and the log says so."""
    mnt = flowfs.mnt
    s = mnt / "s"
    os.mkdir(s)
    for n, inputs in (("a", []), ("b", ["x"]), ("c", ["y"])):
        assert put_json(s / "nodes" / f"{n}.json", {"label": n,
            "input_parameters": [{"name": i, "value": None}
                                 for i in inputs]}) == 0
    assert put_json(s / "edges" / "ab.json", {"source_node_id": "a",
        "target_node_id": "b", "target_parameter_name": "x"}) == 0
    assert put_json(s / "edges" / "bc.json", {"source_node_id": "b",
        "target_node_id": "c", "target_parameter_name": "y"}) == 0
    before = read_bytes(s / "parameters.json")
    gio("trash", str(s / "nodes" / "a.json"))
    gio("trash", str(s / "nodes" / "b.json"))
    assert os.listdir(s / "edges") == []
    by_name = {os.path.basename(o): uri for o, uri in listed(mnt)}
    # a took ab with it, b then bc; a comes back first: ab waits for b,
    # still in the trash
    gio("trash", "--restore", by_name["a.json"])
    assert os.listdir(s / "edges") == ["ab.json"]
    assert status_of(s)[0] == [
        'edges/ab.json: waits for its target node "b", which does not exist']
    gio("trash", "--restore", by_name["b.json"])
    assert sorted(os.listdir(s / "edges")) == ["ab.json", "bc.json"]
    assert status_of(s) == (["ready"], [])
    # the same graph (restored items are the newest: listed last)
    got, want = (json.loads(doc) for doc in
                 (read_bytes(s / "parameters.json"), before))
    for doc in (got, want):
        for kind in ("nodes", "edges"):
            doc[kind].sort(key=lambda item: item["id"])
    assert got == want
    # a name taken meanwhile is the new edge's
    gio("trash", str(s / "nodes" / "c.json"))
    assert put_json(s / "nodes" / "d.json", {"label": "d",
        "input_parameters": [{"name": "y", "value": None}]}) == 0
    assert put_json(s / "edges" / "bc.json", {"source_node_id": "b",
        "target_node_id": "d", "target_parameter_name": "y"}) == 0
    (_, uri), = listed(mnt)
    gio("trash", "--restore", uri)
    assert json.loads(read_bytes(s / "edges" / "bc.json"))[
        "target_node_id"] == "d"
    assert status_of(s) == (["ready"], [
        ("edges/bc.json", "did not come back with its node: another edge"
                          " has its name")])

def test_a_generated_file_trashed_leaves_a_copy(flowfs):
    """Trashing status (or any file flowfs makes) puts a copy in the
    trash; the file itself cannot go."""
    s = flowfs.mnt / "s"
    os.mkdir(s)
    gio("trash", str(s / "status"))
    assert read_bytes(s / "status") == b"ready\n"
    assert read_bytes(trash_dir(flowfs.mnt) / "files" / "status") == b"ready\n"
    ((_, uri),) = listed(flowfs.mnt)
    forget(flowfs.mnt, "remove", uri)
    t = trash_dir(flowfs.mnt)
    assert os.listdir(t / "files") == os.listdir(t / "expunged") == []
    assert listed(flowfs.mnt) == []
    assert read_bytes(s / "status") == b"ready\n"


def test_a_document_trashed_goes_with_what_it_held(flowfs):
    s = flowfs.mnt / "s"
    os.mkdir(s)
    assert put_json(s / "session.json", {"title": "keep me"}) == 0
    gio("trash", str(s / "session.json"))
    assert json.loads(read_bytes(s / "session.json"))["title"] == ""
    (orig, uri), = listed(flowfs.mnt)
    rc, _, err = gio("trash", "--restore", uri, ok=False)
    # the name is always there: restore it over it
    assert rc != 0 and "exists" in err
    gio("trash", "--restore", "--force", uri)
    assert json.loads(read_bytes(s / "session.json"))["title"] == "keep me"


def test_same_name_twice_and_restore_onto_a_taken_name(flowfs):
    mnt = flowfs.mnt
    s = mnt / "s"
    os.mkdir(s)
    write_bytes(s / "uploads" / "a", b"first")
    gio("trash", str(s))
    os.mkdir(s)
    write_bytes(s / "uploads" / "a", b"second")
    gio("trash", str(s))
    t = trash_dir(mnt) / "files"
    assert sorted(os.listdir(t)) == ["s", "s.2"]
    assert read_bytes(t / "s" / "uploads" / "a") == b"first"
    assert read_bytes(t / "s.2" / "uploads" / "a") == b"second"
    (o1, u1), (o2, u2) = listed(mnt)
    assert o1 == o2 == str(s)
    uris = {b"first": u1, b"second": u2}
    # a session of that name holding files is there: refused, kept
    os.mkdir(s)
    write_bytes(s / "uploads" / "a", b"third")
    rc, _, err = gio("trash", "--restore", uris[b"first"], ok=False)
    assert rc != 0 and "File exists" in err, (rc, err)
    assert listed(mnt) == [(str(s), u1), (str(s), u2)]
    assert read_bytes(t / "s" / "uploads" / "a") == b"first"
    assert read_bytes(s / "uploads" / "a") == b"third"
    shutil.rmtree(s)
    gio("trash", "--restore", uris[b"first"])
    assert read_bytes(s / "uploads" / "a") == b"first"
    forget(mnt, "remove", uris[b"second"])
    assert os.listdir(t) == []


def test_restore_onto_an_empty_session_of_that_name(flowfs):
    """The README: restoring onto a session name fails when the session
    there holds files.  gio refuses an empty one too ("File exists": gio
    checks the name itself before moving anything, and with --force will
    not move a folder over a folder), so it goes first (rmdir).  Moved back
    with rename(2) (`mv -T`), the trashed session takes an empty one's
    place, while onto one holding files mv fails and .flowfs/log says
    why."""
    mnt = flowfs.mnt
    s = mnt / "s"
    before = fill_session(s)
    files = trash_dir(mnt) / "files"
    gio("trash", str(s))
    ((_, uri),) = listed(mnt)
    os.mkdir(s)
    rc, _, err = gio("trash", "--restore", uri, ok=False)
    assert rc != 0 and "File exists" in err, (rc, err)
    rc, _, err = gio("trash", "--restore", "--force", uri, ok=False)
    assert rc != 0 and "directory over directory" in err, (rc, err)
    assert listed(mnt) == [(str(s), uri)]
    assert os.listdir(s / "uploads") == []
    os.rmdir(s)
    gio("trash", "--restore", uri)
    assert user_data(s) == before
    assert listed(mnt) == [] and os.listdir(files) == []

    gio("trash", str(s))
    os.mkdir(s)
    write_bytes(s / "uploads" / "mine", b"x")
    r = run("mv", "-T", files / "s", s)
    assert r.returncode == 1 and "Directory not empty" in r.stderr, r
    assert root_log(mnt)[-1][1:] == ("s", "session 's' holds files")
    assert read_bytes(s / "uploads" / "mine") == b"x"
    assert user_data(files / "s") == before
    os.unlink(s / "uploads" / "mine")
    clean(run("mv", "-T", files / "s", s))
    assert user_data(s) == before
    assert json.loads(read_bytes(s / "session.json"))["id"] == "s"
    assert sorted(os.listdir(mnt)) == [trash_dir(mnt).name, ".flowfs", "s"]
    assert os.listdir(files) == []


@pytest.mark.parametrize("how", ["remove", "empty"])
def test_emptying_the_trash_deletes_for_good(flowfs, tmp_path, monkeypatch,
                                             how):
    """`gio remove trash:///...` of the item, or `gio trash --empty` (the
    README's way): the session is gone for good, from the database too."""
    import sqlite3
    if how == "empty":
        if not os.environ.get("FLOWFS_TEST_USER"):
            pytest.skip("gio trash --empty empties every trash of the user,"
                        " on every mount: only tools/test's user runs it")
        monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    mnt = flowfs.mnt
    s = mnt / "doomed"
    fill_session(s)
    gio("trash", str(s))
    ((_, uri),) = listed(mnt)
    if how == "remove":
        forget(mnt, "remove", uri)
    else:
        forget(mnt, "trash", "--empty")
    t = trash_dir(mnt)
    assert os.listdir(t / "files") == os.listdir(t / "expunged") == []
    assert listed(mnt) == []
    flowfs.stop()
    con = sqlite3.connect(f"file:{flowfs.db}?mode=ro", uri=True)
    try:
        assert con.execute("SELECT count(*) FROM sessions").fetchone()[0] == 0
        # nothing of it is left: only the trash's own folders
        rows = con.execute("SELECT count(*) FROM inodes WHERE session IS NOT"
                           " NULL").fetchone()[0]
        assert rows == 0
    finally:
        con.close()
    flowfs.start()


def test_rm_rf_of_the_trash_removes_what_it_holds(flowfs):
    mnt = flowfs.mnt
    s = mnt / "s"
    fill_session(s)
    gio("trash", str(s))
    r = subprocess.run(["rm", "-rf", str(trash_dir(mnt))], capture_output=True,
                       text=True)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert os.listdir(mnt) == [".flowfs"]


def test_only_ones_own_trash_folder(flowfs):
    mnt = flowfs.mnt
    other = f".Trash-{os.getuid() + 1}"
    expect(errno.EPERM, os.mkdir, mnt / other)
    assert root_log(mnt)[-1][1:] == (
        other, "the only trash folders here are .Trash and one's own,"
        f" .Trash-{os.getuid()}")
    os.mkdir(trash_dir(mnt))
    expect(errno.EEXIST, os.mkdir, trash_dir(mnt))
    # a trash folder stays where it is, and holds no session of its own
    expect(errno.EPERM, os.rename, trash_dir(mnt), mnt / "x")
    assert root_log(mnt)[-1][1:] == (trash_dir(mnt).name,
                                     "a trash folder stays where it is")
    os.mkdir(trash_dir(mnt) / "files")
    write_bytes(trash_dir(mnt) / "files" / "f", b"x")
    expect(errno.ENOTEMPTY, os.rmdir, trash_dir(mnt))
    # a plain folder moved to the root is no session: mv copies instead
    expect(errno.EXDEV, os.rename, trash_dir(mnt) / "files", mnt / "files")
    assert root_log(mnt)[-1][1:] == (
        "files", "only sessions live at the root (a folder moved there is"
        " copied into a new session by mv)")
    os.unlink(trash_dir(mnt) / "files" / "f")
    os.rmdir(trash_dir(mnt) / "files")
    os.rmdir(trash_dir(mnt))
    assert os.listdir(mnt) == [".flowfs"]


def test_uploads_and_output_go_to_the_trash_whole(flowfs):
    """Delete on uploads/ or output/ (the folders every session has): what
    they hold goes to the trash, the session gets empty ones.  gio cannot
    put a folder back over one that is there: its files are moved back."""
    mnt = flowfs.mnt
    s = mnt / "s"
    before = fill_session(s)
    gio("trash", str(s / "uploads"))
    gio("trash", str(s / "output"))
    assert os.listdir(s / "uploads") == []
    # output/ shows what flowfs makes in it, nothing of the user's
    assert sorted(os.listdir(s / "output")) == [
        ".manifest.json", "graph.dot", "graph.svg", "submit.slurm.sh",
        "summary.json", "summary_readable.txt", "workflow.argo.yaml"]
    t = trash_dir(mnt) / "files"
    assert read_bytes(t / "uploads" / "data.csv") == FULL_DATA
    assert read_bytes(t / "output" / "result.txt") == b"32.20\n"
    # a plain folder in the trash: no session's reserved names in it
    write_bytes(t / "output" / "for005.dat", b"mine")
    os.unlink(t / "output" / "for005.dat")
    for name in ("uploads", "output"):
        for entry in os.listdir(t / name):
            os.rename(t / name / entry, s / name / entry)
        os.rmdir(t / name)
    assert user_data(s) == before
    assert listed(mnt) == []
