"""Fixtures that mount the real flowfs daemon for the integration tests.

The tests drive the mounted filesystem with plain file I/O only.  Every mount
runs `flowfs --db=<fresh db> -f MOUNTPOINT` in a subprocess whose stderr goes to
a file; teardown always unmounts, waits for the daemon and fails the test when
the daemon exited non-zero or printed a sanitizer report.

Binary: $FLOWFS_BIN, default <repo>/build-test/fs/flowfs.
"""

import errno
import os
import re
import shutil
import stat
import signal
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# tools/test runs this suite twice: as an ordinary user (FLOWFS_TEST_USER
# names it) without the tests marked `root`, and as root with only those.
# Root's CAP_DAC_OVERRIDE hides permission bugs, so only what needs root
# (another uid, chown, allow_other, fusectl) runs as root.
ROOT_REASON = "needs root (tools/test runs it as root)"


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "root: needs root; tools/test runs these as root and "
        "every other test as an ordinary user")


def pytest_collection_modifyitems(config, items):
    if os.geteuid() == 0:
        return
    for item in items:
        if item.get_closest_marker("root"):
            item.add_marker(pytest.mark.skip(reason=ROOT_REASON))


def readonly_errno():
    """What opening a read-only (0444, 0555) entry for writing gives: the
    kernel's permission check (default_permissions) answers EACCES before
    flowfs is asked; root passes it and gets flowfs's EROFS."""
    return errno.EROFS if os.geteuid() == 0 else errno.EACCES
DEFAULT_BIN = REPO / "build-test" / "fs" / "flowfs"

MOUNT_TIMEOUT = 10.0
EXIT_TIMEOUT = 15.0

SANITIZER_MARKERS = (
    "ERROR: AddressSanitizer",
    "runtime error:",
    "LeakSanitizer",
    "ERROR: ThreadSanitizer",
    "WARNING: ThreadSanitizer",
)


def flowfs_bin():
    path = Path(os.environ.get("FLOWFS_BIN", DEFAULT_BIN))
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(
            f"flowfs binary not found or not executable: {path}\n"
            "Build it (e.g. meson setup build-test && ninja -C build-test) "
            "or point FLOWFS_BIN at it.", pytrace=False)
    return path


def daemon_env(extra=None):
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")
    env.setdefault("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1")
    if extra:
        env.update(extra)
    return env


def sanitizer_report(text):
    return any(m in text for m in SANITIZER_MARKERS)


def _fusermount(mnt, lazy=False):
    args = ["fusermount3", "-uz" if lazy else "-u", str(mnt)]
    return subprocess.run(args, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)


