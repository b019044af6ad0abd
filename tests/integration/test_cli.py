"""Starting flowfs: the database is opened/created/migrated before daemonizing;
problems seen before mounting give one `flowfs: ...` line and a non-zero exit."""

import contextlib
import hashlib
import os
import re
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import (daemon_env, flowfs_bin, readme_section,
                      sanitizer_report, _fusermount)


def run_flowfs(args, env_extra=None, timeout=30):
    # Files, not pipes: a daemonized child that kept our pipe open would make
    # us wait for EOF forever.
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        r = subprocess.run([str(flowfs_bin()), *args], stdin=subprocess.DEVNULL,
                           stdout=out, stderr=err, env=daemon_env(env_extra),
                           timeout=timeout)
        out.seek(0)
        err.seek(0)
        r.stdout = out.read()
        r.stderr = err.read()
    return r


def assert_one_line_error(r, mnt=None):
    err = r.stderr.decode(errors="replace")
    try:
        assert r.returncode != 0, f"expected failure; stderr: {err!r}"
        assert not sanitizer_report(err), err
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1, f"expected one line on stderr, got: {err!r}"
        assert lines[0].startswith("flowfs: "), lines[0]
        if mnt is not None:
            assert not os.path.ismount(mnt)
    finally:
        if mnt is not None and os.path.ismount(mnt):
            _fusermount(mnt, lazy=True)
    return lines[0]


def make_flowfs_db(flowfs_fixture_factory):
    fs = flowfs_fixture_factory()
    os.mkdir(fs.mnt / "keep")
    fs.stop()
    fs.check()
    return fs


