"""Issue 3: the skill registry, .flowfs/skills/, binding a skill in
session.json, the read-only skill/ view, rebinding, and the v1 → v2
database migration.  Plain file I/O through the mounted filesystem only."""

import errno
import json
import os
import shutil
import subprocess

import pytest

from conftest import (REPO, SESSION_ENTRIES, SkillFolder, bind, dumps,
                      errname, expect, oserror, put, put_json, read_bytes,
                      readonly_errno, session_doc, status_of, tree_of,
                      write_bytes)

REAL_IDS = ["demo-bad-input", "demo-bible-verse", "demo-pandas-stats",
            "demo-prime-number"]


def builtin_ids():
    """Skills shipped in the source tree (core/skills/), shown by every mount."""
    d = REPO / "core" / "skills"
    return {p.name for p in d.iterdir() if p.is_dir()} if d.is_dir() else set()


def create(path):
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o644))


def open_write(path):
    os.close(os.open(path, os.O_WRONLY))


def doc(session):
    return json.loads(read_bytes(session / "session.json"))


def shown(session, title="", skill=None, engine=None):
    d = doc(session)
    return dumps(session_doc(d["id"], d["created"], title, skill, engine)).encode()


def simple_skill(folder, sid, **kw):
    kw.setdefault("input", {"type": "object", "properties": {
        "data": {"type": "string"}}, "required": ["data"]})
    return folder.add(sid, **kw)


# -- .flowfs/skills/ ----------------------------------------------------------

def test_real_skills_listed_with_their_files(real_mount, real_skills):
    skills = real_mount.mnt / ".flowfs" / "skills"
    assert sorted(os.listdir(skills)) == sorted(set(REAL_IDS) | builtin_ids())
    for sid in REAL_IDS:
        on_disk = tree_of(real_skills / sid)
        assert tree_of(skills / sid) == on_disk, sid
        assert "ERROR" not in os.listdir(skills / sid)


def test_skill_views_are_read_only(real_mount, real_skills):
    d = real_mount.mnt / ".flowfs" / "skills" / "demo-pandas-stats"
    expect(readonly_errno(), open_write, d / "SKILL.md")
    expect(readonly_errno(), open_write, d / "assets" / "runner.json")
    expect(readonly_errno(), create, d / "new.txt")
    expect(readonly_errno(), os.mkdir, d / "newdir")
    expect(readonly_errno(), os.mkdir, d.parent / "my-skill")
    expect(readonly_errno(), os.truncate, d / "SKILL.md", 0)
    assert read_bytes(d / "SKILL.md") == \
        read_bytes(real_skills / "demo-pandas-stats" / "SKILL.md")


def test_subfolders_and_binary_files_shown(skill_folder, mount_skills):
    blob = bytes(range(256)) * 9
    simple_skill(skill_folder, "tooling", files={
        "scripts/analyze.py": "print('hi')\n",
        "assets/data/table.bin": blob,
        "references/deep/er/notes.md": "# notes\n"})
    fs = mount_skills()
    shown_tree = tree_of(fs.mnt / ".flowfs" / "skills" / "tooling")
    assert shown_tree == tree_of(skill_folder.root / "tooling")
    assert shown_tree["assets/data/table.bin"] == blob
    assert shown_tree["references/deep/er"] is None


SCHEMA_OK = {"type": "object", "properties": {"q": {"type": "string"}}}

# (what to build, the exact ERROR text or a regex for it)
BROKEN = {
    "no-skill-md": (dict(skill_md=None), "SKILL.md is missing\n"),
    "bad-json": (dict(runner=b'{\n  "id": "bad-json",\n  "engines": [gemini]\n}\n'),
                 r"assets/runner\.json: line 3, column \d+: .+\n"),
    "no-engines": (dict(engines=()),
                   "runner.json engines must be a non-empty list of engine names\n"),
    # issue3.md gives no text for this one; any runner.json engines message.
    "engine-not-string": (dict(runner_extra={"engines": ["gemini", 3]}),
                          r"runner\.json engines\S* must .+\n"),
    "missing-schema": (dict(runner_extra={"schemas": {"input": "assets/x.json"}}),
                       "runner.json schemas.input: assets/x.json does not exist\n"),
    "wrong-id": (dict(runner_extra={"id": "x"}),
                 'runner.json id "x" does not match the folder name "wrong-id"\n'),
    "bad-schema": (dict(input={"type": "object",
                               "properties": {"q": {"type": 7}}}),
                   r"assets/input\.schema\.json: .*\S.*\n"),
    "schema-not-json": (dict(parameter=b'{"type": "object",\n'),
                        r"assets/parameter\.schema\.json: line \d+, column \d+: .+\n"),
}


