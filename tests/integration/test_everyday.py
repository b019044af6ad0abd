"""Everyday use by an ordinary user (issue 11): the suite itself runs
unprivileged, rm -rf of a session in any state, status for people and
programs (status, status.json, the session's log, the root's log, the
daemon's own lines), folders' sizes, and what a file manager's inotify
watch on a folder sees when flowfs's generated files come and go."""

import errno
import json
import os
import pwd
import re
import shutil
import stat
import subprocess

import pytest

from conftest import (FULL_DATA, STATUS_TIME_RE, expect, fill_session,
                      oserror, project_version, put, put_json, read_bytes,
                      readme_section, root_log, run_as_in, status_json,
                      status_of, user_data, wait_until, write_bytes)


def test_the_suite_runs_unprivileged():
    """tools/test runs this suite as the ordinary user it names: root's
    CAP_DAC_OVERRIDE would hide permission bugs."""
    user = os.environ.get("FLOWFS_TEST_USER")
    if user is None:
        pytest.skip("not run by tools/test")
    assert os.geteuid() != 0
    assert pwd.getpwuid(os.geteuid()).pw_name == user


# -- rm -rf -------------------------------------------------------------------

@pytest.mark.parametrize("tool", ["rm", "rmtree"])
def test_rm_rf_of_a_session_in_any_state(flowfs, tool):
    mnt = flowfs.mnt
    s = mnt / "full"
    fill_session(s)
    assert os.path.islink(s / "summary.json") and os.path.islink(s / "skill")
    if tool == "rm":
        r = subprocess.run(["rm", "-rf", str(s)], capture_output=True,
                           text=True)
        assert r.returncode == 0 and r.stderr == "", r.stderr
    else:
        shutil.rmtree(s)
    assert os.listdir(mnt) == [".flowfs"]
    flowfs.remount()
    assert os.listdir(mnt) == [".flowfs"]
    os.mkdir(s)
    assert os.listdir(s / "uploads") == [] and \
        json.loads(read_bytes(s / "context.json")) is None


def test_rmdir_says_why_it_keeps_a_session(mnt):
    s = mnt / "kept"
    os.mkdir(s)
    write_bytes(s / "uploads" / "f", b"x")
    expect(errno.ENOTEMPTY, os.rmdir, s)
    assert root_log(mnt)[-1][1:] == (
        "kept", "the session holds files, a job graph, a context or rounds"
        " (rm -rf removes it all), or snapshots (rm -rf S/.snapshots/*"
        " removes them)")


@pytest.mark.root      # another user on the mount: allow_other
def test_another_users_session_is_theirs(make_flowfs):
    """A session 0755 of its owner: another user reads it, and neither
    writes, binds, runs nor removes anything in it."""
    fs = make_flowfs(extra_args=["-o", "allow_other"])
    s = fs.mnt / "mine"
    before = fill_session(s)

    def child():
        if read_bytes("uploads/data.csv") != FULL_DATA:
            return 1
        got = (put("session.json", b'{"title": "x"}'),
               oserror(write_bytes, "uploads/new", b"x"),
               oserror(write_bytes, "ctl", b"run\n"),
               oserror(os.unlink, "uploads/data.csv"),
               oserror(os.rmdir, "uploads"))
        if got != (errno.EACCES,) * 5:
            os.write(2, f"{got}\n".encode())
            return 2
        r = subprocess.run(["rm", "-rf", "uploads", "nodes", "rounds"],
                           capture_output=True)
        # the clear error: rm says why for each name it could not remove
        lines = r.stderr.splitlines()
        if r.returncode == 0 or not lines or not all(
                l.endswith(b": Permission denied") for l in lines):
            os.write(2, r.stderr)
            return 3
        return 0

    assert run_as_in(4242, 4242, s, child) == 0
    assert user_data(s) == before


