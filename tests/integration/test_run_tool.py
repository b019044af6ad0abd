"""The README's first command, `tools/run [MOUNTPOINT]`: it builds flowfs in
release mode (tools/test has built it already, in the same folder), mounts
it on a new database with a demo session, and says so; run again, it says
flowfs is already mounted.  HOME and the XDG folders point into tmp_path so
the user's own database is never touched."""
import json
import os
import sqlite3
import subprocess

import pytest

from conftest import REPO, _fusermount, flowfs_bin, project_version, read_bytes, wait_until


def unmount(mnt):
    """fusermount3 -u, again while busy (the daemon's refresher may be
    touching a name in it at that moment), for up to 30 s."""
    wait_until(lambda: _fusermount(mnt).returncode == 0 or
               not os.path.ismount(mnt), f"{mnt} unmounted")


@pytest.fixture
def run_env(tmp_path):
    env = dict(os.environ, HOME=str(tmp_path / "home"),
               XDG_DATA_HOME=str(tmp_path / "data"),
               XDG_CONFIG_HOME=str(tmp_path / "config"))
    (tmp_path / "home").mkdir()
    return env


def tools_run(mnt, env, *args):
    return subprocess.run([str(REPO / "tools" / "run"), str(mnt), *args], env=env,
                          capture_output=True, text=True, timeout=900)


@pytest.mark.root      # tools/run builds in the checkout, which is root's in CI
def test_tools_run_mounts_a_demo_session(tmp_path, run_env):
    mnt = tmp_path / "mnt"
    try:
        r = tools_run(mnt, run_env)
        assert r.returncode == 0, r.stdout + r.stderr
        assert os.path.ismount(mnt)
        # the build is up to date (tools/test made it): not a word of it
        assert "run: " not in r.stderr, r.stderr
        db = tmp_path / "data" / "flowfs" / "flowfs.db"
        assert f"flowfs is mounted at {mnt}" in r.stdout
        assert f"Database: {db} (new; created the demo session)" in r.stdout
        assert f"fusermount3 -u {mnt}" in r.stdout
        assert db.is_file()
        assert sorted(os.listdir(mnt)) == [".flowfs", "demo"]
        doc = json.loads(read_bytes(mnt / "demo" / "session.json"))
        assert doc["title"] == ("Demo session: try ls, cat session.json, cp a file"
                                " into uploads/")
        assert read_bytes(mnt / "demo" / "status") == b"ready\n"
        # the daemon is the release build tools/test made: same version
        # (meson.build's) and database schema (the one it created) as the
        # build under test says of itself
        version = read_bytes(mnt / ".flowfs" / "version").decode()
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            schema = con.execute("PRAGMA user_version").fetchone()[0]
        finally:
            con.close()
        assert version == (f"flowfs {project_version()}\n"
                           f"database schema {schema}\n")
        v = subprocess.run([str(flowfs_bin()), "-V"], capture_output=True,
                           text=True, timeout=60)
        assert v.returncode == 0, v.stderr
        assert v.stdout == f"flowfs {project_version()} (database schema {schema})\n"
        # again: nothing new, and it says where it is mounted
        r = tools_run(mnt, run_env)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == (f"flowfs is already mounted at {mnt}"
                                    f" (unmount with: fusermount3 -u {mnt})")
        assert sorted(os.listdir(mnt)) == [".flowfs", "demo"]
        # with options, which a mount going on cannot take: refused, not
        # dropped without a word
        skills = tmp_path / "skills"
        skills.mkdir()
        r = tools_run(mnt, run_env, f"--skills={skills}")
        assert r.returncode == 1, r.stdout + r.stderr
        assert r.stderr.strip() == (
            f"run: flowfs is already mounted at {mnt}, without"
            f" --skills={skills}: unmount it first (fusermount3 -u {mnt}),"
            " then run this again")
        assert os.path.ismount(mnt)
    finally:
        if os.path.ismount(mnt):
            unmount(mnt)
    assert not os.path.ismount(mnt)


def test_tools_run_refuses_an_option_first(tmp_path, run_env):
    r = subprocess.run([str(REPO / "tools" / "run"), "--skills=/x"], env=run_env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr.startswith("usage: tools/run [MOUNTPOINT [FLOWFS-OPTION...]]")


def test_help_of_the_two_commands(run_env):
    """--help prints how to use them and does nothing else (tools/test
    --help started the whole run)."""
    for tool, first in (("run", "usage: tools/run [MOUNTPOINT"),
                        ("test", "usage: tools/test")):
        r = subprocess.run([str(REPO / "tools" / tool), "--help"], env=run_env,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith(first), r.stdout
        assert r.stderr == ""
    r = subprocess.run([str(REPO / "tools" / "test"), "--bogus"], env=run_env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr.startswith("usage: tools/test")


def test_tools_run_as_an_ordinary_user(tmp_path, run_env):
    """The README: "run it as yourself ... (`tools/run`)".  In the user pass
    this runs as flowfs-test, who cannot write the checkout: tools/run
    builds in a copy of its files (as a user's own clone would), mounts,
    and the user owns the demo session and can remove it whole."""
    repo = tmp_path / "repo"
    repo.mkdir()
    files = subprocess.run(
        ["git", "-c", "safe.directory=*", "-C", str(REPO), "ls-files", "-z",
         "--cached", "--others", "--exclude-standard"],
        capture_output=True, check=True, timeout=60).stdout
    subprocess.run(["tar", "--null", "-T", "-", "-c", "-f", str(tmp_path / "src.tar")],
                   input=files, cwd=REPO, check=True, timeout=120)
    subprocess.run(["tar", "x", "-f", str(tmp_path / "src.tar"), "-C", str(repo)],
                   check=True, timeout=120)
    mnt = tmp_path / "mnt"
    try:
        r = subprocess.run([str(repo / "tools" / "run"), str(mnt)], env=run_env,
                           capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, r.stdout + r.stderr
        assert f"flowfs is mounted at {mnt}" in r.stdout
        demo = mnt / "demo"
        st = os.stat(demo)
        assert (st.st_uid, st.st_gid) == (os.getuid(), os.getgid())
        assert read_bytes(demo / "status") == b"ready\n"
        r = subprocess.run(["rm", "-rf", str(demo)], capture_output=True,
                           text=True, timeout=60)
        assert (r.returncode, r.stderr) == (0, "")
        assert sorted(os.listdir(mnt)) == [".flowfs"]
    finally:
        if os.path.ismount(mnt):
            unmount(mnt)
    assert not os.path.ismount(mnt)


@pytest.mark.root      # tools/run builds in the checkout, which is root's in CI
def test_tools_run_says_what_it_builds(tmp_path, run_env):
    """The first tools/run was silent for about a minute while it built:
    now a build says what it does, a line a step, on stderr."""
    mnt = tmp_path / "mnt"
    source = REPO / "fs" / "log.c"
    st = os.stat(source)
    try:
        # a source newer than the build: ninja has work to do
        os.utime(source, None)
        r = tools_run(mnt, run_env)
        assert r.returncode == 0, r.stdout + r.stderr
        lines = [l for l in r.stderr.splitlines() if l.startswith("run: ")]
        assert lines[0].startswith("run: configuring a release build in "), lines
        assert lines[1].startswith("run: compiling flowfs ("), lines
        assert " steps, ninja" in lines[1], lines
        assert lines[2].startswith("run: built in "), lines
    finally:
        os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns))
        if os.path.ismount(mnt):
            unmount(mnt)
    assert not os.path.ismount(mnt)