@pytest.mark.parametrize("sid", [
    sid for sid in sorted(BROKEN)])
def test_broken_skill_shows_only_error(skill_folder, mount_skills, sid):
    build, expected = BROKEN[sid]
    skill_folder.add(sid, **build)
    simple_skill(skill_folder, "fine")
    fs = mount_skills()
    skills = fs.mnt / ".flowfs" / "skills"
    assert sorted(os.listdir(skills)) == sorted({sid, "fine"} | builtin_ids())
    assert os.listdir(skills / sid) == ["ERROR"]
    text = read_bytes(skills / sid / "ERROR").decode()
    assert os.stat(skills / sid / "ERROR").st_size == len(text.encode())
    if expected.endswith("\\n"):
        import re
        assert re.fullmatch(expected.replace("\\n", "\n"), text), text
    else:
        assert text == expected
    assert text.count("\n") == 1
    assert "ERROR" not in os.listdir(skills / "fine")


def test_missing_runner_json_is_an_error(skill_folder, mount_skills):
    d = simple_skill(skill_folder, "norunner")
    (d / "assets" / "runner.json").unlink()
    fs = mount_skills()
    err = fs.mnt / ".flowfs" / "skills" / "norunner" / "ERROR"
    text = read_bytes(err).decode()
    assert "runner.json" in text and text.endswith("\n"), text


def test_search_order_first_folder_wins(tmp_path, skill_folder, mount_skills,
                                        isolated_config):
    second = SkillFolder(tmp_path / "second")
    xdg = SkillFolder(isolated_config / "flowfs" / "skills")
    simple_skill(skill_folder, "dup", skill_md="first\n")
    simple_skill(second, "dup", skill_md="second\n")
    simple_skill(xdg, "dup", skill_md="xdg\n")
    simple_skill(second, "only-second")
    simple_skill(xdg, "only-xdg", skill_md="from config\n")
    simple_skill(xdg, "also-second", skill_md="xdg loses\n")
    simple_skill(second, "also-second", skill_md="second wins\n")
    # A broken package found first still hides a good one found later.
    skill_folder.add("shadow", skill_md=None)
    simple_skill(second, "shadow")
    fs = mount_skills(second.root)
    skills = fs.mnt / ".flowfs" / "skills"
    assert sorted(os.listdir(skills)) == sorted(
        {"dup", "only-second", "only-xdg", "also-second", "shadow"} | builtin_ids())
    assert read_bytes(skills / "dup" / "SKILL.md") == b"first\n"
    assert read_bytes(skills / "only-xdg" / "SKILL.md") == b"from config\n"
    assert read_bytes(skills / "also-second" / "SKILL.md") == b"second wins\n"
    assert os.listdir(skills / "shadow") == ["ERROR"]


def test_default_config_folder_is_under_home(tmp_path, make_flowfs, monkeypatch):
    home = tmp_path / "home"
    SkillFolder(home / ".config" / "flowfs" / "skills").add(
        "homeskill", input=SCHEMA_OK)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    fs = make_flowfs()
    assert "homeskill" in os.listdir(fs.mnt / ".flowfs" / "skills")