ALLOW_OTHER_SCRIPT = r"""
set -u
# what fusermount3 reads, in this mount namespace only; later writes
# rewrite the same file, which the bind shows
: >"$WORK/fuse.conf"
mount --bind "$WORK/fuse.conf" /etc/fuse.conf || echo "bind failed"
as_user() { runuser -u "$OWNER" -- env -i PATH=/usr/bin:/bin HOME="$WORK" \
    ASAN_OPTIONS="$ASAN_OPTIONS" UBSAN_OPTIONS="$UBSAN_OPTIONS" "$@"; }
as_other() { setpriv --reuid=4242 --regid=4242 --clear-groups "$@"; }
printf '# nothing allowed\n' >"$WORK/fuse.conf"
as_user "$FLOWFS" --db="$WORK/a.db" -o allow_other "$WORK/mnt" \
    2>"$WORK/refused.err" && echo "mounted without user_allow_other"
mountpoint -q "$WORK/mnt" && echo "mounted without user_allow_other"
printf 'user_allow_other\n' >"$WORK/fuse.conf"
as_user "$FLOWFS" --db="$WORK/a.db" -o allow_other "$WORK/mnt" ||
    echo "flowfs -o allow_other failed"
as_user mkdir "$WORK/mnt/s" || echo "mkdir failed"
as_other cat "$WORK/mnt/s/status" >"$WORK/other.status"
as_other sh -c 'echo x >"$1"/s/uploads/f' - "$WORK/mnt" 2>"$WORK/other.err" &&
    echo "the other user wrote"
as_other rm -rf "$WORK/mnt/s" 2>>"$WORK/other.err" && echo "the other user removed"
as_user rm -rf "$WORK/mnt/s" || echo "the owner could not remove"
ls -A "$WORK/mnt" >"$WORK/left"
as_user fusermount3 -u "$WORK/mnt" || echo "unmount failed"
mountpoint -q "$WORK/mnt" && echo "still mounted"
true
"""


@pytest.mark.root      # a mount namespace with its own /etc/fuse.conf
def test_an_ordinary_users_mount_with_allow_other(tmp_path):
    """The README: other users see an ordinary user's mount only with
    `-o allow_other`, which /etc/fuse.conf must allow with
    user_allow_other; they read what the modes let them and change
    nothing.  Run in a mount namespace whose /etc/fuse.conf is a test
    file, by the user tools/test makes, with uid 4242 as the other."""
    import tempfile
    owner = os.environ.get("FLOWFS_TEST_USER", "flowfs-test")
    try:
        uid = pwd.getpwnam(owner).pw_uid
    except KeyError:
        pytest.skip(f"no user {owner} (tools/test makes it)")
    from conftest import flowfs_bin
    work = tempfile.mkdtemp(prefix="flowfs-allow-other-")
    try:
        os.chmod(work, 0o755)
        os.mkdir(os.path.join(work, "mnt"))
        os.chown(work, uid, -1)
        os.chown(os.path.join(work, "mnt"), uid, -1)
        r = subprocess.run(
            ["unshare", "-m", "--propagation", "private", "bash", "-c",
             ALLOW_OTHER_SCRIPT],
            env=dict(os.environ, WORK=work, OWNER=owner,
                     FLOWFS=str(flowfs_bin()),
                     ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", ""),
                     UBSAN_OPTIONS=os.environ.get("UBSAN_OPTIONS", "")),
            capture_output=True, text=True, timeout=120)
        assert (r.returncode, r.stdout) == (0, ""), r.stdout + r.stderr

        def said(name):
            with open(os.path.join(work, name)) as f:
                return f.read()
        assert "option allow_other only allowed if 'user_allow_other' is" \
            " set in /etc/fuse.conf" in said("refused.err")
        assert said("other.status") == "ready\n"
        errs = said("other.err").splitlines()
        assert errs and all(l.endswith("Permission denied") for l in errs), errs
        assert said("left") == ".flowfs\n"
    finally:
        shutil.rmtree(work, ignore_errors=True)


