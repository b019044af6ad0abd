"""Issue 12, secrets, permissions and the smaller findings: each attack the
issue reproduced, driven through a real mount (plain file I/O, the fake
engine of fake_engine.py, real processes), must fail.

The experiment sandbox and the fetches' limits have their own tests.
"""
import errno
import json
import os
import socket
import stat
import subprocess
import time

import pytest

from conftest import put_json, read_bytes, status_of, wait_until
from test_engine import (KEY, ROUND3, bind_with, engine, engine_log,  # noqa: F401
                         files, report_session, report_skill, run_mount,
                         science, wait_run, write_line)


def closed_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def everything_readable(fs, session):
    """Every text a person or a program reads about a session and the
    mount: (name, bytes)."""
    out = [(n, read_bytes(session / n)) for n in
           ("status", "status.json", "log", "engine.log")]
    out += [(f".flowfs/{n}", read_bytes(fs.mnt / ".flowfs" / n))
            for n in ("config", "log")]
    return out


# -- secrets ---------------------------------------------------------------------

EXPERIMENT = """<Phenomenon>p</Phenomenon><Hypothesis>h</Hypothesis><Model>m</Model>
<Experiment>
import os
found = []
if 'FLOWFS_ENGINE_KEY' in os.environ:
    found.append('environment')
for what in ('environ', 'cmdline'):
    try:
        with open('/proc/%d/%s' % (os.getppid(), what), 'rb') as f:
            if b'sk-test-0123' in f.read():
                found.append('parent ' + what)
    except OSError:
        pass
print('found: ' + (', '.join(found) or 'nothing'))
</Experiment>"""


def test_experiment_finds_no_engine_key(run_mount, engine):
    """The experiment printed os.environ (the key went into rounds/1.json,
    the database and the next request) and read the daemon's
    /proc/<pid>/environ."""
    fs = run_mount("--allow-exec")
    s = fs.mnt / "t"
    os.mkdir(s)
    science(s, 2)
    engine.reply(content=EXPERIMENT)
    engine.reply(content=ROUND3)
    assert write_line(s / "ctl", "run\n") == 0
    assert wait_run(s) == "run: done"
    assert json.loads(read_bytes(s / "rounds" / "1.json"))["observation"] == \
        "found: nothing"
    assert KEY not in json.dumps(engine.requests[1])
    # it was sent where it belongs
    assert engine.headers[0]["Authorization"] == f"Bearer {KEY}"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any process's memory")
def test_daemon_memory_is_not_readable(run_mount, skill_folder, engine, tmp_path):
    """With --engine-key-file, another process of the same user read the
    key in /proc/<pid>/mem; a core dump held it too."""
    key_file = tmp_path / "key"
    key_file.write_text("sk-test-from-a-file\n")
    fs, s = report_session(run_mount, skill_folder, f"--engine-key-file={key_file}")
    pid = fs.proc.pid
    for name in ("mem", "environ", "maps"):
        with pytest.raises(PermissionError):
            with open(f"/proc/{pid}/{name}", "rb") as f:
                f.read(1)
    # and the mount works as before
    engine.reply(content='{"answer": 1}')
    assert write_line(s / "ctl", "run\n") == 0
    assert wait_run(s) == "run: done"
    assert engine.headers[0]["Authorization"] == "Bearer sk-test-from-a-file"