def test_listing_rescans(skill_folder, mount_skills):
    simple_skill(skill_folder, "first")
    fs = mount_skills()
    skills = fs.mnt / ".flowfs" / "skills"
    assert "later" not in os.listdir(skills)
    simple_skill(skill_folder, "later", skill_md="late\n")
    assert "later" in os.listdir(skills)
    assert read_bytes(skills / "later" / "SKILL.md") == b"late\n"
    # A broken skill that is fixed loads on the next listing...
    (skill_folder.root / "later" / "SKILL.md").unlink()
    assert "later" in os.listdir(skills)
    assert os.listdir(skills / "later") == ["ERROR"]
    (skill_folder.root / "later" / "SKILL.md").write_text("fixed\n")
    os.listdir(skills)
    assert read_bytes(skills / "later" / "SKILL.md") == b"fixed\n"
    # ...and a removed one disappears.
    shutil.rmtree(skill_folder.root / "later")
    assert "later" not in os.listdir(skills)


def test_binding_an_unlisted_new_skill_rescans(skill_folder, mount_skills):
    fs = mount_skills()
    os.mkdir(fs.mnt / "s")
    simple_skill(skill_folder, "brand-new", engines=("iflow",))
    assert bind(fs.mnt / "s", "brand-new") == 0
    assert read_bytes(fs.mnt / "s" / "session.json") == shown(
        fs.mnt / "s", skill="brand-new", engine="iflow")


# -- binding in session.json -------------------------------------------------

def test_bind_sets_the_first_engine(real_mount):
    s = real_mount.mnt / "s"
    os.mkdir(s)
    assert put(s / "session.json", '{"skill": "demo-pandas-stats"}') == 0
    assert read_bytes(s / "session.json") == shown(
        s, skill="demo-pandas-stats", engine="gemini")
    assert sorted(os.listdir(s)) == sorted(SESSION_ENTRIES | {"skill", "prompt.txt"})


def test_bind_by_editing_the_whole_document(real_mount):
    """What `jq '.skill = "x"'` or an editor does: the whole shown document
    comes back with only "skill" (and "title") changed, engine still null."""
    s = real_mount.mnt / "s"
    os.mkdir(s)
    d = doc(s)
    d["skill"] = "demo-prime-number"
    d["title"] = "primes ✓"
    assert put(s / "session.json", dumps(d)) == 0
    assert read_bytes(s / "session.json") == shown(
        s, "primes ✓", "demo-prime-number", "gemini")


def test_bind_with_an_engine(real_mount):
    s = real_mount.mnt / "s"
    os.mkdir(s)
    assert bind(s, "demo-pandas-stats", engine="iflow", title="t") == 0
    assert read_bytes(s / "session.json") == shown(
        s, "t", "demo-pandas-stats", "iflow")


def test_engine_kept_for_the_same_skill_and_reset_for_another(real_mount):
    s = real_mount.mnt / "s"
    os.mkdir(s)
    assert bind(s, "demo-pandas-stats", engine="codex") == 0
    assert bind(s, "demo-pandas-stats", title="renamed") == 0
    assert read_bytes(s / "session.json") == shown(
        s, "renamed", "demo-pandas-stats", "codex")
    assert bind(s, "demo-prime-number", title="renamed") == 0
    assert read_bytes(s / "session.json") == shown(
        s, "renamed", "demo-prime-number", "gemini")


def refusal_cases():
    return {
        "unknown": ({"skill": "no-such-skill"},
                    'unknown skill "no-such-skill" (see .flowfs/skills/)'),
        "engine": ({"skill": "demo-pandas-stats", "engine": "claude"},
                   'engine "claude" is not one of skill demo-pandas-stats\'s '
                   'engines (gemini, codex, iflow)'),
        "engine-no-skill": ({"engine": "gemini"}, None),
        "skill-number": ({"skill": 3}, None),
        "skill-list": ({"skill": ["demo-pandas-stats"]}, None),
        "engine-number": ({"skill": "demo-pandas-stats", "engine": 1}, None),
    }