# -- status, status.json, the logs ------------------------------------------------

def test_a_refused_write_is_named_in_status_until_mended(session):
    """Issue 29: a refused write looked like a success to a shell's `>`
    and to Python's open().write() without close(), and status went on
    reading "ready".  Now the document's last refused write is a problem
    in status (the reason in the log as before) until it is written well;
    a script waiting for exactly "ready" waits until then."""
    assert put(session / "session.json", b"{") == errno.EINVAL
    # a shell's redirect: the refusal at close() never reaches it
    r = subprocess.run(["bash", "-c", "echo '[]' > request.json; echo $?"],
                       cwd=session, capture_output=True, text=True,
                       timeout=30)
    assert r.stdout == "0\n", r.stdout + r.stderr
    status = read_bytes(session / "status").decode()
    assert status == (
        "session.json: your last write was refused: line 1, column 2: the"
        " document ends before the object is closed; the file still holds"
        " the earlier version\n"
        "request.json: your last write was refused: request.json must be"
        " an object {\"input\": {...}, \"parameter\": {...}}; the file"
        " still holds the earlier version\n"), status
    assert status_json(session)["ready"] is False
    assert status_of(session)[1] == [
        ("session.json", "line 1, column 2: the document ends before the"
         " object is closed"),
        ("request.json", 'request.json must be an object {"input": {...},'
         ' "parameter": {...}}')]
    # a script waiting for exactly "ready" ends once both are mended
    code = ("import time\nwhile open('status').read().strip() != 'ready':"
            " time.sleep(0.1)\n")
    waiter = subprocess.Popen(["/usr/bin/python3", "-c", code], cwd=session)
    assert put(session / "session.json", b'{"title": "fixed"}') == 0
    assert "request.json: your last write" in read_bytes(
        session / "status").decode()
    assert waiter.poll() is None
    # Python's open().write() with no close(): the object goes, the
    # close comes from the garbage collector
    r = subprocess.run(["/usr/bin/python3", "-c",
                        "open('request.json', 'w').write('{}')"],
                       cwd=session, timeout=30)
    assert r.returncode == 0
    assert waiter.wait(timeout=30) == 0
    assert read_bytes(session / "status") == b"ready\n"


def test_a_refused_new_file_and_a_removed_one(session):
    """A refused new node was not made: status says so until a good one
    is; a refused change of a node that is then removed is no problem."""
    nodes = session / "nodes"
    assert put(nodes / "a.json", b'{"label": 3}') == errno.EINVAL
    assert not (nodes / "a.json").exists()
    status = read_bytes(session / "status").decode()
    assert status.startswith("nodes/a.json: your last write was refused: ")
    assert status.endswith("; the file was not made\n"), status
    assert put(nodes / "a.json", b'{"label": "t"}') == 0
    assert read_bytes(session / "status") == b"ready\n"
    assert put(nodes / "a.json", b'{"label": 4}') == errno.EINVAL
    assert read_bytes(session / "status").decode().endswith(
        "; the file still holds the earlier version\n")
    os.unlink(nodes / "a.json")
    assert read_bytes(session / "status") == b"ready\n"


def test_parameters_json_ends_the_refusals_of_the_files_it_writes(session):
    """A refused node or edge file is written well when parameters.json
    writes it (a copy restored with cp -a brings parameters.json after a
    broken node file): its refusal ends; one it does not make stays."""
    assert put(session / "nodes" / "a.json", b'{"label": 3}') == errno.EINVAL
    assert put(session / "nodes" / "b.json", b'{"label": 3}') == errno.EINVAL
    assert put_json(session / "parameters.json", {
        "nodes": [{"id": "a", "label": "t"}], "edges": []}) == 0
    status = read_bytes(session / "status").decode().splitlines()
    assert len(status) == 1 and status[0].startswith(
        "nodes/b.json: your last write was refused: "), status

