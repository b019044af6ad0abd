"""Backing a session up, restoring it and duplicating it with the tools a
user has (issue 11): cp -a, rsync -a and GNU tar, run on the real mount.

A session holds generated files (status, input.json, prompt.txt, ...), a
control file and links besides the user's documents and files.  A copy
of a session holds them all; brought back, what is written to a generated
file is dropped (the session's `log` says so when it differs from what the
file holds at that moment), unlinking a reserved name lets tar x recreate
it, and the documents are checked as they come, in whatever order the tool
brings them.

Which dropped-write lines a restore may log depends on that order: a
generated file differs from the copy's when a document it is made from has
not come yet (input.json before request.json), or always (prompt.txt
names the session's folder).  expected_log() works it out from the order
each tool writes in: rsync by name, a folder's files before its
subfolders; cp by inode number (coreutils' savedir SORT_FASTREAD); tar in
the archive's order.  Those that follow one another make one line of the
log (folded()), which names the first three.
"""

import json
import os
import re
import stat
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

from conftest import (FULL_CONTEXT, FULL_DATA, FULL_DEEP, FULL_REQUEST,
                      FULL_RESULT, FULL_ROUNDS, SESSION_ENTRIES, TOOL_TIMEOUT,
                      clean, diff_keys, dumps, fill_session, listing, put,
                      read_bytes, readme_section, run, status_of, user_data,
                      wait_until)

SKILL_LINK = "../.flowfs/skills/scientific-workflow"


def tar_members(path, top):
    """[(relative path, member)] of an archive, in its order, with `top`
    (its first component: "S" or ".") taken off; `top` itself left out."""
    out = []
    with tarfile.open(path) as t:
        for m in t.getmembers():
            name = os.path.normpath(m.name)
            if name == top:
                continue
            assert name.startswith(top + "/") or top == ".", name
            out.append((name[len(top) + 1:] if top != "." else name, m))
    return out


def tar_listing(path, top):
    """listing() of what an archive holds."""
    out = {}
    with tarfile.open(path) as t:
        for rel, m in tar_members(path, top):
            if m.issym():
                out[rel] = ("link", m.linkname)
            elif m.isdir():
                out[rel] = ("dir", m.mode & 0o7777)
            else:
                assert m.isfile(), m.name
                out[rel] = ("file", m.mode & 0o7777,
                            t.extractfile(m.name).read())
    return out


# -- the order a tool writes in -----------------------------------------------------