@pytest.mark.parametrize("case", sorted(refusal_cases()))
def test_bind_refusals(real_mount, case):
    body, message = refusal_cases()[case]
    s = real_mount.mnt / "s"
    os.mkdir(s)
    assert bind(s, "demo-bible-verse", engine="codex", title="keep me") == 0
    before = read_bytes(s / "session.json")
    _, log_before = status_of(s)
    got = put_json(s / "session.json", {"title": "keep me", **body})
    assert got == errno.EINVAL, errname(got)
    assert read_bytes(s / "session.json") == before
    problems, log = status_of(s)
    assert len(log) == len(log_before) + 1
    path, msg = log[-1]
    assert path == "session.json"
    if message is not None:
        assert msg == message
    assert sorted(os.listdir(s / "skill")) == ["SKILL.md", "assets"]


def test_engine_without_skill_refused_on_unbound_session(real_mount):
    s = real_mount.mnt / "s"
    os.mkdir(s)
    before = read_bytes(s / "session.json")
    assert put_json(s / "session.json", {"skill": None, "engine": "gemini"}) \
        == errno.EINVAL
    assert read_bytes(s / "session.json") == before
    assert status_of(s)[1][-1][0] == "session.json"


def test_bind_refusal_with_explicit_close_then_nothing_lost(real_mount):
    """The error comes from close(); a Python file object shows it too."""
    s = real_mount.mnt / "s"
    os.mkdir(s)
    before = read_bytes(s / "session.json")
    with pytest.raises(OSError) as e:
        with open(s / "session.json", "w") as f:
            f.write('{"skill": "nope"}')
    assert e.value.errno == errno.EINVAL
    assert read_bytes(s / "session.json") == before
    assert status_of(s)[1] == [
        ("session.json", 'unknown skill "nope" (see .flowfs/skills/)')]


def test_bind_broken_skill_refused_with_its_error(skill_folder, mount_skills):
    skill_folder.add("broken", skill_md=None)
    fs = mount_skills()
    s = fs.mnt / "s"
    os.mkdir(s)
    assert bind(s, "broken") == errno.EINVAL
    assert doc(s)["skill"] is None
    assert status_of(s)[1] == [
        ("session.json", 'skill "broken" did not load: SKILL.md is missing')]


def test_unbind(real_mount):
    s = real_mount.mnt / "s"
    os.mkdir(s)
    assert bind(s, "demo-bible-verse", engine="iflow", title="x") == 0
    assert os.path.exists(s / "output" / ".manifest.json")
    assert bind(s, None, title="x") == 0
    assert read_bytes(s / "session.json") == shown(s, "x")
    assert sorted(os.listdir(s)) == sorted(SESSION_ENTRIES)
    for gone in ("prompt.txt", "skill", "output/.manifest.json"):
        expect(errno.ENOENT, os.stat, s / gone)
    assert read_bytes(s / "input.json") == b"{}"
    assert read_bytes(s / "parameter.json") == b"{}"
    assert status_of(s) == (["ready"], [])


def test_binding_survives_remount(real_mount):
    s = real_mount.mnt / "s"
    os.mkdir(s)
    assert bind(s, "demo-pandas-stats", engine="codex", title="kept") == 0
    expected = read_bytes(s / "session.json")
    real_mount.remount()
    assert read_bytes(s / "session.json") == expected
    assert sorted(os.listdir(s / "skill")) == ["SKILL.md", "assets"]


# -- skill/ ------------------------------------------------------------------

def test_skill_view_matches_the_registry(real_mount, real_skills):
    s = real_mount.mnt / "s"
    os.mkdir(s)
    expect(errno.ENOENT, os.stat, s / "skill")
    for sid in REAL_IDS:
        assert bind(s, sid) == 0
        assert tree_of(s / "skill") == tree_of(real_skills / sid), sid
        assert tree_of(s / "skill") == tree_of(
            real_mount.mnt / ".flowfs" / "skills" / sid)