def test_a_refused_write_outlives_a_remount(flowfs):
    s = flowfs.mnt / "s"
    os.mkdir(s)
    assert put(s / "request.json", b"[]") == errno.EINVAL
    flowfs.remount()
    assert "request.json: your last write was refused" in read_bytes(
        s / "status").decode()


def test_status_json_for_programs(make_flowfs, skill_folder, isolated_config):
    skill_folder.add("needs", input={
        "type": "object", "properties": {"data": {"type": "string"}},
        "required": ["data"]})
    fs = make_flowfs(extra_args=[f"--skills={skill_folder.root}"])
    s = fs.mnt / "s"
    os.mkdir(s)
    # byte for byte what Python's json.dumps(indent=2) writes, in the
    # README's order of keys
    assert read_bytes(s / "status.json").decode() == json.dumps(
        {"ready": True, "problems": [], "notes": [
            "nothing to do yet: no skill is bound (session.json) and the job"
            " graph is empty (nodes/)"], "run": None,
         "fetches": [], "graph": None, "snapshots": [], "fork_of": None},
        indent=2)
    assert put_json(s / "session.json", {"skill": "needs"}) == 0
    assert read_bytes(s / "status.json").decode() == json.dumps(
        {"ready": False, "problems": ["missing required input files: data"],
         "notes": [], "run": None, "fetches": [], "graph": None,
         "snapshots": [], "fork_of": None}, indent=2)
    assert read_bytes(s / "status") == b"missing required input files: data\n"
    write_bytes(s / "uploads" / "data", b"x")
    assert status_json(s)["ready"] is True
    # `jq` reads it as any JSON
    r = subprocess.run(["jq", "-r", ".ready", str(s / "status.json")],
                       capture_output=True, text=True)
    assert r.stdout == "true\n"


def test_refusals_at_the_root_are_logged(flowfs):
    mnt = flowfs.mnt
    expect(errno.EPERM, write_bytes, mnt / "pasted.txt", b"x")
    expect(errno.EPERM, os.symlink, "x", mnt / "ln")
    expect(errno.EINVAL, os.mkdir, mnt / ".hidden")
    lines = read_bytes(mnt / ".flowfs" / "log").decode().splitlines()
    assert re.fullmatch(STATUS_TIME_RE + re.escape(
        f" {mnt}: mounted {flowfs.db} (flowfs {project_version()})"),
        lines[0]), lines[0]
    assert [(p, m) for _, p, m in root_log(mnt)[1:]] == [
        ("pasted.txt", "only sessions live at the root, one folder each: a"
         " file cannot be made here (mkdir makes a session)"),
        ("ln", "only sessions live at the root, one folder each: a symlink"
         " cannot be made here (mkdir makes a session)"),
        (".hidden", "not a session name: session names cannot start with"
         " '.'")]
    # .flowfs/ is read-only, its log too
    assert stat.S_IMODE(os.stat(mnt / ".flowfs" / "log").st_mode) == 0o444
    # the daemon in the foreground prints the same lines
    err = flowfs.stderr()
    for _, path, message in root_log(mnt):
        assert re.search(rf"^flowfs: {STATUS_TIME_RE} {re.escape(path)}: "
                         rf"{re.escape(message)}$", err, re.M), (path, err)


def test_each_mount_adds_a_mounted_line(flowfs):
    """.flowfs/log has a line for each mount, and keeps what came before."""
    mnt = flowfs.mnt
    mounted = f"mounted {flowfs.db} (flowfs {project_version()})"
    expect(errno.EPERM, write_bytes, mnt / "pasted.txt", b"x")
    flowfs.remount()
    assert [(p, m) for _, p, m in root_log(mnt)] == [
        (str(mnt), mounted),
        ("pasted.txt", "only sessions live at the root, one folder each: a"
         " file cannot be made here (mkdir makes a session)"),
        (str(mnt), mounted)]