def inode_order(root, rel=""):
    """[(path, size)] of the files and links under root in cp's order: each
    folder's entries by inode number (gnulib savedir, SORT_FASTREAD), a
    subfolder copied where it comes."""
    out = []
    entries = sorted(os.scandir(Path(root) / rel), key=lambda e: e.inode())
    for e in entries:
        path = os.path.join(rel, e.name)
        st = e.stat(follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            out += inode_order(root, path)
        else:
            out.append((path, st.st_size))
    return out


def rsync_order(root, rel=""):
    """[(path, size)] in rsync's order: a folder's files by name, then its
    subfolders by name (incremental recursion)."""
    out, subdirs = [], []
    for name in sorted(os.listdir(Path(root) / rel)):
        path = os.path.join(rel, name)
        st = os.lstat(Path(root) / path)
        if stat.S_ISDIR(st.st_mode):
            subdirs.append(path)
        else:
            out.append((path, st.st_size))
    for d in subdirs:
        out += rsync_order(root, d)
    return out


def tar_order(path, top):
    return [(rel, m.size) for rel, m in tar_members(path, top)
            if not m.isdir()]


# -- which writes a restore of fill_session()'s session logs ------------------------

DOCUMENTS = {"session.json", "request.json", "context.json",
             "parameters.json", "nodes/n1.json", "nodes/n2.json",
             "edges/e1.json", "rounds/1.json", "rounds/2.json"}


def has_problem(done):
    """Whether status shows a problem (the copy's reads "ready") once the
    documents in `done` have been taken."""
    graph = "parameters.json" in done or \
        {"nodes/n1.json", "nodes/n2.json"} <= done
    return ("session.json" in done and "request.json" not in done) or \
        ("edges/e1.json" in done and not graph) or \
        ("rounds/2.json" in done and "rounds/1.json" not in done)


def differs(path, done):
    """Whether generated file `path` of the new session differs from the
    copy's once the documents in `done` have been taken."""
    if path == "prompt.txt":            # run_dir, skill_dir: the folder's name
        return True
    if path == "input.json":            # the inline inputs of the request
        return not {"session.json", "request.json"} <= done
    if path in ("parameter.json", "output/.manifest.json"):    # the skill's
        return "session.json" not in done
    if path in ("output/summary.json", "output/summary_readable.txt"):
        return not {"session.json", "request.json", "rounds/1.json",
                    "rounds/2.json"} <= done
    if path == "context.txt":
        return "context.json" not in done
    # the job graph's exports: what the graph's first node makes them say
    # (the test's tool map runs none of them)
    if path in ("output/workflow.argo.yaml", "output/submit.slurm.sh"):
        return "nodes/n1.json" not in done and "parameters.json" not in done
    # the job graph's picture (issue 30): the whole graph is drawn
    if path in ("output/graph.svg", "output/graph.dot"):
        return "parameters.json" not in done and not \
            {"nodes/n1.json", "nodes/n2.json", "edges/e1.json"} <= done
    if path in ("status", "status.json"):
        return has_problem(done)
    if path.startswith("parameters_output/"):   # holds meta.template_uuid
        return "parameters.json" not in done
    # ctl, engine.log: alike everywhere; log: the copy's is empty, and an
    # empty write or move (cp, tar, rsync) drops nothing
    return False


def expected_log(order, moved=False, refused=(), may_skip=()):
    """[(path, size or "refused", optional)]: what the session's log must
    tell after a restore writing `order` ([(path, size)]) into a new
    session, one entry per refused document and per generated file whose
    bytes differ from what it holds when they come (log_matches() makes
    lines of them).  An entry for a name in `may_skip` is optional: rsync
    may not send that file at all."""
    done, entries = set(), []
    for path, size in order:
        if path in DOCUMENTS:
            if path in refused:
                entries.append((path, "refused", False))
            else:
                done.add(path)
        elif differs(path, done):
            entries.append((path, size, path in may_skip))
    return entries


def rsync_may_skip(src, dst, order):
    """The files rsync's quick check may skip: the destination has one of
    the same size and modification time (rsync compares whole seconds), as
    the generated files of a session made in the same second as the copied
    one may have."""
    skip = set()
    for path, _ in order:
        try:
            a, b = os.lstat(Path(src) / path), os.lstat(Path(dst) / path)
        except FileNotFoundError:
            continue
        if a.st_size == b.st_size and int(a.st_mtime) == int(b.st_mtime):
            skip.add(path)
    return skip


def folded(entries, moved):
    """The log lines flowfs writes for `entries` ([(path, size or
    "refused")] in the order they came): a refusal is a line of its own;
    dropped writes that follow one another are one line (issue 29: a copy
    brought back wrote a line for every file flowfs makes), which names
    the first three files and how many more, and counts their bytes."""
    how = "moved onto" if moved else "written to"
    lines, run = [], []

    def end_run():
        if not run:
            return
        names = list(dict.fromkeys(p for p, _ in run))
        size = sum(n for _, n in run)
        path = ", ".join(names[:3]) + (f" and {len(names) - 3} more"
                                       if len(names) > 3 else "")
        if len(names) == 1:
            msg = f"flowfs makes this file: the {size} bytes {how} it were dropped"
        else:
            msg = (f"flowfs makes these {len(names)} files: the {size} bytes"
                   f" {how} them were dropped")
        lines.append((path, msg))
        run.clear()

    for path, size in entries:
        if size == "refused":
            end_run()
            lines.append((path, "refused"))
        else:
            run.append((path, size))
    end_run()
    return lines


def log_matches(got, want, moved=False):
    """Whether log lines `got` are what `want` (expected_log()) makes,
    its optional entries left out or not."""
    optional = [i for i, (_, _, opt) in enumerate(want) if opt]
    for mask in range(1 << len(optional)):
        left_out = {optional[k] for k in range(len(optional))
                    if mask >> k & 1}
        entries = [(p, n) for i, (p, n, _) in enumerate(want)
                   if i not in left_out]
        if folded(entries, moved) == got:
            return True
    return False


def log_lines(s):
    """The session's log as [(path, message)], refusals as "refused"."""
    _, log = status_of(s)
    return [(p, m if m.startswith("flowfs makes th") else "refused")
            for p, m in log]


# What each tool keeps of the modification times (user_data()'s `times`):
# cp -a all of them; tar whole seconds, all its archive holds; rsync -a
# all of them once the second of its originals' times is over
# (second_over()).
TIMES = {"cp": "ns", "rsync": "ns", "tar": "s", "tar-dot": "s"}


def second_over(root):
    """Wait until the clock's second is past every modification time in
    the tree `root`.  rsync -a compares times in whole seconds: a folder or
    link it makes in the second its original was changed in keeps its own
    time, and such a folder then takes the time of what rsync writes into
    it, maybe in the next second, so a second rsync finds it changed.  Past
    that second, rsync sets every time it copies."""
    root = Path(root)
    newest = max([os.lstat(root).st_mtime_ns] + [
        os.lstat(Path(d) / n).st_mtime_ns
        for d, dirs, files in os.walk(root) for n in dirs + files])
    wait_until(lambda: time.time_ns() // 10**9 > newest // 10**9,
               f"the second of the newest time in {root} over", timeout=10)


def check_restored(findings, s, new, order, moved, r, may_skip=(),
                   times="ns"):
    """What every restore into a new session must give: exit 0 and silence,
    the user's data as in the original (modification times as `times`),
    status ready, and the log's lines exactly the dropped writes `order`
    explains."""
    if (r.returncode, r.stderr) != (0, ""):
        findings.append(f"{' '.join(r.args)}: exit {r.returncode}, stderr:\n"
                        f"{r.stderr}")
    want, got = user_data(s, times=times), user_data(new, times=times)
    if got != want:
        findings.append(f"user data differs: {diff_keys(want, got)}")
    if sorted(os.listdir(new)) != sorted(os.listdir(s)):
        findings.append(f"entries: {sorted(os.listdir(new))} != "
                        f"{sorted(os.listdir(s))}")
    out = os.listdir(new / "parameters_output")
    if len(out) != 1 or not out[0].startswith(f"parameters_{new.name}_"):
        findings.append(f"parameters_output/ holds {out}")
    if read_bytes(new / "status") != b"ready\n":
        findings.append(f"status: {read_bytes(new / 'status')!r}")
    want_log = expected_log(order, moved=moved, may_skip=may_skip)
    if not log_matches(log_lines(new), want_log, moved):
        findings.append(f"log: {status_of(new)[1]}\n want: {want_log}")


# -- 1. copying a session out -------------------------------------------------------

@pytest.mark.parametrize("tool", ["cp", "rsync", "tar"])
def test_copy_out(flowfs, tmp_path, tool):
    """A user backs a session up: `cp -a mnt/S backup`, `rsync -a mnt/S/
    backup/` or `tar cf backup.tar -C mnt S`.  The tool says nothing and
    exits 0; the copy holds every entry with the mount's bytes and modes;
    skill is a link (the skill's files are not copied) and ctl an empty
    file."""
    s = flowfs.mnt / "S"
    fill_session(s)
    backup = tmp_path / "backup"
    if tool == "cp":
        r = run("cp", "-a", s, backup)
    elif tool == "rsync":
        r = run("rsync", "-a", f"{s}/", f"{backup}/")
    else:
        backup = tmp_path / "backup.tar"
        r = run("tar", "cf", backup, "-C", flowfs.mnt, "S")
    clean(r)
    shown = listing(s)
    copy = tar_listing(backup, "S") if tool == "tar" else listing(backup)
    assert sorted(copy) == sorted(shown)
    for path in sorted(shown):
        assert copy[path] == shown[path], path
    # what is the user's is there, byte for byte as fill_session wrote it
    assert copy["uploads/data.csv"][2] == FULL_DATA
    assert copy["uploads/sub/deep.txt"] == ("file", 0o600, FULL_DEEP)
    assert copy["output/result.txt"][2] == FULL_RESULT
    assert copy["uploads/link"] == ("link", "data.csv")
    assert copy["request.json"][2] == dumps({**FULL_REQUEST,
                                             "parameter": {}}).encode()
    assert copy["context.json"][2] == dumps(FULL_CONTEXT).encode()
    for i, r in enumerate(FULL_ROUNDS, 1):
        assert copy[f"rounds/{i}.json"][2] == dumps(r).encode(), i
    doc = json.loads(copy["session.json"][2])
    assert (doc["id"], doc["skill"], doc["title"]) == \
        ("S", "scientific-workflow", "full")
    nodes = [json.loads(copy[f"nodes/{n}.json"][2]) for n in ("n1", "n2")]
    assert [(n["id"], n["label"], n["input_parameters"][0]["value"])
            for n in nodes] == [("n1", "gen", "H2O"), ("n2", "opt", "")]
    edge = json.loads(copy["edges/e1.json"][2])
    assert (edge["source_node_id"], edge["target_node_id"],
            edge["target_parameter_name"]) == ("n1", "n2", "structure_file")
    assert copy["skill"] == ("link", SKILL_LINK)
    assert copy["summary.json"] == ("link", "output/summary.json")
    assert copy["ctl"] == ("file", 0o600, b"")
    assert copy["status"] == ("file", 0o644, b"ready\n")
    # reading the session logged nothing
    assert status_of(s) == (["ready"], [])


# -- 2. restoring a copy into a new session ---------------------------------------

RESTORES = ["cp", "rsync", "tar", "tar-dot"]


def copy_out_and_back(tool, mnt, s, new, tmp_path):
    """Copy session s out with `tool`, then into the new session folder
    `new` (made by mkdir first); (the restore's CompletedProcess, the
    order it wrote in, whether it renames onto names, the names rsync's
    quick check may skip)."""
    if tool == "cp":
        copy = tmp_path / "copy"
        clean(run("cp", "-a", s, copy))
        order = inode_order(copy)
        r = run("cp", "-a", f"{copy}/.", f"{new}/")
    elif tool == "rsync":
        copy = tmp_path / "copy"
        second_over(s)
        clean(run("rsync", "-a", f"{s}/", f"{copy}/"))
        order = rsync_order(copy)
        skip = rsync_may_skip(copy, new, order)
        r = run("rsync", "-a", f"{copy}/", f"{new}/")
        return r, order, True, skip
    elif tool == "tar":
        arch = tmp_path / "copy.tar"
        clean(run("tar", "cf", arch, "-C", mnt, s.name))
        order = tar_order(arch, s.name)
        r = run("tar", "xf", arch, "-C", new, "--strip-components=1")
    else:
        arch = tmp_path / "x.tar"
        clean(run("tar", "cf", arch, "-C", s, "."))
        order = tar_order(arch, ".")
        r = run("tar", "xf", arch, "-C", new)
    return r, order, False, set()


@pytest.mark.parametrize("tool", RESTORES)
def test_restore_into_a_new_session(flowfs, tmp_path, tool):
    """A user restores a backup into a new session: mkdir mnt/R, then
    `cp -a COPY/. mnt/R/`, `rsync -a COPY/ mnt/R/`, `tar xf copy.tar -C
    mnt/R --strip-components=1` (an archive of the session's folder) or
    `tar xf x.tar -C mnt/R` (an archive made with -C S .).  The tool
    finishes silently with 0, R holds the user's data as S does (skill
    binding, title, request, graph, rounds, context, uploads with their
    modes and links, output), status reads ready, and the log has only the
    dropped writes to generated files that differed when they came."""
    s = flowfs.mnt / "S"
    before = fill_session(s)
    new = flowfs.mnt / "R"
    os.mkdir(new)
    r, order, moved, skip = copy_out_and_back(tool, flowfs.mnt, s, new,
                                              tmp_path)
    findings = []
    check_restored(findings, s, new, order, moved, r, skip, TIMES[tool])
    assert not findings, "\n".join(findings)
    # the original is untouched
    assert user_data(s) == before
    assert status_of(s) == (["ready"], [])
    doc = json.loads(read_bytes(new / "session.json"))
    assert (doc["id"], doc["skill"], doc["title"]) == \
        ("R", "scientific-workflow", "full")
    assert os.readlink(new / "skill") == SKILL_LINK


def test_a_copy_brought_back_is_one_line_of_the_log(flowfs, tmp_path):
    """Issue 29: a copy brought back (cp -a, rsync -a) left a log that
    began with a line for every file flowfs makes.  The drops that follow
    one another are one line, rewritten as they come; a line of another
    kind between them ends it, and the next drop starts a new one."""
    mnt = flowfs.mnt
    copy = tmp_path / "copy"
    fill_session(mnt / "S", copy_to=copy)
    new = mnt / "R"
    os.mkdir(new)
    clean(run("cp", "-a", f"{copy}/.", f"{new}/"))
    (line,) = status_of(new)[1]
    m = re.fullmatch(r"(.+?)(?: and (\d+) more)?", line[0])
    names = m[1].split(", ")
    files = len(names) + int(m[2] or 0)
    assert len(names) == min(files, 3) and files >= 3, line
    assert re.fullmatch(rf"flowfs makes these {files} files: the \d+ bytes"
                        r" written to them were dropped", line[1]), line
    # another line, then a drop: a line of its own again
    assert put(new / "request.json", b"{") != 0
    write = new / "status"
    write.write_bytes(b"not what it says\n")
    assert [(p, m.split(":")[0]) for p, m in status_of(new)[1][1:]] == [
        ("request.json", "line 1, column 2"),
        ("status", "flowfs makes this file")]


# -- 3. duplicating a session within the mount --------------------------------------

@pytest.mark.parametrize("tool", ["cp", "rsync"])
def test_duplicate_within_the_mount(flowfs, tool):
    """A user duplicates a session on the mount: mkdir mnt/D, then `cp -a
    mnt/S/. mnt/D/` or `rsync -a mnt/S/ mnt/D/`.  As for a restore: exit
    0, nothing printed, D holds what S holds, status ready, only the
    dropped writes that differed logged; S is unchanged."""
    s = flowfs.mnt / "S"
    before = fill_session(s)
    d = flowfs.mnt / "D"
    os.mkdir(d)
    skip = set()
    if tool == "cp":
        order = inode_order(s)
        r = run("cp", "-a", f"{s}/.", f"{d}/")
    else:
        second_over(s)
        order = rsync_order(s)
        skip = rsync_may_skip(s, d, order)
        r = run("rsync", "-a", f"{s}/", f"{d}/")
    findings = []
    check_restored(findings, s, d, order, tool == "rsync", r, skip,
                   TIMES[tool])
    assert not findings, "\n".join(findings)
    assert user_data(s) == before
    assert status_of(s) == (["ready"], [])


# -- 4. a copy with broken documents ----------------------------------------------

BROKEN = {"request.json": "line 1, column 1:",
          "nodes/n2.json": '"label" must be a non-empty string',
          "rounds/2.json": 'unknown tag "colour"'}


def broken_restore_errors(tool, new, r):
    """Whether `tool`'s exit status and stderr report each piece of BROKEN
    once, as refused by close() (cp, tar x) or by rename() (rsync, which
    writes a temporary file and renames it onto the name), and nothing
    else."""
    lines = sorted(r.stderr.splitlines())
    if tool == "cp":
        return r.returncode == 1 and lines == sorted(
            f"cp: failed to close '{new}/./{path}': Invalid argument"
            for path in BROKEN)
    if tool == "tar":
        return r.returncode == 2 and lines == sorted(
            [f"tar: {path}: Cannot close: Invalid argument"
             for path in BROKEN] +
            ["tar: Exiting with failure status due to previous errors"])
    renames = []
    for path in sorted(BROKEN):
        folder, _, name = path.rpartition("/")
        temp = re.escape(f"{new}/{folder + '/' if folder else ''}.{name}.")
        renames.append(rf'rsync: \[receiver\] rename "{temp}\w{{6}}" -> '
                       rf'"{re.escape(path)}": Invalid argument \(22\)')
    ends = [l for l in lines if l.startswith("rsync error: ")]
    rest = [l for l in lines if l not in ends]
    return r.returncode == 23 and len(rest) == len(renames) and \
        all(sum(bool(re.fullmatch(p, l)) for l in rest) == 1
            for p in renames) and \
        len(ends) == 1 and ends[0].startswith(
            "rsync error: some files/attrs were not transferred")


@pytest.mark.parametrize("tool", ["cp", "rsync", "tar"])
def test_restore_of_a_copy_with_broken_documents(flowfs, tmp_path, tool):
    """A user restores a backup whose request.json is not JSON, one node
    has a label of the wrong type and one round an unknown key: mkdir
    mnt/R, then `cp -a COPY/. mnt/R/`, `rsync -a COPY/ mnt/R/` or `tar xf
    copy.tar -C mnt/R --strip-components=1`.  The tool reports each
    refused file (cp: "failed to close ...: Invalid argument", tar:
    "Cannot close: Invalid argument", rsync: its rename "Invalid argument")
    and exits non-zero; everything else comes back (the node too: the
    copy's parameters.json holds the whole graph); the log has one line
    per refused file, naming it and saying why; status says the request's
    description is missing."""
    mnt = flowfs.mnt
    s = mnt / "S"
    copy = tmp_path / "copy"
    fill_session(s, copy_to=copy)
    (copy / "request.json").write_bytes(b"not json\n")
    node = json.loads((copy / "nodes" / "n2.json").read_bytes())
    node["label"] = 5
    (copy / "nodes" / "n2.json").write_text(json.dumps(node, indent=2))
    rnd = json.loads((copy / "rounds" / "2.json").read_bytes())
    rnd["colour"] = "red"
    (copy / "rounds" / "2.json").write_text(json.dumps(rnd, indent=2))
    os.mkdir(mnt / "fresh")             # what a session holds unwritten
    new = mnt / "R"
    os.mkdir(new)
    skip = set()
    if tool == "cp":
        order = inode_order(copy)
        r = run("cp", "-a", f"{copy}/.", str(new))
    elif tool == "rsync":
        second_over(copy)
        order = rsync_order(copy)
        skip = rsync_may_skip(copy, new, order)
        r = run("rsync", "-a", f"{copy}/", f"{new}/")
    else:
        arch = tmp_path / "copy.tar"
        clean(run("tar", "cf", arch, "-C", tmp_path, "copy"))
        order = tar_order(arch, "copy")
        r = run("tar", "xf", arch, "-C", new, "--strip-components=1")
    assert broken_restore_errors(tool, new, r), (r.returncode, r.stderr)
    # everything else came back
    want = user_data(s, generated=False, times=TIMES[tool])
    want["request.json"] = read_bytes(mnt / "fresh" / "request.json")
    del want["rounds/2.json"]
    got = user_data(new, generated=False, times=TIMES[tool])
    assert got == want, diff_keys(want, got)
    assert "rounds/2.json" not in os.listdir(new / "rounds")
    # no temporary file of rsync's is left
    for folder in (new, new / "nodes", new / "rounds"):
        assert not [n for n in os.listdir(folder) if n.startswith(".")], \
            folder
    # a line per refused piece, and the dropped writes that differed
    want_log = expected_log(order, moved=tool == "rsync",
                            refused=set(BROKEN), may_skip=skip)
    assert log_matches(log_lines(new), want_log, tool == "rsync"), (
        status_of(new)[1], want_log)
    problems, log = status_of(new)
    refusals = [(p, m) for p, m in log
                if not m.startswith("flowfs makes th")]
    assert sorted(p for p, _ in refusals) == sorted(BROKEN)
    for path, message in refusals:
        assert BROKEN[path] in message, (path, message)
    refused = dict(refusals)
    # request.json and round 2 are still what was refused; the node came
    # back whole with parameters.json, which ends its refusal when it
    # comes after it (rsync sends parameters.json first)
    assert problems[0] == "missing required inputs: description"
    want = [
        f"request.json: your last write was refused: {refused['request.json']};"
        " the file still holds the earlier version",
        f"rounds/2.json: your last write was refused: {refused['rounds/2.json']};"
        " the file was not made"]
    paths = [path for path, _ in order]
    if paths.index("parameters.json") < paths.index("nodes/n2.json"):
        want.append("nodes/n2.json: your last write was refused:"
                    f" {refused['nodes/n2.json']}; the file still holds the"
                    " earlier version")
    assert sorted(problems[1:]) == sorted(want)


# -- 5. cp -r into a folder that does not exist yet -------------------------------

def test_cp_r_into_a_new_folder_restores_nothing(flowfs, tmp_path):
    """A user restores a backup with `cp -r COPY mnt/NEW`, NEW not existing.
    cp makes NEW (a new session, born with its files and folders) and, as
    it assumes a folder it just made is empty, creates each name with
    O_CREAT|O_EXCL (mkdir, symlink): every name a session has fails with
    "File exists", and a folder that fails is skipped whole, so nothing of
    the user's arrives: not uploads/, output/, nodes/, edges/ nor rounds/.
    The way to restore is mkdir NEW, then `cp -a COPY/. mnt/NEW/`.
    Issue 29: NEW is left behind, which the README says, with the ways on
    from there: cp -a COPY/. into it restores, rmdir removes it; cp -r
    again makes a folder COPY inside it, without a word."""
    mnt = flowfs.mnt
    s = mnt / "S"
    copy = tmp_path / "copy"
    fill_session(s, copy_to=copy)
    os.mkdir(mnt / "fresh")
    new = mnt / "NEW"
    r = run("cp", "-r", copy, new)
    assert r.returncode == 1
    folders = {"uploads", "output", "nodes", "edges", "rounds",
               "parameters_output", "jobs"}
    files = SESSION_ENTRIES - folders
    assert sorted(r.stderr.splitlines()) == sorted(
        [f"cp: cannot create directory '{new}/{n}': File exists"
         for n in folders] +
        [f"cp: cannot create regular file '{new}/{n}': File exists"
         for n in files]), r.stderr
    # nothing arrived: NEW is a session as mkdir makes it
    assert sorted(os.listdir(new)) == sorted(SESSION_ENTRIES)
    for folder in ("uploads", "output", "nodes", "edges", "rounds"):
        assert os.listdir(new / folder) == [], folder
    doc = json.loads(read_bytes(new / "session.json"))
    assert (doc["skill"], doc["title"]) == (None, "")
    for name in ("request.json", "context.json"):
        assert read_bytes(new / name) == read_bytes(mnt / "fresh" / name)
    graph = json.loads(read_bytes(new / "parameters.json"))
    assert (graph["nodes"], graph["edges"]) == ([], [])
    # prompt.txt, skill and summary.json, absent in an unbound session,
    # were made and taken (dropped): only prompt.txt's bytes are logged
    problems, log = status_of(new)
    assert problems == ["ready"]
    assert log == [("prompt.txt", "flowfs makes this file: the "
                    f"{os.path.getsize(copy / 'prompt.txt')} bytes written"
                    " to it were dropped")]
    # the same cp -r again copies COPY into NEW, as a folder, silently
    clean(run("cp", "-r", copy, new))
    assert sorted(os.listdir(new / "copy")) == sorted(os.listdir(copy))
    clean(run("rm", "-rf", new / "copy"))
    # NEW holds nothing of the user's: rmdir takes it; or the copy goes
    # into it as the README says
    clean(run("rmdir", new))
    assert run("cp", "-r", copy, new).returncode == 1
    clean(run("cp", "-a", f"{copy}/.", f"{new}/"))
    assert user_data(new) == user_data(s)


# -- 6. rsync of a session back onto itself ---------------------------------------

def test_rsync_refresh_changes_nothing(flowfs, tmp_path):
    """A user keeps a backup fresh with rsync: `rsync -a mnt/S/ backup/`,
    then the same again, and `rsync -a backup/ mnt/S/` (the backup onto the
    session it came from), and `rsync -a mnt/S/ mnt/S/`.  Nothing has
    changed, so rsync transfers nothing (-i itemizes nothing), prints
    nothing, and the session and its log stay as they were."""
    s = flowfs.mnt / "S"
    before, shown = fill_session(s), listing(s)
    backup = tmp_path / "backup"
    second_over(s)
    clean(run("rsync", "-a", f"{s}/", f"{backup}/"))
    for src, dst in ((s, backup), (backup, s), (s, s)):
        r = run("rsync", "-ai", f"{src}/", f"{dst}/")
        assert (r.returncode, r.stdout, r.stderr) == (0, "", ""), (r.args, r)
    assert user_data(s) == before
    assert listing(s) == shown
    assert listing(backup) == shown
    assert status_of(s) == (["ready"], [])


# -- 7. tar x of reserved names (it looped for ever) ------------------------------

def test_tar_x_of_status_and_session_json_finishes(flowfs, tmp_path):
    """A user extracts with plain `tar xf` an archive holding a file named
    status into a session, then one holding a valid session.json.  tar
    finds the names there, unlinks and creates them again: it finishes
    (before it looped at 100 % CPU), status is still what flowfs makes,
    the written status is logged as dropped, and session.json has the
    archive's title."""
    s = flowfs.mnt / "T"
    os.mkdir(s)
    src = tmp_path / "src"
    src.mkdir()
    (src / "status").write_bytes(b"fake\n")
    (src / "session.json").write_text(
        json.dumps({"id": "elsewhere", "created": "2020-01-01T00:00:00Z",
                    "title": "from tar"}))
    clean(run("tar", "cf", tmp_path / "status.tar", "-C", src, "status"))
    clean(run("tar", "cf", tmp_path / "session.tar", "-C", src,
              "session.json"))
    clean(run("tar", "xf", tmp_path / "status.tar", "-C", s))
    assert read_bytes(s / "status") == b"ready\n"
    assert status_of(s) == (["ready"], [
        ("status", "flowfs makes this file: the 5 bytes written to it"
                   " were dropped")])
    clean(run("tar", "xf", tmp_path / "session.tar", "-C", s))
    doc = json.loads(read_bytes(s / "session.json"))
    assert (doc["id"], doc["title"], doc["skill"]) == ("T", "from tar", None)
    assert doc["created"] != "2020-01-01T00:00:00Z"
    assert read_bytes(s / "status") == b"ready\n"
    assert len(status_of(s)[1]) == 1


def test_tar_x_of_a_name_that_cannot_be_replaced_fails_once(flowfs, tmp_path):
    """A user extracts an archive holding a link named status and a file
    named uploads into a session.  Neither can be what the session holds
    there (a generated file, a folder): tar reports each once and exits
    2; it does not go round its unlink-and-retry loop."""
    s = flowfs.mnt / "T"
    os.mkdir(s)
    src = tmp_path / "src"
    src.mkdir()
    os.symlink("elsewhere", src / "status")
    (src / "uploads").write_bytes(b"x\n")
    clean(run("tar", "cf", tmp_path / "odd.tar", "-C", src, "status",
              "uploads"))
    r = run("tar", "xf", tmp_path / "odd.tar", "-C", s)
    assert r.returncode == 2, r
    lines = r.stderr.splitlines()
    assert len(lines) == 3, r.stderr
    assert lines[0].startswith("tar: status: Cannot create symlink to ")
    assert lines[0].endswith(": Operation not permitted")
    assert lines[1] == "tar: uploads: Cannot open: File exists"
    assert lines[2].startswith("tar: Exiting with failure status")
    assert read_bytes(s / "status") == b"ready\n"
    assert os.path.isdir(s / "uploads") and os.listdir(s / "uploads") == []
    assert put(s / "uploads" / "a", b"a") == 0


# -- the README's commands, run as written --------------------------------------

def test_readme_backup_and_restore_commands(flowfs, tmp_path):
    """The README's commands, as written but for the paths: each way to
    copy a session out, then each way to bring it back."""
    section = readme_section("Back up, restore, duplicate")
    out_block, in_block = re.findall(r"```sh\n(.*?)```", section, re.S)
    home = tmp_path / "home"
    (home / "backup").mkdir(parents=True)
    mnt = flowfs.mnt
    want = fill_session(mnt / "demo")
    second_over(mnt / "demo")       # for rsync, see second_over()

    def sh(line):
        line = line.replace("~/", f"{home}/")
        line = re.sub(r"(?<![\w/.-])mnt(?=/|\s|$)", str(mnt), line)
        r = subprocess.run(["bash", "-c", line], cwd=home, capture_output=True,
                           text=True, timeout=TOOL_TIMEOUT)
        clean(r)

    outs = [l for l in out_block.splitlines() if l.strip()]
    assert [l.split()[0] for l in outs] == ["mkdir", "cp", "rsync", "tar"]
    sh(outs[0])
    sh(outs[2])     # rsync into the folder cp then finds there: the same
    sh(f"rm -rf ~/backup/demo && {outs[1]}")
    sh(outs[3])
    ways = [l for l in in_block.splitlines()
            if l.strip() and not l.startswith("mkdir")]
    assert len(ways) == 3
    for i, way in enumerate(ways):
        way = way.removeprefix("# or: ")
        target = f"demo{i + 2}"
        sh(f"mkdir mnt/{target} && " + way.replace("demo2", target))
        times = TIMES[way.split()[0]]
        assert user_data(mnt / target, times=times) == \
            user_data(mnt / "demo", times=times), way
    assert user_data(mnt / "demo") == want