def test_skill_is_a_link_to_the_bound_skill(real_mount, real_skills):
    """skill is a link to the skill under .flowfs/skills/: a copy of the
    session holds the link, not the package; the package is read-only,
    and removing the link (rm -rf) changes nothing."""
    s = real_mount.mnt / "s"
    os.mkdir(s)
    expect(errno.ENOENT, os.lstat, s / "skill")
    assert bind(s, "demo-prime-number") == 0
    sk = s / "skill"
    assert os.readlink(sk) == "../.flowfs/skills/demo-prime-number"
    assert os.lstat(sk).st_size == len("../.flowfs/skills/demo-prime-number")
    assert tree_of(sk) == tree_of(real_skills / "demo-prime-number")
    expect(readonly_errno(), open_write, sk / "SKILL.md")
    expect(readonly_errno(), create, sk / "extra.txt")
    expect(readonly_errno(), os.mkdir, sk / "extra")
    assert oserror(os.unlink, sk) == 0
    r = subprocess.run(["readlink", str(sk)], capture_output=True, text=True)
    assert r.stdout == "../.flowfs/skills/demo-prime-number\n"
    assert bind(s, None) == 0
    r = subprocess.run(["test", "-L", str(sk)])
    assert r.returncode == 1


def test_rm_rf_session_with_bound_skill(real_mount):
    s = real_mount.mnt / "s"
    os.mkdir(s)
    assert bind(s, "demo-pandas-stats") == 0
    write_bytes(s / "uploads" / "csv_file.csv", b"a,b\n1,2\n")
    write_bytes(s / "output" / "result.txt", b"done\n")
    shutil.rmtree(s)
    assert not os.path.exists(s)
    assert (real_mount.mnt / ".flowfs" / "skills" / "demo-pandas-stats").is_dir()


def test_rebinding_changes_the_view(skill_folder, mount_skills):
    simple_skill(skill_folder, "one", skill_md="one\n",
                 files={"scripts/one.py": "1\n"})
    simple_skill(skill_folder, "two", skill_md="two\n")
    fs = mount_skills()
    s = fs.mnt / "s"
    os.mkdir(s)
    assert bind(s, "one") == 0
    assert read_bytes(s / "skill" / "SKILL.md") == b"one\n"
    assert read_bytes(s / "skill" / "scripts" / "one.py") == b"1\n"
    assert bind(s, "two") == 0
    assert read_bytes(s / "skill" / "SKILL.md") == b"two\n"
    assert sorted(os.listdir(s / "skill")) == ["SKILL.md", "assets"]
    expect(errno.ENOENT, os.stat, s / "skill" / "scripts")


def test_rebinding_keeps_a_request_that_no_longer_fits(skill_folder, mount_skills):
    simple_skill(skill_folder, "asks", input={"type": "object", "properties": {
        "q": {"type": "string", "x-input-source": "inline"}}})
    simple_skill(skill_folder, "other")
    fs = mount_skills()
    s = fs.mnt / "s"
    os.mkdir(s)
    assert bind(s, "asks") == 0
    request = {"input": {"q": "hello"}, "parameter": {}}
    assert put_json(s / "request.json", request) == 0
    assert bind(s, "other") == 0
    # Nothing stored is lost, and status says why it no longer fits.
    assert read_bytes(s / "request.json") == dumps(request).encode()
    problems, log = status_of(s)
    assert problems == ["missing required input files: data",
                        "request.json: unknown input key 'q'"]
    assert log == []
    assert bind(s, "asks") == 0
    assert status_of(s) == (["ready"], [])
    assert read_bytes(s / "input.json") == dumps({"q": "hello"}).encode()


def test_bound_skill_removed_or_broken_later(skill_folder, mount_skills):
    d = simple_skill(skill_folder, "fragile")
    fs = mount_skills()
    s = fs.mnt / "s"
    os.mkdir(s)
    assert bind(s, "fragile", title="t") == 0
    bound = read_bytes(s / "session.json")
    (d / "SKILL.md").unlink()
    os.listdir(fs.mnt / ".flowfs" / "skills")       # rescan
    assert status_of(s)[0] == ["skill fragile did not load: SKILL.md is missing"]
    assert read_bytes(s / "session.json") == bound
    shutil.rmtree(d)
    os.listdir(fs.mnt / ".flowfs" / "skills")
    assert status_of(s)[0] == ["skill fragile is not installed (any more)"]
    assert read_bytes(s / "session.json") == bound
    expect(errno.ENOENT, os.stat, s / "prompt.txt")
    # Installing it again brings the binding back to life.
    simple_skill(skill_folder, "fragile")
    os.listdir(fs.mnt / ".flowfs" / "skills")
    assert status_of(s)[0] == ["missing required input files: data"]
    assert os.path.isfile(s / "prompt.txt")