def test_the_daemon_prints_what_it_logs(flowfs):
    """With -f (the test fixture's way), every line of a log is printed on
    stderr too, named by its session."""
    s = flowfs.mnt / "s"
    os.mkdir(s)
    assert put(s / "session.json", b'{"title": 1}') == errno.EINVAL
    assert re.search(r"^flowfs: " + STATUS_TIME_RE + r' s/session.json:'
                     r' "title" must be a string$', flowfs.stderr(), re.M), \
        flowfs.stderr()


SESSION_JSON_KEYS = "(session.json has id, created, skill, engine, title)"


def test_a_log_line_is_one_line(session):
    """Line breaks in what a message quotes (a key of a refused document)
    become JSON escapes: the log keeps one line per event."""
    assert put_json(session / "session.json", {"one\ntwo\rthree": 1}) == \
        errno.EINVAL
    assert read_bytes(session / "log").count(b"\n") == 1
    assert status_of(session)[1] == [
        ("session.json", f'unknown field "one\\ntwo\\rthree" {SESSION_JSON_KEYS}')]


def test_the_daemon_prints_a_log_line_as_one_line(flowfs):
    """What the daemon prints on stderr with -f is the log's line: one line,
    `flowfs: <time> <session>/<path>: <message>`."""
    s = flowfs.mnt / "s"
    os.mkdir(s)
    assert put_json(s / "session.json", {"one\ntwo\rthree": 1}) == \
        errno.EINVAL
    assert re.search(rf"^flowfs: {STATUS_TIME_RE} s/session.json: unknown"
                     rf' field "one\\ntwo\\rthree" {re.escape(SESSION_JSON_KEYS)}$',
                     flowfs.stderr(), re.M), flowfs.stderr()


def test_a_long_log_message_is_cut_at_1_kib(session):
    """A message longer than 1024 bytes is cut there, at a character: the
    line infer-edges logs for an edge it skips names both nodes, then the
    cycle (three more names); with names of 250 bytes it is longer, and
    its 1024th byte is the first of an "é"."""
    a = "a" * 248 + "é"
    b = "b" * 234 + "é" + "b" * 14
    for node in (a, b):     # made in this order: infer-edges links a -> b
        assert put_json(session / "nodes" / f"{node}.json", {
            "label": "x", "input_parameters": [
                {"name": "data", "type": "str", "value": ""}]}) == 0
    assert put_json(session / "edges" / "e1.json", {
        "source_node_id": b, "target_node_id": a,
        "target_parameter_name": "data"}) == 0
    assert put(session / "ctl", b"infer-edges\n") == 0
    whole = f"{a} -> {b} skipped: would close a cycle: {a} -> {b} -> {a}"
    assert len(whole.encode()) > 1024
    # 1023 bytes: the 1024th is the first of an "é"'s two
    assert whole.encode()[1023:1025] == "é".encode()
    cut = whole.encode()[:1023].decode()
    assert status_of(session)[1] == [("ctl", cut)]
    assert read_bytes(session / "log").count(b"\n") == 1


# -- folders ---------------------------------------------------------------------

def test_folders_report_a_size(session):
    """As local folders do (ext4: 4096): tools that sum sizes see them."""
    for d in (session.parent, session.parent / ".flowfs", session,
              session / "uploads", session / "parameters_output",
              session / "nodes"):
        st = os.stat(d)
        assert stat.S_ISDIR(st.st_mode)
        assert st.st_size == 4096, d
    r = subprocess.run(["ls", "-ld", str(session)], capture_output=True,
                       text=True)
    assert " 4096 " in r.stdout


# -- what inotify watchers see ---------------------------------------------------