class FlowFS:
    """One flowfs daemon serving `mnt` from `db`; may be restarted."""

    def __init__(self, tmp, name="mnt", db=None, extra_args=(), env=None):
        self.tmp = Path(tmp)
        self.bin = flowfs_bin()
        self.mnt = self.tmp / name
        self.mnt.mkdir(exist_ok=True)
        self.db = Path(db) if db else self.tmp / f"{name}.db"
        self.extra_args = list(extra_args)
        # added to the daemon's environment (e.g. SLURM_CONF)
        self.env = dict(env or {})
        self.proc = None
        self.runs = []          # (stderr path, expected to exit cleanly)
        self.problems = []

    # -- starting ---------------------------------------------------------
    def start(self, extra_args=None):
        assert self.proc is None, "daemon already running"
        args = self.extra_args if extra_args is None else list(extra_args)
        err_path = self.tmp / f"{self.mnt.name}-stderr-{len(self.runs) + 1}.txt"
        err = open(err_path, "wb")
        cmd = [str(self.bin), f"--db={self.db}", "-f", *args, str(self.mnt)]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                     stdout=err, stderr=err,
                                     env=daemon_env(self.env))
        err.close()
        self.runs.append([err_path, True])
        deadline = time.monotonic() + MOUNT_TIMEOUT
        while not os.path.ismount(self.mnt):
            rc = self.proc.poll()
            if rc is not None:
                self.proc = None
                pytest.fail(f"flowfs exited with {rc} before mounting "
                            f"{self.mnt}:\n{err_path.read_text(errors='replace')}",
                            pytrace=False)
            if time.monotonic() > deadline:
                self._force_stop()
                pytest.fail(f"{self.mnt} not mounted after {MOUNT_TIMEOUT}s; "
                            f"stderr:\n{err_path.read_text(errors='replace')}",
                            pytrace=False)
            time.sleep(0.01)
        return self

    # -- stopping ---------------------------------------------------------
    def _unmount(self):
        """Unmount; retry a little while busy, then detach lazily.  (A
        file manager's refresh the daemon's refresher makes after a burst
        of changes, a 200-job graph's, holds the mount for a moment; on a
        loaded machine with ASan more than 3 s.)"""
        if not os.path.ismount(self.mnt):
            return
        deadline = time.monotonic() + 10
        while True:
            r = _fusermount(self.mnt)
            if r.returncode == 0 or not os.path.ismount(self.mnt):
                return
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        self.problems.append(f"fusermount3 -u failed ({r.stderr.strip()}); "
                             "used -uz")
        _fusermount(self.mnt, lazy=True)

    def _force_stop(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
        _fusermount(self.mnt, lazy=True)

    def stop(self):
        """Unmount and wait for the daemon; record any problem."""
        self._unmount()
        if self.proc is None:
            return
        try:
            rc = self.proc.wait(timeout=EXIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            self.problems.append(
                f"daemon did not exit within {EXIT_TIMEOUT}s of unmounting")
            rc = 0
        self.proc = None
        if rc != 0:
            self.problems.append(f"daemon exited with status {rc}")

    def kill9(self):
        """kill -9 the daemon and clear the stale mount."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.proc = None
        self.runs[-1][1] = False
        r = _fusermount(self.mnt, lazy=True)
        assert r.returncode == 0 or not os.path.ismount(self.mnt), r.stderr

    def remount(self, extra_args=None):
        self.stop()
        self.check()
        return self.start(extra_args)

    def kill9_remount(self, extra_args=None):
        self.kill9()
        self.check()
        return self.start(extra_args)

    # -- checking ---------------------------------------------------------
    def stderr(self):
        return "".join(p.read_text(errors="replace") for p, _ in self.runs
                       if p.exists())

    def check(self):
        """Fail on any problem so far: exit status, sanitizer reports."""
        msgs = list(self.problems)
        self.problems = []
        for path, _clean in self.runs:
            text = path.read_text(errors="replace") if path.exists() else ""
            if sanitizer_report(text):
                msgs.append(f"sanitizer report in {path.name}")
        if msgs:
            pytest.fail("flowfs daemon: " + "; ".join(msgs) + "\n--- stderr ---\n"
                        + self.stderr()[-20000:], pytrace=False)

    def close(self):
        try:
            self.stop()
        finally:
            if os.path.ismount(self.mnt):
                _fusermount(self.mnt, lazy=True)
        self.check()


@pytest.fixture
def make_flowfs(tmp_path):
    """Factory: make_flowfs(name=..., db=..., extra_args=..., env=...) →
    mounted FlowFS; `env` is added to the daemon's environment."""
    made = []

    def make(name="mnt", db=None, extra_args=(), start=True, env=None):
        fs = FlowFS(tmp_path, name=name, db=db, extra_args=extra_args,
                    env=env)
        made.append(fs)
        return fs.start() if start else fs

    yield make
    errors = []
    for fs in made:
        try:
            fs.close()
        except BaseException as e:  # noqa: B902 - collect every failure
            errors.append(e)
    if errors:
        raise errors[0]


@pytest.fixture
def flowfs(make_flowfs):
    """A flowfs mounted on a fresh database."""
    return make_flowfs()


@pytest.fixture
def mnt(flowfs):
    return flowfs.mnt


@pytest.fixture
def session(flowfs):
    """A freshly made session directory (mkdir at the root)."""
    path = flowfs.mnt / "s1"
    os.mkdir(path)
    return path


@pytest.fixture
def uploads(session):
    return session / "uploads"


# -- small helpers shared by the test modules -------------------------------

def oserror(func, *args, **kwargs):
    """Run func; return the errno it raised (0 if it succeeded)."""
    try:
        func(*args, **kwargs)
    except OSError as e:
        return e.errno
    return 0


def errname(code):
    return errno.errorcode.get(code, str(code)) if code else "success"


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def write_bytes(path, data, flags=os.O_WRONLY | os.O_CREAT | os.O_TRUNC):
    """open/write/close with plain syscalls; raises OSError from any step."""
    fd = os.open(path, flags, 0o644)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
    except BaseException:
        os.close(fd)
        raise
    os.close(fd)


# What every session folder holds while no skill is bound (prompt.txt and
# skill/ appear once one is).
SESSION_ENTRIES = {"session.json", "request.json", "input.json",
                   "parameter.json", "status", "status.json", "log",
                   "uploads", "output", "nodes", "edges", "parameters.json",
                   "parameters_output", "ctl", "context.json", "context.txt",
                   "rounds", "engine.log", "jobs"}


def session_doc(sid, created, title="", skill=None, engine=None):
    """The session.json object flowfs shows, in its key order."""
    return {"id": sid, "created": created, "skill": skill, "engine": engine,
            "title": title}


# -- skills (issue 3) --------------------------------------------------------

# Real skill packages no one on this project wrote; read in place, never copied.
REAL_SKILLS = REPO.parent / "shared" / "fixtures" / "skill-runner"


@pytest.fixture
def isolated_config(tmp_path, monkeypatch):
    """Point $XDG_CONFIG_HOME at an empty folder so the user's own skills
    (~/.config/flowfs/skills) never leak into a test; returns that folder."""
    cfg = tmp_path / "xdg-config"
    cfg.mkdir(exist_ok=True)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(cfg))
    return cfg


@pytest.fixture
def real_skills():
    """The folder of real skill packages; skips the test when it is absent."""
    if not REAL_SKILLS.is_dir():
        pytest.skip(f"{REAL_SKILLS} is absent")
    return REAL_SKILLS


@pytest.fixture
def real_mount(make_flowfs, real_skills, isolated_config):
    """A flowfs mounted with --skills=../shared/fixtures/skill-runner."""
    return make_flowfs(extra_args=[f"--skills={real_skills}"])


class SkillFolder:
    """Throwaway skill packages built in one search folder.

    add() writes <root>/<id>/SKILL.md, assets/runner.json and the schemas it
    is given (named assets/<kind>.schema.json in runner.json), plus any extra
    files; each argument can be left out or replaced by raw bytes to build
    broken packages.
    """

    def __init__(self, root):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def add(self, sid, *, input=None, parameter=None, output=None,
            engines=("gemini", "codex"), prompts=None, runner=None,
            skill_md="# A test skill\n", files=None, runner_extra=None):
        import json
        d = self.root / sid
        (d / "assets").mkdir(parents=True, exist_ok=True)
        if skill_md is not None:
            (d / "SKILL.md").write_text(skill_md)
        schemas = {}
        for kind, schema in (("input", input), ("parameter", parameter),
                             ("output", output)):
            if schema is None:
                continue
            rel = f"assets/{kind}.schema.json"
            schemas[kind] = rel
            data = schema if isinstance(schema, bytes) else \
                json.dumps(schema, indent=4).encode()
            (d / rel).write_bytes(data)
        if runner is None:
            runner = {"id": sid, "version": "1.0.0", "engines": list(engines),
                      "schemas": schemas,
                      "entrypoint": {"prompts": dict(prompts)} if prompts
                      else {}}
            runner.update(runner_extra or {})
        data = runner if isinstance(runner, bytes) else \
            json.dumps(runner, indent=4).encode()
        (d / "assets" / "runner.json").write_bytes(data)
        for rel, content in (files or {}).items():
            p = d / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(content if isinstance(content, bytes)
                          else content.encode())
        return d


@pytest.fixture
def skill_folder(tmp_path):
    """A SkillFolder at tmp_path/skills (nothing mounted)."""
    return SkillFolder(tmp_path / "skills")


@pytest.fixture
def mount_skills(make_flowfs, skill_folder, isolated_config):
    """Factory: mount_skills() mounts with --skills=<skill_folder.root>
    (build the skills first); extra folders can be passed, searched after."""
    def mount(*more_dirs, name="mnt"):
        args = [f"--skills={skill_folder.root}"]
        args += [f"--skills={d}" for d in more_dirs]
        return make_flowfs(name=name, extra_args=args)
    return mount


# -- helpers for the skill and input-protocol tests --------------------------

def dumps(obj):
    """JSON as flowfs must show it."""
    import json
    return json.dumps(obj, indent=2, ensure_ascii=False)


def put(path, data):
    """Write a whole document (open O_TRUNC, write, explicit close); errno."""
    if isinstance(data, str):
        data = data.encode()
    return oserror(write_bytes, path, data)


def wait_until(cond, what, timeout=30):
    """Poll cond() until it is true (waiting on an event, never a timing
    assertion); fail naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail(f"not after {timeout} s: {what}")
        time.sleep(0.02)


def vim(path, *cmds, setting="default"):
    """vim in ex mode on `path`: cmds, then :wq.  setting: "default",
    "backup" (set backup) or any other ":set" argument."""
    if shutil.which("vim") is None:
        pytest.fail("vim is not installed (apt-get install vim)")
    # 'backupskip' defaults to /tmp/*, where pytest puts the mount: clear it
    # so vim really makes its backup (by rename or by copy) here.
    args = ["vim", "-es", "-N", "-u", "NONE", "-i", "NONE", "-c", "set backupskip="]
    if setting == "backup":
        args += ["-c", "set backup"]
    elif setting != "default":
        args += ["-c", f"set {setting}"]
    for c in cmds:
        args += ["-c", c]
    args += ["-c", "wq", str(path)]
    return subprocess.run(args, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60,
                          cwd=os.path.dirname(path))


def expect(err, func, *args):
    """func(*args) must fail with errno `err` (or one of a set of them)."""
    got = oserror(func, *args)
    exp = err if isinstance(err, (set, tuple)) else {err}
    assert got in exp, (f"{func.__name__}{args}: expected "
                        f"{'/'.join(errname(e) for e in exp)}, got {errname(got)}")


def bind(session, skill, **more):
    """Write session.json with skill (and engine/title) set; returns errno."""
    return put_json(session / "session.json", {"skill": skill, **more})


def put_json(path, obj):
    import json
    return put(path, json.dumps(obj))


STATUS_TIME_RE = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"
_STATUS_LOG_RE = re.compile(rf"^({STATUS_TIME_RE}) (.+?): (.+)$")


def settled(path):
    """The bytes of a generated file once it holds still (two reads alike
    around a stat, whose size must match): a run may change it at any
    time."""
    for _ in range(50):
        data = read_bytes(path)
        size = os.stat(path).st_size
        if read_bytes(path) == data:
            break
    assert size == len(data), path
    return data


def status_entries(session):
    """(lines of status, [(time, path, message)] of the session's log).

    status is "ready" or one line per problem, then what is going on; the
    log has what was refused or happened, `<time> <path>: <message>`.
    """
    text = settled(session / "status").decode()
    assert text.endswith("\n"), repr(text)
    problems = text.splitlines()
    assert all(not _STATUS_LOG_RE.match(line) for line in problems), text
    return problems, log_entries(session / "log")


def log_entries(path):
    """[(time, path, message)] of a log file (a session's log,
    .flowfs/log); every line must be `<time> <path>: <message>`."""
    log = []
    for line in settled(path).decode().splitlines():
        m = _STATUS_LOG_RE.match(line)
        assert m, f"not a log line: {line!r}"
        log.append(m.groups())
    return log


def root_log(mnt):
    """[(time, path, message)] of the mount root's .flowfs/log."""
    return log_entries(Path(mnt) / ".flowfs" / "log")


def status_json(session):
    """status.json, parsed: {"ready", "problems", "notes", "run",
    "fetches"}."""
    import json
    return json.loads(settled(session / "status.json"))


def status_of(session):
    """status_entries() without the times: (status lines, [(path,
    message)] of the log)."""
    problems, log = status_entries(session)
    return problems, [(path, message) for _, path, message in log]


# DESIGN.md §4, the prompt used when runner.json has none for the engine.
DEFAULT_PROMPT = """Please call the skill named "{{ skill.id }}".

# Inputs
{% for key, value in input.items() %}
- {{ key }}: {{ value }}
{% endfor %}

# Parameters
{% for key, value in parameter.items() %}
- {{ key }}: {{ value }}
{% endfor %}

Task: Execute the skill using the above inputs and parameters.
"""


def jinja_render(template, ctx):
    """What Python Jinja2 (default settings) makes of `template`."""
    jinja2 = pytest.importorskip("jinja2")
    return jinja2.Environment().from_string(template).render(**ctx)


def prompt_context(fs, sid, runner, skill_id, input, parameter):
    """The prompt context issue 3 defines, built from the expected objects."""
    run_dir = str(fs.mnt / sid)
    return {"input": input, "parameter": parameter, "skill": runner,
            "skill_id": skill_id, "run_dir": run_dir,
            "skill_dir": run_dir + "/skill",
            "params_json": dumps({"input": input, "parameter": parameter})}


def listing(root, follow=False):
    """{relative path: ("dir", mode) | ("link", target) | ("file", mode,
    bytes)} of a real or mounted tree; links are followed with `follow`
    (a link to a folder is then a "dir", not walked into)."""
    out = {}
    root = Path(root)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            st = os.stat(p) if follow else os.lstat(p)
            mode = stat.S_IMODE(st.st_mode)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", mode)
            else:
                data = read_bytes(p)
                assert st.st_size == len(data), p
                out[rel] = ("file", mode, data)
    return out


def tree_of(root):
    """{relative path: bytes or None for folders} of a real or mounted
    tree, links followed."""
    return {rel: None if entry[0] == "dir" else entry[2]
            for rel, entry in listing(root, follow=True).items()}


def diff_keys(want, got):
    """The keys two dicts (user_data(), listing()) differ in, with both
    values."""
    return {k: (want.get(k, "<absent>"), got.get(k, "<absent>"))
            for k in sorted(set(want) | set(got), key=str)
            if want.get(k) != got.get(k)}


def project_version():
    text = (REPO / "meson.build").read_text()
    m = re.search(r"version\s*:\s*'([^']+)'", text)
    assert m, "no version in meson.build"
    return m.group(1)


def readme_section(title):
    """The README's section `## <title>...`, up to the next `## `."""
    text = (REPO / "README.md").read_text()
    start = text.index(f"## {title}")
    return text[start:text.index("\n## ", start + 3)]


# -- running tools and other users -------------------------------------------

TOOL_TIMEOUT = 120      # a tool that loops fails the test instead of hanging it


def run(*args, **kw):
    """Run a tool to its end (at most TOOL_TIMEOUT s); the CompletedProcess."""
    args = [str(a) for a in args]
    try:
        return subprocess.run(args, capture_output=True, text=True,
                              timeout=TOOL_TIMEOUT, stdin=subprocess.DEVNULL,
                              **kw)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{' '.join(args)} did not finish in {TOOL_TIMEOUT} s "
                    f"(a loop?); stderr so far: {e.stderr!r}")


def clean(r):
    """The tool exited 0 and printed nothing on stderr."""
    assert (r.returncode, r.stderr) == (0, ""), (r.args, r.returncode,
                                                 r.stderr)


def run_as_in(uid, gid, path, func):
    """Run func() in a child that has become uid/gid, working in folder
    `path`; return its exit code.  The folder is opened here and the child
    changes into it by its fd: the path down to the mountpoint (pytest's
    tmp dir) is not searchable by other users."""
    dirfd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        pid = os.fork()
        if pid == 0:
            code = 99
            try:
                os.setgroups([])
                os.setgid(gid)
                os.setuid(uid)
                os.fchdir(dirfd)
                code = func()
            except BaseException as e:  # the child must never return into pytest
                os.write(2, f"child: {e!r}\n".encode())
                code = 98
            finally:
                os._exit(code)
    finally:
        os.close(dirfd)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


# -- a session in every state (issue 11: rm -rf, trash, backup) ---------------

FULL_ROUNDS = [
    {"phenomenon": "P", "hypothesis": "H", "model": "M",
     "experiment": "print(1)", "observation": "1"},
    {"inference": "I", "conclusion": "C"},
]

FULL_CONTEXT = {
    "id": "msg_1", "timestamp": 1.5, "architecture": "request-phase-task",
    "request": {"original_input": "x", "core_goal": "g",
                "requirements": [], "constraints": []},
    "phases": [], "summary": "s"}


FULL_REQUEST = {"input": {"description": "the task",
                          "io_instructions": "a number"}}

# What fill_session() writes in uploads/ and output/.
FULL_DATA = b"a,b\n1,2\n" * 1000
FULL_DEEP = b"deep\n"
FULL_RESULT = b"32.20\n"


def fill_session(s, copy_to=None):
    """Make session folder `s` (mkdir) and give it one of everything a
    session holds: a bound skill, a request, uploads (a file, a folder, a
    link), an output file, a job graph, a context and rounds.  Returns its
    user_data(); with `copy_to`, first copies it there with `cp -a`
    (making the folder above)."""
    import json
    os.mkdir(s)
    assert put_json(s / "session.json", {"skill": "scientific-workflow",
                                         "title": "full"}) == 0
    assert put_json(s / "request.json", FULL_REQUEST) == 0
    write_bytes(s / "uploads" / "data.csv", FULL_DATA)
    os.mkdir(s / "uploads" / "sub")
    write_bytes(s / "uploads" / "sub" / "deep.txt", FULL_DEEP)
    os.chmod(s / "uploads" / "sub" / "deep.txt", 0o600)
    os.symlink("data.csv", s / "uploads" / "link")
    write_bytes(s / "output" / "result.txt", FULL_RESULT)
    assert put_json(s / "nodes" / "n1.json", {"label": "gen", "input_parameters": [
        {"name": "formula", "type": "str", "value": "H2O"}]}) == 0
    assert put_json(s / "nodes" / "n2.json", {"label": "opt", "input_parameters": [
        {"name": "structure_file", "type": "str", "value": ""}]}) == 0
    assert put_json(s / "edges" / "e1.json", {
        "source_node_id": "n1", "target_node_id": "n2",
        "target_parameter_name": "structure_file"}) == 0
    assert put(s / "context.json", json.dumps(FULL_CONTEXT)) == 0
    for i, r in enumerate(FULL_ROUNDS, 1):
        assert put_json(s / "rounds" / f"{i}.json", r) == 0
    assert read_bytes(s / "status") == b"ready\n", read_bytes(s / "status")
    if copy_to is not None:
        Path(copy_to).parent.mkdir(parents=True, exist_ok=True)
        clean(run("cp", "-a", s, copy_to))
    return user_data(s)

# The files flowfs makes in output/: user_data() compares them apart.
GENERATED_OUTPUT = ("summary.json", "summary_readable.txt", ".manifest.json",
                    "workflow.argo.yaml", "submit.slurm.sh", "graph.svg",
                    "graph.dot", "for006.dat", "coefficients.csv",
                    "coefficients.svg")


def user_data(s, generated=True, times="ns"):
    """What a session holds that is its user's, to compare two sessions:
    every document (session.json without id and created), the entries of
    uploads/ and output/ as listing() has them with their modification
    times, and (with `generated`) the generated transcript and status,
    which need a ready session.

    `times` is what a tool keeps of the times: "ns" all of them; "s" whole
    seconds (a tar archive holds no more; rsync leaves a folder or link it
    made in the same second as its original with its own time); "files"
    the regular files' (Thunar sets none on folders and links); None none."""
    import json
    assert times in ("ns", "s", "files", None), times
    doc = json.loads(read_bytes(s / "session.json"))
    doc.pop("id")
    doc.pop("created")
    out = {"session.json": doc}
    for name in ("request.json", "context.json", "parameters.json"):
        out[name] = read_bytes(s / name)
    for folder in ("nodes", "edges", "rounds"):
        for name in sorted(os.listdir(s / folder)):
            out[f"{folder}/{name}"] = read_bytes(s / folder / name)
    for folder in ("uploads", "output"):
        for rel, entry in listing(s / folder).items():
            if folder == "output" and rel in GENERATED_OUTPUT:
                continue        # generated: compared below
            mtime = os.lstat(s / folder / rel).st_mtime_ns
            if times == "s":
                entry += (mtime // 10**9,)
            elif times == "ns" or times == "files" and entry[0] == "file":
                entry += (mtime,)
            out[f"{folder}/{rel}"] = entry
    if generated:
        out["summary"] = read_bytes(s / "output" / "summary.json")
        out["status"] = read_bytes(s / "status")
    return out


# -- a real single-node Slurm (issue 16) --------------------------------------

# tools/test starts the cluster with tools/slurm-cluster and exports
# FLOWFS_SLURM_CONF, or FLOWFS_SLURM_UNAVAILABLE with why it could not.
SLURM_NO_CLUSTER = ("no test cluster: run tools/test, or tools/slurm-cluster "
                    "start DIR as root and set FLOWFS_SLURM_CONF")
SLURM_TIMEOUT = 30      # a job of the tests starts and ends well within it


class SlurmCluster:
    """The test cluster: `env` is what a Slurm client (sbatch, squeue,
    scancel) needs in its environment; the rest runs those clients."""

    def __init__(self, conf):
        self.conf = conf
        self.env = {"SLURM_CONF": conf}

    def run(self, *args, **kw):
        """A Slurm client run to its end with `env` added to ours."""
        env = dict(os.environ)
        env.update(self.env)
        return run(*args, env=env, **kw)

    def sbatch(self, *args, cwd=None):
        """Submit; the job id (sbatch --parsable prints "ID[;cluster]")."""
        r = self.run("sbatch", "--parsable", *args, cwd=cwd)
        assert r.returncode == 0 and r.stdout.strip(), (r.args, r.returncode,
                                                        r.stdout, r.stderr)
        return int(r.stdout.strip().split(";")[0])

    def squeue(self, jobid):
        """(state, reason) of the job in any state, e.g. ("PENDING",
        "Dependency"), ("COMPLETED", "None"); None when slurmctld no longer
        knows it (MinJobAge, 60 s, after it ended).  Without -t all,
        squeue -j leaves finished jobs out."""
        r = self.run("squeue", "-h", "-t", "all", f"-j{jobid}", "-o", "%T,%r")
        if r.returncode != 0 and "Invalid job id" in r.stderr:
            return None
        assert r.returncode == 0, (r.args, r.returncode, r.stderr)
        line = r.stdout.strip()
        if not line:
            return None
        state, reason = line.split(",", 1)
        return state, reason

    def wait_state(self, jobid, *states, timeout=SLURM_TIMEOUT):
        """Wait until the job is in one of `states`; its (state, reason)."""
        deadline = time.monotonic() + timeout
        while True:
            seen = self.squeue(jobid)
            if seen is not None and seen[0] in states:
                return seen
            if time.monotonic() > deadline:
                pytest.fail(f"job {jobid} not in {states} after {timeout} s; "
                            f"squeue says {seen}")
            time.sleep(0.1)

    def scancel(self, *jobids):
        clean(self.run("scancel", *[str(j) for j in jobids]))


@pytest.fixture(scope="session")
def slurm():
    """The test cluster tools/test started; skips, saying why, without one."""
    conf = os.environ.get("FLOWFS_SLURM_CONF")
    if not conf:
        why = os.environ.get("FLOWFS_SLURM_UNAVAILABLE")
        pytest.skip(f"no test cluster: {why}" if why else SLURM_NO_CLUSTER)
    if not os.access(conf, os.R_OK):
        pytest.fail(f"FLOWFS_SLURM_CONF={conf} is not readable: the test "
                    "cluster's folder must be open to this user",
                    pytrace=False)
    return SlurmCluster(conf)