# -- migration from an issue-2 (schema version 1) database --------------------

V1_COMMIT = "72ee286"


@pytest.fixture(scope="session")
def v1_flowfs(tmp_path_factory):
    """The issue-2 daemon built from commit 72ee286 (skips when impossible)."""
    root = tmp_path_factory.mktemp("flowfs-v1")
    src, build = root / "src", root / "build"
    src.mkdir()
    try:
        # the checkout may be another user's (root's, in CI): git reads
        # it all the same when told it is safe
        arch = subprocess.run(["git", "-c", "safe.directory=*", "-C",
                               str(REPO), "archive", V1_COMMIT],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(src)], input=arch, check=True,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        subprocess.run(["meson", "setup", str(build), str(src),
                        "-Dbuildtype=plain"], check=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        subprocess.run(["ninja", "-C", str(build), "fs/flowfs"], check=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except (OSError, subprocess.CalledProcessError) as e:
        pytest.skip(f"cannot build flowfs at {V1_COMMIT}: {e}")
    return build / "fs" / "flowfs"


def test_migration_from_version_1(v1_flowfs, make_flowfs, skill_folder,
                                  isolated_config, tmp_path):
    simple_skill(skill_folder, "later", input={"type": "object", "properties": {
        "data": {"type": "string", "extensions": [".bin"]}}})
    fs = make_flowfs(start=False)
    new_bin = fs.bin
    fs.bin = v1_flowfs
    fs.start(extra_args=[])
    s = fs.mnt / "old"
    os.mkdir(s)
    d = doc(s)
    d["title"] = "from issue 2 ✓"
    assert put(s / "session.json", dumps(d)) == 0
    blob = os.urandom(200_000)
    write_bytes(s / "uploads" / "data.bin", blob)
    os.makedirs(s / "uploads" / "sub" / "deeper")
    write_bytes(s / "uploads" / "sub" / "deeper" / "n.txt", b"nested\n")
    write_bytes(s / "notes.txt", b"scratch\n")
    os.mkdir(fs.mnt / "empty")
    v1_entries = set(os.listdir(s))
    fs.stop()
    fs.check()

    fs.bin = new_bin
    fs.start(extra_args=[f"--skills={skill_folder.root}"])
    assert sorted(os.listdir(fs.mnt)) == [".flowfs", "empty", "old"]
    assert read_bytes(s / "session.json") == dumps(session_doc(
        "old", d["created"], "from issue 2 ✓")).encode()
    assert read_bytes(s / "uploads" / "data.bin") == blob
    assert read_bytes(s / "uploads" / "sub" / "deeper" / "n.txt") == b"nested\n"
    assert read_bytes(s / "notes.txt") == b"scratch\n"
    assert set(os.listdir(s)) == v1_entries | SESSION_ENTRIES
    assert os.path.isdir(s / "output") and os.listdir(s / "output") == []
    assert os.path.isdir(fs.mnt / "empty" / "output")
    assert read_bytes(s / "request.json") == dumps(
        {"input": {}, "parameter": {}}).encode()
    assert status_of(s) == (["ready"], [])
    # The migrated session works with skills.
    assert bind(s, "later", title="from issue 2 ✓") == 0
    assert read_bytes(s / "input.json") == dumps(
        {"data": str(s / "uploads" / "data.bin")}).encode()
    write_bytes(s / "output" / "art.txt", b"artifact\n")
    fs.remount()
    assert read_bytes(s / "output" / "art.txt") == b"artifact\n"
    assert doc(s)["skill"] == "later"
    fs.stop()
    fs.check()
    # The issue-2 daemon refuses the now newer database before mounting.
    r = subprocess.run([str(v1_flowfs), f"--db={fs.db}", "-f", str(fs.mnt)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=20)
    assert r.returncode != 0
    assert r.stderr.startswith("flowfs: "), r.stderr
    assert not os.path.ismount(fs.mnt)