@pytest.mark.root
def test_the_key_is_wiped_from_the_environment_block(run_mount, skill_folder, engine):
    """/proc/<pid>/environ shows the environment the process started with:
    unsetenv() alone leaves the key there for root (and, were the daemon
    dumpable, for the user's other processes)."""
    fs, s = report_session(run_mount, skill_folder)
    with open(f"/proc/{fs.proc.pid}/environ", "rb") as f:
        env = f.read()
    assert b"sk-test-0123" not in env
    # and it is still the key runs send
    engine.reply(content='{"answer": 1}')
    assert write_line(s / "ctl", "run\n") == 0
    assert wait_run(s) == "run: done"
    assert engine.headers[0]["Authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize("query", ["", "?api-key=s3cretpw"])
def test_url_credentials_are_never_shown(run_mount, skill_folder, query):
    """--engine-url=http://user:pass@host/v1 showed in status, engine.log,
    .flowfs/config and the database; so would a key in the query."""
    report_skill(skill_folder)
    port = closed_port()
    fs = run_mount("--engine-retries=0",
                   url=f"http://flowuser:s3cretpw@127.0.0.1:{port}/v1{query}")
    shown = f"http://***@127.0.0.1:{port}/v1" + ("?***" if query else "")
    config = json.loads(read_bytes(fs.mnt / ".flowfs" / "config"))
    assert config["engine"]["url"] == shown
    s = fs.mnt / "s"
    os.mkdir(s)
    bind_with(s, "report")
    assert write_line(s / "ctl", "run\n") == 0
    assert wait_run(s) == f"run: failed: {shown}: Couldn't connect to server"
    assert engine_log(s)[0]["error"] == f"{shown}: Couldn't connect to server"
    texts = everything_readable(fs, s)
    # what other users see of the daemon's command line (ps)
    with open(f"/proc/{fs.proc.pid}/cmdline", "rb") as f:
        texts.append(("cmdline", f.read()))
    fs.stop()
    texts.append(("stderr", fs.stderr().encode()))
    for p in fs.tmp.iterdir():
        if p.is_file() and p.name.startswith(fs.db.name):
            texts.append((p.name, p.read_bytes()))
    for name, text in texts:
        assert b"s3cretpw" not in text and b"flowuser" not in text, name


# -- permissions -------------------------------------------------------------------

def modes(root):
    """(path, mode) of everything under root, root included."""
    out = [(root, os.lstat(root).st_mode)]
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            out.append((p, os.lstat(p).st_mode))
    return out


def test_entries_are_writable_by_their_owner_only(run_mount, skill_folder, engine):
    """ctl was 0222: with -o allow_other any local user started and
    cancelled a run on the owner's engine key."""
    fs, s = report_session(run_mount, skill_folder)
    os.mkdir(fs.mnt / "d")
    put_json(fs.mnt / "d" / "session.json", {"skill": "datcom"})
    seen = modes(fs.mnt)
    assert len(seen) > 30
    for path, mode in seen:
        if stat.S_ISLNK(mode):
            continue
        assert not mode & (stat.S_IWGRP | stat.S_IWOTH), (path, oct(mode))
    assert stat.S_IMODE(os.stat(s / "ctl").st_mode) == 0o600
    assert os.stat(s / "ctl").st_uid == os.getuid()


def test_database_files_are_private(make_flowfs, tmp_path):
    """The database and its -wal, -shm were created 0644: another user
    copied them and read an upload that was 0600 in the mount."""
    old = os.umask(0o022)
    try:
        fs = make_flowfs(db=tmp_path / "new" / "folder" / "flowfs.db")
    finally:
        os.umask(old)
    s = fs.mnt / "s"
    os.mkdir(s)
    (s / "uploads" / "secret.txt").write_text("private\n")
    os.chmod(s / "uploads" / "secret.txt", 0o600)
    files = [fs.db, fs.db.with_name(fs.db.name + "-wal"),
             fs.db.with_name(fs.db.name + "-shm")]
    for p in files:
        assert stat.S_IMODE(os.stat(p).st_mode) == 0o600, p
    for d in (tmp_path / "new", tmp_path / "new" / "folder"):
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o700, d
    assert "warning" not in read_bytes(fs.mnt / ".flowfs" / "log").decode()


def test_a_database_others_can_read_is_warned_about(make_flowfs):
    fs = make_flowfs()
    fs.stop()
    os.chmod(fs.db, 0o644)
    fs.start()
    want = (f"warning: other users may read the database {fs.db} (mode 0644):"
            f" chmod 600 {fs.db}")
    lines = [l for l in fs.stderr().splitlines() if "warning" in l]
    assert len(lines) == 1 and lines[0].endswith(f" {fs.db}: {want}"), lines
    log = read_bytes(fs.mnt / ".flowfs" / "log").decode()
    assert log.count(want) == 1, log
    # flowfs does not change it behind the owner's back
    assert stat.S_IMODE(os.stat(fs.db).st_mode) == 0o644


# -- the smaller ones ------------------------------------------------------------

@pytest.mark.parametrize("option,value,lo,hi", [
    ("--engine-timeout", "999999999999999999", 1, 86400),
    ("--engine-timeout", "0", 1, 86400),
    ("--engine-timeout", "5s", 1, 86400),
    ("--engine-retries", "-1", 0, 100),
    ("--engine-retries", "1000", 0, 100),
    ("--engine-backoff-ms", "9223372036854775808", 1, 60000),
    ("--engine-backoff-ms", "", 1, 60000),
    ("--exec-timeout", "-5", 1, 86400),
    ("--exec-disk", "0", 1, 1048576),
    ("--exec-disk", "1048577", 1, 1048576),
    ("--exec-memory", "63", 64, 1048576),
    ("--fetch-timeout", "99999999999", 1, 604800),
])
def test_numeric_options_are_range_checked(tmp_path, option, value, lo, hi):
    from conftest import flowfs_bin
    mnt = tmp_path / "m"
    mnt.mkdir()
    try:
        r = subprocess.run([str(flowfs_bin()), f"--db={tmp_path}/x.db",
                            "--engine-url=http://127.0.0.1:9/v1",
                            f"{option}={value}", str(mnt)],
                           capture_output=True, text=True, timeout=30)
    finally:
        if os.path.ismount(mnt):
            subprocess.run(["fusermount3", "-u", str(mnt)])
            pytest.fail(f"{option}={value} mounted")
    assert r.returncode == 2, r
    assert r.stderr == (f"flowfs: {option} takes a whole number from {lo} to {hi},"
                        f' not "{value}"\n')


def test_max_fetch_out_of_range_exits_2(tmp_path):
    from conftest import flowfs_bin
    mnt = tmp_path / "m"
    mnt.mkdir()
    r = subprocess.run([str(flowfs_bin()), f"--db={tmp_path}/x.db",
                        "--max-fetch=99999999999999999999G", str(mnt)],
                       capture_output=True, text=True, timeout=30)
    assert not os.path.ismount(mnt)
    assert (r.returncode, r.stderr) == (
        2, "flowfs: --max-fetch takes a size such as 500M or 2G\n")


@pytest.mark.parametrize("args,status,line", [
    # a value flowfs cannot take: a usage error, as a bad number is
    (["--engine-url=ftp://example.org/v1"], 2,
     "flowfs: --engine-url must be an http:// or https:// URL\n"),
    (["--fetch-low-speed=fast"], 2,
     "flowfs: --fetch-low-speed takes BYTES:SECONDS such as 1K:30"
     " (at most 1G and 86400), or 0\n"),
    (["--fetch-allow=not-an-address"], 2, None),
    # a file the option names is missing: not a usage error
    (["--engine-key-file=/nonexistent/key"], 1,
     "flowfs: cannot read the engine key file /nonexistent/key:"
     " No such file or directory\n"),
])
def test_bad_option_values_exit_2_and_missing_files_1(tmp_path, args, status, line):
    from conftest import flowfs_bin
    mnt = tmp_path / "m"
    mnt.mkdir()
    try:
        r = subprocess.run([str(flowfs_bin()), f"--db={tmp_path}/x.db", *args,
                            str(mnt)], capture_output=True, text=True, timeout=30)
    finally:
        if os.path.ismount(mnt):
            subprocess.run(["fusermount3", "-u", str(mnt)])
            pytest.fail(f"{args} mounted")
    assert r.returncode == status, r
    if line is None:
        assert r.stderr.startswith("flowfs: --fetch-allow") and \
            r.stderr.count("\n") == 1, r
    else:
        assert r.stderr == line


def test_many_retries_do_not_overflow_the_backoff(run_mount, skill_folder, engine):
    """--engine-retries >= 54 with a server that only answers 429 shifted
    1000 << 54 (UBSan: the daemon aborted)."""
    fs, s = report_session(run_mount, skill_folder, "--engine-retries=60")
    for _ in range(61):
        engine.fail(429, "slow down", retry_after=0)
    assert write_line(s / "ctl", "run\n") == 0
    assert wait_run(s) == "run: failed: the engine answered HTTP 429: slow down"
    assert len(engine.requests) == 61
    fs.check()


def refused_skill(run_mount, skill_folder, files, key, prop, why):
    """A skill whose input `key` is `prop`: binding it is refused, with
    `why` in status, and the request's URL for the key is never fetched
    into uploads/."""
    files.files["a.csv"] = b"x,y\n1,2\n"
    skill_folder.add("badkey", input={"type": "object",
                                      "properties": {key: prop}})
    fs = run_mount()
    s = fs.mnt / "s"
    os.mkdir(s)
    bound = put_json(s / "session.json", {"skill": "badkey"})
    put_json(s / "request.json", {"input": {key: f"{files.base}/file/a.csv"}})
    # a fetch, where one started, has ended
    wait_until(lambda: b"fetching" not in read_bytes(s / "status"), "no fetch going on")
    assert os.listdir(s / "uploads") == []
    assert bound == errno.EINVAL
    assert ("session.json", 'skill "badkey" did not load:'
            f' assets/input.schema.json: {why}') in status_of(s)[1]
    assert files.hits == {}


@pytest.mark.parametrize("key,why", [
    ("", "empty name"),
    (".", "'.' cannot be used as a name"),
    ("..", "'..' cannot be used as a name"),
    ("a/b", "it holds a '/'"),
])
def test_skill_input_keys_must_be_file_names(run_mount, skill_folder, files, key, why):
    """A skill whose input key is "", ".", ".." or "a/b" got files of those
    names into uploads/ (ls: EIO; ASan: an abort in tree_readdir)."""
    refused_skill(run_mount, skill_folder, files, key, {"type": "string"},
                  f'input key "{key}" cannot name a file in uploads/: {why}')


@pytest.mark.parametrize("key,ext,why", [
    ("k" * 250, ".toolong", "name is 258 bytes long (at most 255)"),
    ("k" * 250, "toolong", "name is 258 bytes long (at most 255)"),
    ("data", "csv/../../x", "it holds a '/'"),
])
def test_skill_input_key_and_extension_must_make_a_file_name(
        run_mount, skill_folder, files, key, ext, why):
    """A file input <key> with extensions is fetched into uploads/<key><ext>:
    a key of 250 bytes with a listed extension of 8 made a name of 258,
    one no folder may hold, and an extension could hold a '/' (uploads/
    then answered EIO)."""
    refused_skill(run_mount, skill_folder, files, key,
                  {"type": "string", "extensions": [ext]},
                  f'input key "{key}" with extension "{ext}" cannot name a'
                  f' file in uploads/: {why}')


def test_names_cannot_forge_status_lines(run_mount, skill_folder):
    """A file name with a line break forged a status line; one with a
    terminal's escape codes went into status as they were."""
    skill_folder.add("stats", input={"type": "object", "properties": {
        "csv_file": {"type": "string", "extensions": [".csv"]}},
        "required": ["csv_file"]})
    fs = run_mount()
    s = fs.mnt / "s"
    os.mkdir(s)
    bind_with(s, "stats")
    (s / "uploads" / "csv_file.x\nready").write_text("a")
    (s / "uploads" / "csv_file.\x1b[2J").write_text("b")
    text = read_bytes(s / "status").decode()
    assert "\x1b" not in text
    assert sorted(text.splitlines()) == [
        "missing required input files: csv_file",
        "uploads/csv_file.\\u001b[2J: extension .\\u001b[2J not allowed"
        " for csv_file (allowed: .csv)",
        "uploads/csv_file.x\\nready: extension .x\\nready not allowed"
        " for csv_file (allowed: .csv)",
    ], text
    doc = json.loads(read_bytes(s / "status.json"))
    assert len(doc["problems"]) == 3 and doc["ready"] is False


def test_write_artifact_refuses_names_flowfs_shows(run_mount, skill_folder, engine):
    """write_artifact("summary.json") answered "written" for a file the
    generated entry then hid."""
    skill_folder.add(
        "clash", skill_md="# Clash\n",
        output={"type": "object", "properties": {
            "s": {"x-type": "artifact", "x-filename": "summary.json"},
            "m": {"x-type": "artifact", "x-filename": ".manifest.json"},
            "r": {"x-type": "artifact", "x-filename": "response.md"},
            "ok": {"x-type": "artifact", "x-filename": "notes.md"}}})
    fs = run_mount()
    s = fs.mnt / "s"
    os.mkdir(s)
    bind_with(s, "clash")
    engine.reply(content="writing", tool_calls=[
        ("write_artifact", {"name": n, "content": "mine"})
        for n in ("summary.json", ".manifest.json", "response.md", "notes.md")])
    engine.reply(content="done")
    assert write_line(s / "ctl", "run\n") == 0
    assert wait_run(s) == "run: done"
    answers = [m["content"] for m in engine.requests[1]["messages"]
               if m["role"] == "tool"]
    assert answers == [
        f"refused: output/{n} is a name flowfs keeps for its own file;"
        " write the artifact under another name"
        for n in ("summary.json", ".manifest.json", "response.md")] + [
        "written: output/notes.md (4 bytes)"]
    assert read_bytes(s / "output" / "notes.md") == b"mine"
    assert read_bytes(s / "output" / ".manifest.json") != b"mine"
    assert read_bytes(s / "output" / "response.md") == b"done"