def sha(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def wait_daemon_gone(mnt, timeout=15):
    """The backgrounded daemon has no handle here; watch /proc for it."""
    needle = os.fsencode(str(mnt))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = False
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if needle in argv and any(a.endswith(b"flowfs") for a in argv[:1]):
                alive = True
                break
        if not alive:
            return True
        time.sleep(0.05)
    return False


@contextlib.contextmanager
def background_mount(args, mnt):
    """flowfs started with `args` (without -f), mounted when it returns;
    after the block, unmounted and its daemon gone."""
    r = run_flowfs(args)
    try:
        assert r.returncode == 0, r.stderr.decode(errors="replace")
        yield r
    finally:
        if os.path.ismount(mnt):
            _fusermount(mnt)
    assert not os.path.ismount(mnt), "the unmount failed"
    assert wait_daemon_gone(mnt), "daemon still running after unmount"


def test_background_start_returns_when_mounted(tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    db = tmp_path / "db.sqlite"
    r = run_flowfs([f"--db={db}", str(mnt)])
    try:
        assert r.returncode == 0, r.stderr.decode(errors="replace")
        # Without -f it returns only once the mount is ready.
        assert os.path.ismount(mnt)
        assert ".flowfs" in os.listdir(mnt)
        os.mkdir(mnt / "bg")
        assert os.path.isdir(mnt / "bg" / "uploads")
    finally:
        if os.path.ismount(mnt):
            _fusermount(mnt)
    assert not os.path.ismount(mnt)
    assert wait_daemon_gone(mnt), "daemon still running after unmount"
    assert db.is_file()


def test_default_db_under_xdg_data_home(tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    xdg = tmp_path / "xdg" / "data"          # parents do not exist yet
    r = run_flowfs([str(mnt)], env_extra={"XDG_DATA_HOME": str(xdg)})
    try:
        assert r.returncode == 0, r.stderr.decode(errors="replace")
        assert os.path.ismount(mnt)
    finally:
        if os.path.ismount(mnt):
            _fusermount(mnt)
    assert not os.path.ismount(mnt), "the unmount failed"
    assert wait_daemon_gone(mnt), "daemon still running after unmount"
    assert (xdg / "flowfs" / "flowfs.db").is_file()


def test_default_db_under_home(tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home)}
    saved = os.environ.pop("XDG_DATA_HOME", None)
    try:
        r = run_flowfs([str(mnt)], env_extra=env)
    finally:
        if saved is not None:
            os.environ["XDG_DATA_HOME"] = saved
    try:
        assert r.returncode == 0, r.stderr.decode(errors="replace")
    finally:
        if os.path.ismount(mnt):
            _fusermount(mnt)
    assert not os.path.ismount(mnt), "the unmount failed"
    assert wait_daemon_gone(mnt), "daemon still running after unmount"
    assert (home / ".local" / "share" / "flowfs" / "flowfs.db").is_file()


def test_debug_flag_stays_in_foreground(tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    err = open(tmp_path / "stderr.txt", "wb")
    p = subprocess.Popen([str(flowfs_bin()), f"--db={tmp_path / 'db'}", "-d",
                          str(mnt)], stdin=subprocess.DEVNULL, stdout=err,
                         stderr=err, env=daemon_env())
    err.close()
    try:
        deadline = time.monotonic() + 10
        while not os.path.ismount(mnt) and time.monotonic() < deadline:
            assert p.poll() is None, (tmp_path / "stderr.txt").read_text()
            time.sleep(0.02)
        assert os.path.ismount(mnt)
        assert p.poll() is None, "-d must imply -f (stay in the foreground)"
        os.mkdir(mnt / "dbg")
    finally:
        if os.path.ismount(mnt):
            _fusermount(mnt)
        try:
            rc = p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = p.wait()
    text = (tmp_path / "stderr.txt").read_text(errors="replace")
    assert rc == 0, text[-5000:]
    assert not sanitizer_report(text), text[-20000:]


def test_missing_mountpoint(tmp_path):
    r = run_flowfs([f"--db={tmp_path / 'db'}", str(tmp_path / "nope")])
    assert_one_line_error(r)


def test_missing_mountpoint_foreground(tmp_path):
    r = run_flowfs([f"--db={tmp_path / 'db'}", "-f", str(tmp_path / "nope")])
    assert_one_line_error(r)


@pytest.mark.parametrize("where", ["parent_is_file", "proc"])
def test_unwritable_db_path(tmp_path, where):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if where == "parent_is_file":
        (tmp_path / "file").write_text("x")
        db = tmp_path / "file" / "flowfs.db"
    else:
        db = Path("/proc/flowfs-test.db")
    r = run_flowfs([f"--db={db}", str(mnt)])
    assert_one_line_error(r, mnt)


def test_newer_schema_refused(make_flowfs, tmp_path):
    fs = make_flowfs_db(make_flowfs)
    con = sqlite3.connect(fs.db)
    con.execute("PRAGMA user_version = 999")
    con.commit()
    con.close()
    before = sha(fs.db)
    r = run_flowfs([f"--db={fs.db}", str(fs.mnt)])
    assert_one_line_error(r, fs.mnt)
    assert sha(fs.db) == before
    con = sqlite3.connect(fs.db)
    assert con.execute("PRAGMA user_version").fetchone()[0] == 999
    con.close()


def test_foreign_sqlite_db_refused(tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    db = tmp_path / "other.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE accounts(id INTEGER PRIMARY KEY, owner TEXT)")
    con.execute("INSERT INTO accounts(owner) VALUES ('alice')")
    con.commit()
    schema = con.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
    con.close()
    r = run_flowfs([f"--db={db}", str(mnt)])
    assert_one_line_error(r, mnt)
    con = sqlite3.connect(db)
    try:
        assert con.execute(
            "SELECT type, name, sql FROM sqlite_master").fetchall() == schema
        assert con.execute("PRAGMA user_version").fetchone()[0] == 0
        assert con.execute("SELECT owner FROM accounts").fetchall() == [("alice",)]
    finally:
        con.close()


def test_random_bytes_file_refused(tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    db = tmp_path / "random.db"
    db.write_bytes(os.urandom(64 * 1024))
    before = sha(db)
    r = run_flowfs([f"--db={db}", str(mnt)])
    assert_one_line_error(r, mnt)
    assert sha(db) == before


def test_existing_db_reopens(make_flowfs):
    fs = make_flowfs_db(make_flowfs)
    fs.start()
    assert "keep" in os.listdir(fs.mnt)


def test_no_mountpoint_argument_fails(tmp_path):
    r = run_flowfs([f"--db={tmp_path / 'db'}"])
    err = r.stderr.decode(errors="replace")
    assert r.returncode != 0
    assert not sanitizer_report(err), err


def test_database_before_the_mountpoint(tmp_path):
    """`flowfs DB MOUNTPOINT`: the form mount(8) and mount.fuse3 use
    (mount -t fuse.flowfs DB MNT runs `flowfs DB MNT -o OPTS`)."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    db = tmp_path / "given.db"
    with background_mount([str(db), str(mnt), "-o", "rw,nosuid,nodev"], mnt):
        os.mkdir(mnt / "s")
        assert os.path.isdir(mnt / "s" / "uploads")
    con = sqlite3.connect(db)
    try:
        assert con.execute("SELECT count(*) FROM sessions").fetchone()[0] == 1
    finally:
        con.close()


def test_database_as_a_mount_option(tmp_path):
    """-o db=FILE, for an /etc/fstab line or a systemd mount unit."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    db = tmp_path / "opt.db"
    with background_mount([str(mnt), "-o", f"nosuid,db={db}"], mnt):
        assert ".flowfs" in os.listdir(mnt)
    assert db.is_file()


@pytest.mark.parametrize("args", [
    ["--db={tmp}/a.db", "{tmp}/b.db", "{tmp}/mnt"],
    ["{tmp}/b.db", "{tmp}/mnt", "-o", "db={tmp}/a.db"],
    ["{tmp}/a.db", "{tmp}/b.db", "{tmp}/mnt"],
    ["{tmp}/mnt", "-o", "nosuch_option"],
    ["--no-such-option", "{tmp}/mnt"],
])
def test_bad_command_lines_create_nothing(tmp_path, args):
    """A command line flowfs cannot take: one line in its words, and
    nothing on disk (not the database, not its folders)."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    args = [a.replace("{tmp}", str(tmp_path / "new" / "dirs")) for a in args]
    args = [a if "mnt" not in a else str(mnt) for a in args]
    r = run_flowfs(args)
    line = assert_one_line_error(r, mnt)
    assert "fuse:" not in line, line
    assert not (tmp_path / "new").exists(), list((tmp_path / "new").rglob("*"))


def test_unknown_option_is_named(tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = run_flowfs([f"--db={tmp_path / 'db'}", str(mnt), "-o", "colour=red"])
    line = assert_one_line_error(r, mnt)
    assert line == "flowfs: unknown option -o colour=red (see flowfs --help)", line
    assert not (tmp_path / "db").exists()


@pytest.mark.parametrize("option,line", [
    ("--executor=pbs", 'flowfs: --executor takes local or slurm, not "pbs"'),
    ("--jobs=0", "flowfs: --jobs takes a whole number from 1 to 4096, "
     'not "0"'),
])
def test_bad_executor_options(tmp_path, option, line):
    """Where the job graph runs: a bad value is one line, nothing made
    (neither the database nor the work folder it names)."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    work = tmp_path / "work"
    r = run_flowfs([f"--db={tmp_path / 'db'}", f"--work-dir={work}", option,
                    str(mnt)])
    assert r.returncode == 2
    assert assert_one_line_error(r, mnt) == line
    assert not (tmp_path / "db").exists() and not work.exists()


def test_work_dir_inside_the_mount_refused(tmp_path):
    """A job reading through the mount would wait on the daemon that
    waits on it: the work folder goes outside."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = run_flowfs([f"--db={tmp_path / 'db'}", f"--work-dir={mnt}/jobs",
                    str(mnt)])
    line = assert_one_line_error(r, mnt)
    assert line.startswith("flowfs: the work folder ") and \
        line.endswith(" is inside the mount point: jobs must run outside it"
                      " (--work-dir)"), line
    # refused before anything was made: the mount point is as it was
    assert not (tmp_path / "db").exists() and os.listdir(mnt) == []


def test_non_empty_folder_refused_unless_nonempty(tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    (mnt / "mine.txt").write_text("hidden if mounted over")
    db = tmp_path / "db"
    r = run_flowfs([f"--db={db}", str(mnt)])
    line = assert_one_line_error(r, mnt)
    assert "not empty" in line and "-o nonempty" in line, line
    assert not db.exists()
    with background_mount([f"--db={db}", "-o", "nonempty", str(mnt)], mnt):
        assert os.path.ismount(mnt)
        assert "mine.txt" not in os.listdir(mnt)
    assert (mnt / "mine.txt").read_text() == "hidden if mounted over"


def test_mounted_point_refused(make_flowfs, tmp_path):
    """A second flowfs on a mounted point would stack a second daemon on
    the first; it is refused, and the first goes on."""
    fs = make_flowfs()
    os.mkdir(fs.mnt / "s")
    other = tmp_path / "other.db"
    r = run_flowfs([f"--db={other}", str(fs.mnt)])
    line = assert_one_line_error(r)
    assert "already mounted" in line and "fusermount3 -u" in line, line
    assert not other.exists()
    assert os.path.isdir(fs.mnt / "s" / "uploads")
    assert sum(1 for ln in open("/proc/self/mountinfo")
               if f" {fs.mnt} " in ln) == 1


def test_dead_mount_refused_with_the_command_to_clear_it(tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    db = tmp_path / "db"
    p = subprocess.Popen([str(flowfs_bin()), f"--db={db}", "-f", str(mnt)],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, env=daemon_env())
    try:
        deadline = time.monotonic() + 30
        while not os.path.ismount(mnt):
            assert p.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        p.kill()
        p.wait()
        r = run_flowfs([f"--db={db}", str(mnt)])
        line = assert_one_line_error(r)
        assert f"clear it with: fusermount3 -u {mnt}" in line, line
        assert _fusermount(mnt).returncode == 0
        assert not os.path.ismount(mnt)
        r = run_flowfs([f"--db={db}", str(mnt)])
        assert r.returncode == 0, r.stderr.decode(errors="replace")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        if os.path.ismount(mnt):
            _fusermount(mnt, lazy=True)
    assert not os.path.ismount(mnt)
    assert wait_daemon_gone(mnt)


@pytest.mark.parametrize("kind", ["missing", "file", "one_skill"])
def test_bad_skills_folder(tmp_path, kind):
    """--skills names a folder of skill packages: a missing one was taken
    without a word, and a package given itself showed its subfolders as
    broken skills."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    skills = tmp_path / "skills"
    if kind == "file":
        skills.write_text("not a folder")
    elif kind == "one_skill":
        (skills / "assets").mkdir(parents=True)
        (skills / "SKILL.md").write_text("---\nname: x\n---\n")
    r = run_flowfs([f"--db={tmp_path / 'db'}", f"--skills={skills}", str(mnt)])
    line = assert_one_line_error(r, mnt)
    assert str(skills) in line, line
    if kind == "one_skill":
        assert "is a skill package itself" in line, line
    assert not (tmp_path / "db").exists()


def test_database_on_a_read_only_folder_says_so(tmp_path):
    """What is wrong is writing: flowfs writes the database and SQLite its
    -wal and -shm files beside it (it said "cannot read")."""
    if os.geteuid() == 0:
        pytest.skip("root writes any folder (the root pass has a read-only mount)")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    ro = tmp_path / "ro"
    ro.mkdir()
    r = run_flowfs([f"--db={ro / 'db'}", str(mnt)])
    assert r.returncode == 0, r.stderr
    _fusermount(mnt)
    assert wait_daemon_gone(mnt)
    ro.chmod(0o555)
    try:
        r = run_flowfs([f"--db={ro / 'db'}", str(mnt)])
        line = assert_one_line_error(r, mnt)
        assert line.startswith(f"flowfs: cannot write in {ro}"), line
        assert "Permission denied" in line, line
    finally:
        ro.chmod(0o755)


@pytest.mark.root      # a read-only file system: a mount
def test_database_on_a_read_only_file_system_says_so(tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    ro = tmp_path / "ro"
    ro.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(ro)],
                   check=True)
    try:
        r = run_flowfs([f"--db={ro / 'db'}", str(mnt)])
        assert r.returncode == 0, r.stderr
        _fusermount(mnt)
        assert wait_daemon_gone(mnt)
        subprocess.run(["mount", "-o", "remount,ro", str(ro)], check=True)
        for name in ("db", "new.db"):
            r = run_flowfs([f"--db={ro / name}", str(mnt)])
            line = assert_one_line_error(r, mnt)
            assert line == (f"flowfs: cannot write {ro / name}: its file"
                            " system is read-only (flowfs writes the"
                            " database, and SQLite its -wal and -shm files"
                            " beside it)"), line
    finally:
        subprocess.run(["umount", str(ro)], check=True)
    assert not os.path.ismount(ro)


def test_the_readme_options_table_names_every_option():
    """Issue 29: the README's table of options lacked --executor,
    --work-dir, --jobs and --container, which --help and the man page
    list: every option --help names has a row of its own there."""
    helptext = subprocess.run([str(flowfs_bin()), "--help"],
                              capture_output=True, text=True,
                              env=daemon_env(), timeout=60).stdout
    options = set(re.findall(r"(--[a-z-]+)", helptext))
    assert len(options) > 15, helptext
    rows = [line for line in
            readme_section("Running the daemon yourself").splitlines()
            if line.startswith("| `")]
    named = set()
    for row in rows:
        named |= set(re.findall(r"`(--[a-z-]+)", row.split(" | ")[0]))
    missing = sorted(options - named)
    assert not missing, f"--help has options the README's table lacks: {missing}"