class Watch:
    """inotifywait -m on a folder: the events it prints, in a thread."""

    def __init__(self, path):
        import threading
        if shutil.which("inotifywait") is None:
            pytest.fail("inotifywait is not installed (tools/setup installs"
                        " inotify-tools)")
        self.proc = subprocess.Popen(
            ["inotifywait", "-m", "--format", "%e %f", str(path)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.events = []
        self.said = []
        self.threads = [threading.Thread(target=self._read, daemon=True,
                                         args=(self.proc.stdout, self.events)),
                        threading.Thread(target=self._read, daemon=True,
                                         args=(self.proc.stderr, self.said))]
        for thread in self.threads:
            thread.start()
        # once its watch is set, inotifywait says so on stderr
        try:
            wait_until(lambda: "Watches established." in self.said or
                       self.proc.poll() is not None,
                       "inotifywait set its watch")
            assert "Watches established." in self.said, self.said
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _read(stream, lines):
        for line in stream:
            lines.append(line.strip())

    def seen(self, what):
        return any(what in e for e in self.events)

    def close(self):
        self.proc.terminate()
        self.proc.wait()


def test_a_watcher_of_output_sees_for005_come_and_go(make_flowfs, tmp_path):
    """The kernel tells inotify nothing of FUSE's cache invalidations; so
    flowfs touches what changed through the mount itself, once the session
    holds still: a watcher of output/ (a file manager) hears of it."""
    from test_datcom import PC9
    fs = make_flowfs()
    s = fs.mnt / "pc9"
    os.mkdir(s)
    assert put_json(s / "session.json", {"skill": "datcom"}) == 0
    w = Watch(s / "output")
    try:
        assert put_json(s / "request.json", {"parameter": PC9}) == 0
        assert "for005.dat" in os.listdir(s / "output")
        wait_until(lambda: w.seen("ATTRIB,ISDIR"), "output/ touched")
        wait_until(lambda: w.seen("ATTRIB for005.dat"), "for005.dat touched")
        w.events.clear()
        assert put_json(s / "request.json", {"parameter": {}}) == 0
        assert "for005.dat" not in os.listdir(s / "output")
        wait_until(lambda: w.seen("ATTRIB,ISDIR"), "output/ touched again")
    finally:
        w.close()
    # touching changed nothing stored: output/'s own time is as it was
    # once the touch has come
    w = Watch(s / "output")
    st1 = os.stat(s / "output").st_mtime_ns
    try:
        assert put_json(s / "request.json", {"parameter": PC9}) == 0
        wait_until(lambda: w.seen("ATTRIB,ISDIR"), "output/ touched once more")
    finally:
        w.close()
    assert os.stat(s / "output").st_mtime_ns == st1


def test_a_watcher_of_a_session_sees_status_change(flowfs):
    s = flowfs.mnt / "s"
    os.mkdir(s)
    w = Watch(s)
    try:
        assert put_json(s / "session.json", {"skill": "scientific-workflow"}) == 0
        wait_until(lambda: w.seen("ATTRIB status"), "status touched")
        wait_until(lambda: w.seen("ATTRIB prompt.txt"), "prompt.txt touched")
    finally:
        w.close()


def test_readme_root_log_example(flowfs, tmp_path):
    """The README's example of a file pasted at the root, run as written."""
    text = readme_section("The tree")
    start = text.index("**Sessions.**")
    block = re.search(r"```console\n(.*?)```", text[start:], re.S).group(1)
    lines = block.splitlines()
    assert lines[0] == '$ echo "to keep" > notes.txt'
    lines = lines[1:]
    assert lines[0] == "$ cp notes.txt mnt/"
    (tmp_path / "notes.txt").write_text("n\n")
    r = subprocess.run(["cp", "notes.txt", f"{flowfs.mnt}/"], cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode == 1
    assert r.stderr.replace(str(flowfs.mnt), "mnt") == lines[1] + "\n"
    assert lines[2] == "$ tail -1 mnt/.flowfs/log"
    when, path, message = root_log(flowfs.mnt)[-1]
    assert re.fullmatch(STATUS_TIME_RE + " (.+?): (.+)", lines[3]).groups() \
        == (path, message)
