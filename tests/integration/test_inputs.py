"""Issue 3: the input protocol of a session bound to a skill — request.json,
uploads/ key matching, input.json, parameter.json, the status readiness
lines, prompt.txt and output/.manifest.json.  Plain file I/O through the
mounted filesystem only.

Expected JSON is Python's json.dumps(obj, indent=2, ensure_ascii=False) of an
object built here from the rules of issue 3; expected prompts are Python
Jinja2's rendering of the same template with a context built the same way.
"""

import errno
import json
import os
import re
import shutil

import pytest

from conftest import (DEFAULT_PROMPT, bind, dumps, errname, expect,
                      jinja_render, oserror, prompt_context, put, put_json,
                      read_bytes, status_json, status_of, write_bytes)

EMPTY_REQUEST = {"input": {}, "parameter": {}}


def open_write(path):
    os.close(os.open(path, os.O_WRONLY))


def json_file(path):
    """The bytes of a generated JSON file, checking st_size against them."""
    data = read_bytes(path)
    assert os.stat(path).st_size == len(data), path
    return data


def shows(path, obj):
    assert json_file(path).decode() == dumps(obj)


def upload(session, name, data=b"x\n"):
    write_bytes(session / "uploads" / name, data)
    return str(session / "uploads" / name)


def prompt_of(session):
    data = read_bytes(session / "prompt.txt")
    assert os.stat(session / "prompt.txt").st_size == len(data)
    return data.decode()


# -- a skill that uses every kind of input -----------------------------------

FORM_INPUT = {
    "type": "object",
    "properties": {
        "input_file": {"type": "string", "x-input-source": "file",
                       "extensions": [".txt", ".md"]},
        "source_image": {"type": "string"},
        "query": {"type": "string", "x-input-source": "inline"},
        "items": {"type": "array", "items": {"type": "integer"},
                  "x-input-source": "inline"},
        "extra": {"type": "string", "x-input-source": "somewhere"},
        "notes": {"type": "object", "x-input-source": "inline"},
    },
    "required": ["input_file", "source_image", "query"],
}

FORM_PARAMETER = {
    "type": "object",
    "definitions": {"lang": {"type": "string", "enum": ["en", "zh"]}},
    "$defs": {"pos": {"type": "integer", "minimum": 1}},
    "properties": {
        "divisor": {"type": "integer", "minimum": 1, "default": 1},
        "language": {"$ref": "#/definitions/lang"},
        "retries": {"$ref": "#/$defs/pos"},
        "temperature": {"type": "number", "default": 0.5},
        "scale": {"type": "number", "default": 1.0},
        "tags": {"type": "array", "default": ["a", "ü"]},
        "opts": {"type": "object", "default": {"k": None, "on": True}},
        "mode": {"type": "string"},
    },
    "required": ["mode", "divisor"],
    "additionalProperties": False,
}

FORM_OUTPUT = {
    "type": "object",
    "properties": {
        "digest_path": {"type": "string", "x-type": "artifact",
                        "x-role": "digest", "x-filename": "digest.md"},
        "metadata": {"type": "object"},
        "raw": {"type": "string", "x-type": "file"},
        "plot": {"type": "string", "x-type": "artifact", "x-role": "figure"},
        "log": {"type": "string", "x-type": "artifact",
                "x-filename": "run.log"},
        "note": {"type": "string", "x-type": "text"},
    },
    "required": ["digest_path", "metadata", "plot"],
}


@pytest.fixture
def form(skill_folder, mount_skills):
    """(mount, session) with session s bound to skill "form"."""
    skill_folder.add("form", input=FORM_INPUT, parameter=FORM_PARAMETER,
                     output=FORM_OUTPUT, engines=("gemini", "codex"))
    fs = mount_skills()
    s = fs.mnt / "s"
    os.mkdir(s)
    assert bind(s, "form") == 0
    return fs, s


# -- request.json --------------------------------------------------------------

def test_request_unbound(mnt):
    """With no skill bound, a request is kept for its shape only (a copy
    of a session comes back in any order); binding a skill checks it."""
    os.mkdir(mnt / "s")
    s = mnt / "s"
    shows(s / "request.json", EMPTY_REQUEST)
    assert put_json(s / "request.json", {"input": {"q": 1}}) == 0
    shows(s / "request.json", {"input": {"q": 1}, "parameter": {}})
    assert put_json(s / "request.json", {"input": []}) == errno.EINVAL
    assert put_json(s / "request.json", {"x": {}}) == errno.EINVAL
    shows(s / "request.json", {"input": {"q": 1}, "parameter": {}})
    assert status_of(s) == (["request.json: your last write was refused:"
                             " unknown key 'x' (request.json has input,"
                             " parameter); the file still holds the earlier"
                             " version"], [
        ("request.json", "input must be an object"),
        ("request.json", "unknown key 'x' (request.json has input,"
         " parameter)")])
    # bound to a skill it does not fit: status says so
    assert bind(s, "datcom") == 0
    assert "request.json: unknown input key 'q'" in status_of(s)[0]


def shown_request(req):
    """request.json as flowfs shows it: both parts, input first."""
    return {"input": req.get("input", {}), "parameter": req.get("parameter", {})}


def test_request_shown_reserialized(form):
    _, s = form
    shows(s / "request.json", EMPTY_REQUEST)
    text = ('{"parameter":{"mode":"fást \\"x\\"","temperature":1.0,"divisor":3,'
            '"scale":1e20,"tags":[]},"input":{"query":"q\\u00e9","items":[1,2]}}')
    assert put(s / "request.json", text) == 0
    shows(s / "request.json", shown_request(json.loads(text)))


def test_request_survives_remount(form):
    fs, s = form
    req = {"input": {"query": "ü"}, "parameter": {"mode": "m", "divisor": 2}}
    assert put_json(s / "request.json", req) == 0
    fs.remount()
    shows(s / "request.json", req)


GOOD_REQUEST = {"input": {"query": "first"}, "parameter": {"mode": "fast",
                                                           "divisor": 2}}

# body (object or raw text) → the exact status message, or a regex for it
REQUEST_REFUSALS = {
    "top-level-key": ({"input": {}, "x": 1},
                      "unknown key 'x' (request.json has input, parameter)"),
    "unknown-input": ({"input": {"k": 1}}, "unknown input key 'k'"),
    "file-given-inline": ({"input": {"input_file": "/etc/passwd"}},
                          "key 'input_file' is file-sourced; write it to "
                          "uploads/input_file or give an http:// or https://"
                          " URL to fetch it from"),
    "unknown-source-is-file": ({"input": {"extra": "x"}},
                               "key 'extra' is file-sourced; write it to "
                               "uploads/extra or give an http:// or https://"
                               " URL to fetch it from"),
    "file-given-as-ftp": ({"input": {"input_file": "ftp://example.com/a.txt"}},
                          "key 'input_file' is file-sourced; write it to "
                          "uploads/input_file or give an http:// or https://"
                          " URL to fetch it from"),
    "inline-type": ({"input": {"query": 1.5}},
                    "input.query: expected a string, got a number"),
    "inline-items": ({"input": {"items": [1, "two"]}},
                     re.compile(r"input\.items\S*: .+")),
    "inline-object": ({"input": {"notes": "text"}},
                      re.compile(r"input\.notes: expected an object.*")),
    "parameter-minimum": ({"parameter": {"mode": "m", "divisor": 0}},
                          "parameter.divisor: 0 is less than the minimum of 1"),
    "ref-definitions": ({"parameter": {"language": "fr"}},
                        re.compile(r"parameter\.language: .+")),
    "ref-defs": ({"parameter": {"retries": 0}},
                 "parameter.retries: 0 is less than the minimum of 1"),
    "additional-parameter": ({"parameter": {"colour": "red"}},
                             re.compile(r"parameter\S*: .*colour.*")),
    "parameter-type": ({"parameter": {"mode": ["m"]}},
                       re.compile(r"parameter\.mode: expected a string, got an? .+")),
    "not-an-object": ([GOOD_REQUEST], None),
    "input-not-object": ({"input": [1]}, None),
    "parameter-not-object": ({"parameter": "x"}, None),
    "syntax": ('{"input": {"query": "q"}\n', re.compile(
        r"line \d+, column \d+: .+")),
    "two-documents": ('{"input": {}} {"input": {}}', None),
}


@pytest.mark.parametrize("case", sorted(REQUEST_REFUSALS))
def test_request_refusals_keep_the_previous_version(form, case):
    _, s = form
    body, message = REQUEST_REFUSALS[case]
    assert put_json(s / "request.json", GOOD_REQUEST) == 0
    before = json_file(s / "request.json")
    prompt_before = prompt_of(s)
    got = put(s / "request.json",
              body if isinstance(body, str) else json.dumps(body))
    assert got == errno.EINVAL, errname(got)
    assert json_file(s / "request.json") == before
    assert prompt_of(s) == prompt_before
    shows(s / "input.json", {"query": "first"})
    problems, log = status_of(s)
    assert len(log) == 1
    path, msg = log[0]
    assert path == "request.json"
    if isinstance(message, str):
        assert msg == message
    elif message is not None:
        assert message.fullmatch(msg), msg


def test_python_file_object_sees_the_refusal(form):
    _, s = form
    with pytest.raises(OSError) as e:
        with open(s / "request.json", "w") as f:
            json.dump({"input": {"k": 1}}, f)
    assert e.value.errno == errno.EINVAL
    shows(s / "request.json", EMPTY_REQUEST)


def test_missing_required_values_are_accepted(form):
    _, s = form
    assert put_json(s / "request.json", {"input": {}}) == 0
    shows(s / "request.json", EMPTY_REQUEST)
    assert put_json(s / "request.json", {}) == 0
    shows(s / "request.json", EMPTY_REQUEST)
    problems, log = status_of(s)
    assert log == []
    assert "missing required inputs: query" in problems
    # divisor is required too, but its schema default fills it.
    assert "missing required parameters: mode" in problems


def test_request_checked_on_fsync(form):
    _, s = form
    assert put_json(s / "request.json", GOOD_REQUEST) == 0
    before = json_file(s / "request.json")
    fd = os.open(s / "request.json", os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, b'{"input": {"nope": 1}}')
        assert oserror(os.fsync, fd) == errno.EINVAL
        assert json_file(s / "request.json") == before
    finally:
        oserror(os.close, fd)
    assert json_file(s / "request.json") == before
    assert ("request.json", "unknown input key 'nope'") in status_of(s)[1]


def test_request_checked_on_rename(form):
    """Editors save to a scratch file and rename it over the document."""
    _, s = form
    assert put_json(s / "request.json", GOOD_REQUEST) == 0
    before = json_file(s / "request.json")
    write_bytes(s / ".request.json.swp", b'{"parameter": {"divisor": 0}}')
    assert oserror(os.rename, s / ".request.json.swp",
                   s / "request.json") == errno.EINVAL
    assert json_file(s / "request.json") == before
    assert status_of(s)[1][-1] == (
        "request.json", "parameter.divisor: 0 is less than the minimum of 1")
    good = {"input": {"query": "renamed"}, "parameter": {"mode": "x",
                                                         "divisor": 1}}
    write_bytes(s / "request.json~new", json.dumps(good).encode())
    assert oserror(os.rename, s / "request.json~new", s / "request.json") == 0
    shows(s / "request.json", good)
    shows(s / "input.json", {"query": "renamed"})


# -- input.json and parameter.json --------------------------------------------

def test_unbound_input_and_parameter(mnt):
    os.mkdir(mnt / "s")
    shows(mnt / "s" / "input.json", {})
    shows(mnt / "s" / "parameter.json", {})
    assert not os.path.exists(mnt / "s" / "prompt.txt")


def test_input_json_in_schema_order(form):
    _, s = form
    shows(s / "input.json", {})
    img = upload(s, "source_image", b"\x89PNG")
    assert put_json(s / "request.json", {"input": {
        "notes": {"b": [1, 2.5, None], "a": "ü"}, "items": [3, 1],
        "query": "hello"}}) == 0
    doc = upload(s, "input_file.md", b"# doc\n")
    shows(s / "input.json", {
        "input_file": doc, "source_image": img, "query": "hello",
        "items": [3, 1], "notes": {"b": [1, 2.5, None], "a": "ü"}})
    extra = upload(s, "extra", b"")
    shows(s / "input.json", {
        "input_file": doc, "source_image": img, "query": "hello",
        "items": [3, 1], "extra": extra,
        "notes": {"b": [1, 2.5, None], "a": "ü"}})


def test_parameter_json_request_then_defaults(form):
    _, s = form
    shows(s / "parameter.json", {
        "divisor": 1, "temperature": 0.5, "scale": 1.0, "tags": ["a", "ü"],
        "opts": {"k": None, "on": True}})
    assert put_json(s / "request.json", {"parameter": {
        "mode": "m", "tags": [], "retries": 3, "language": "zh"}}) == 0
    shows(s / "parameter.json", {
        "mode": "m", "tags": [], "retries": 3, "language": "zh",
        "divisor": 1, "temperature": 0.5, "scale": 1.0,
        "opts": {"k": None, "on": True}})
    assert "1.0" in json_file(s / "parameter.json").decode()


def test_skill_without_parameter_schema(skill_folder, mount_skills):
    skill_folder.add("inl", input={"type": "object", "properties": {
        "q": {"type": "string", "x-input-source": "inline"},
        "n": {"type": "integer", "x-input-source": "inline", "minimum": 0},
        "f": {"type": "string"}}})
    fs = mount_skills()
    s = fs.mnt / "s"
    os.mkdir(s)
    assert bind(s, "inl") == 0
    shows(s / "parameter.json", {})
    assert put_json(s / "request.json", {"input": {"q": "x", "n": 2}}) == 0
    f = upload(s, "f")
    shows(s / "input.json", {"q": "x", "n": 2, "f": f})
    shows(s / "parameter.json", {"q": "x", "n": 2})
    assert put_json(s / "request.json", {"parameter": {"p": 1}}) == errno.EINVAL
    assert status_of(s)[1][-1][0] == "request.json"
    shows(s / "parameter.json", {"q": "x", "n": 2})


def test_input_schema_behind_a_ref(skill_folder, mount_skills):
    """A top-level "$ref" (inputs defined in "definitions") is followed for
    key matching, inline keys, required inputs and the manifest alike."""
    skill_folder.add("reffed", input={
        "$ref": "#/definitions/in",
        "definitions": {"in": {"type": "object", "properties": {
            "q": {"type": "string", "x-input-source": "inline"},
            "data": {"type": "string", "extensions": [".csv"]}},
            "required": ["data"]}}})
    fs = mount_skills()
    s = fs.mnt / "s"
    os.mkdir(s)
    assert bind(s, "reffed") == 0
    assert status_of(s)[0] == ["missing required input files: data"]
    assert put_json(s / "request.json", {"input": {"q": "hi"}}) == 0
    assert put_json(s / "request.json",
                    {"input": {"colour": "red"}}) == errno.EINVAL
    f = upload(s, "data.csv")
    shows(s / "input.json", {"q": "hi", "data": f})
    assert status_of(s)[0] == ["request.json: your last write was refused:"
                               " unknown input key 'colour'; the file still"
                               " holds the earlier version"]


def test_generated_files_drop_what_is_written(form):
    _, s = form
    before = {name: read_bytes(s / name) for name in
              ("input.json", "parameter.json", "prompt.txt",
               "output/.manifest.json")}
    for name in before:
        write_bytes(s / name, b"{}")
        assert oserror(os.truncate, s / name, 0) == 0
        assert read_bytes(s / name) == before[name]
    shows(s / "input.json", {})


# -- uploads/ key matching -------------------------------------------------------

MATCH_INPUT = {"type": "object", "properties": {
    "csv_file": {"type": "string", "extensions": [".csv"]},
    "notes": {"type": "string"},
    "doc": {"type": "string", "extensions": [".txt", ".md"]},
    "arch": {"type": "string", "extensions": [".tar.gz"]},
    "q": {"type": "string", "x-input-source": "inline"},
}}


@pytest.fixture
def match(skill_folder, mount_skills):
    skill_folder.add("match", input=MATCH_INPUT)
    fs = mount_skills()
    s = fs.mnt / "s"
    os.mkdir(s)
    assert bind(s, "match") == 0
    return s


# uploads name → (key it binds or None, problem line or None)
MATCH_CASES = {
    "csv_file": ("csv_file", None),
    "csv_file.csv": ("csv_file", None),
    "csv_file.CSV": ("csv_file", None),
    "csv_file.cSv": ("csv_file", None),
    "notes": ("notes", None),
    "notes.txt": (None, None),
    "notes.md": (None, None),
    "doc.MD": ("doc", None),
    "doc.txt": ("doc", None),
    "arch.tar.gz": ("arch", None),
    "Csv_file.csv": (None, None),
    "data.csv": (None, None),
    "csv_filecsv": (None, None),
    "my_csv_file.csv": (None, None),
    "q": (None, None),
    "csv_file.pdf": (None, "uploads/csv_file.pdf: extension .pdf not allowed "
                           "for csv_file (allowed: .csv)"),
    "doc.pdf": (None, "uploads/doc.pdf: extension .pdf not allowed for doc "
                      "(allowed: .txt, .md)"),
}


# Folders bind like files; disallowed extensions are checked on files only.
@pytest.mark.parametrize("name,kind", [
    (name, kind) for name in sorted(MATCH_CASES) for kind in ("file", "folder")
    if kind == "file" or MATCH_CASES[name][1] is None])
def test_key_matching(match, name, kind):
    s = match
    key, problem = MATCH_CASES[name]
    if kind == "file":
        path = upload(s, name)
    else:
        path = str(s / "uploads" / name)
        os.mkdir(path)
        write_bytes(os.path.join(path, "inside.csv"), b"1\n")
    shows(s / "input.json", {key: path} if key else {})
    assert status_of(s) == ([problem] if problem else ["ready"], [])


def test_folder_entries_below_the_top_do_not_bind(match):
    s = match
    os.makedirs(s / "uploads" / "sub")
    write_bytes(s / "uploads" / "sub" / "csv_file.csv", b"a\n")
    write_bytes(s / "uploads" / "sub" / "notes", b"a\n")
    shows(s / "input.json", {})


def test_two_candidates_bind_nothing(match):
    s = match
    upload(s, "csv_file")
    upload(s, "csv_file.csv")
    shows(s / "input.json", {})
    assert status_of(s)[0] == [
        "uploads/: 2 files could be input csv_file (csv_file, csv_file.csv); "
        "keep one"]
    os.unlink(s / "uploads" / "csv_file")
    shows(s / "input.json", {"csv_file": str(s / "uploads" / "csv_file.csv")})
    assert status_of(s)[0] == ["ready"]


def test_each_disallowed_candidate_has_a_line(match):
    s = match
    upload(s, "doc.pdf")
    upload(s, "doc.docx")
    shows(s / "input.json", {})
    problems, _ = status_of(s)
    assert sorted(problems) == [
        "uploads/doc.docx: extension .docx not allowed for doc (allowed: .txt, .md)",
        "uploads/doc.pdf: extension .pdf not allowed for doc (allowed: .txt, .md)"]


def test_allowed_candidate_wins_over_disallowed_ones(match):
    s = match
    upload(s, "doc.pdf")
    path = upload(s, "doc.md")
    shows(s / "input.json", {"doc": path})
    assert status_of(s)[0] == ["ready"]


def test_binding_follows_rename_and_unlink_at_once(match):
    s = match
    up = s / "uploads"
    write_bytes(up / "download.tmp", b"a,b\n")
    shows(s / "input.json", {})
    os.rename(up / "download.tmp", up / "csv_file.csv")
    shows(s / "input.json", {"csv_file": str(up / "csv_file.csv")})
    os.rename(up / "csv_file.csv", up / "csv_file.pdf")
    shows(s / "input.json", {})
    assert status_of(s)[0] == [
        "uploads/csv_file.pdf: extension .pdf not allowed for csv_file "
        "(allowed: .csv)"]
    os.rename(up / "csv_file.pdf", up / "csv_file")
    shows(s / "input.json", {"csv_file": str(up / "csv_file")})
    os.unlink(up / "csv_file")
    shows(s / "input.json", {})
    os.mkdir(up / "staging")
    write_bytes(up / "staging" / "notes", b"n\n")
    os.rename(up / "staging" / "notes", up / "notes")
    shows(s / "input.json", {"notes": str(up / "notes")})
    os.rename(up / "notes", up / "staging" / "notes")
    shows(s / "input.json", {})
    os.rename(up / "staging", up / "notes")
    shows(s / "input.json", {"notes": str(up / "notes")})
    shutil.rmtree(up / "notes")
    shows(s / "input.json", {})


def test_read_right_after_close(skill_folder, mount_skills):
    """input.json, prompt.txt and status read on the next line after close."""
    skill_folder.add("one", input={"type": "object", "properties": {
        "data": {"type": "string", "extensions": [".csv"]}},
        "required": ["data"]},
        prompts={"gemini": "file={{ input.data }}"})
    fs = mount_skills()
    s = fs.mnt / "s"
    os.mkdir(s)
    assert bind(s, "one") == 0
    # Read once so that any kernel cache holds the unbound state.
    shows(s / "input.json", {})
    assert status_of(s)[0] == ["missing required input files: data"]
    assert prompt_of(s) == "file="
    fd = os.open(s / "uploads" / "data.csv", os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, b"1,2\n")
    os.close(fd)
    path = str(s / "uploads" / "data.csv")
    shows(s / "input.json", {"data": path})
    assert prompt_of(s) == f"file={path}"
    assert status_of(s)[0] == ["ready"]
    os.unlink(s / "uploads" / "data.csv")
    assert prompt_of(s) == "file="
    assert status_of(s)[0] == ["missing required input files: data"]


def test_paths_follow_a_renamed_session(match):
    s = match
    upload(s, "notes")
    os.rename(s, s.parent / "renamed")
    r = s.parent / "renamed"
    shows(r / "input.json", {"notes": str(r / "uploads" / "notes")})


# -- status readiness -----------------------------------------------------------

def test_status_problem_order(form):
    _, s = form
    assert status_of(s) == ([
        "missing required input files: input_file, source_image",
        "missing required inputs: query",
        "missing required parameters: mode",
    ], [])
    upload(s, "input_file.pdf")
    upload(s, "source_image")
    assert status_of(s)[0] == [
        "uploads/input_file.pdf: extension .pdf not allowed for input_file "
        "(allowed: .txt, .md)",
        "missing required input files: input_file",
        "missing required inputs: query",
        "missing required parameters: mode",
    ]
    assert put_json(s / "request.json", {"input": {"query": "q"}}) == 0
    assert status_of(s)[0] == [
        "uploads/input_file.pdf: extension .pdf not allowed for input_file "
        "(allowed: .txt, .md)",
        "missing required input files: input_file",
        "missing required parameters: mode",
    ]
    os.rename(s / "uploads" / "input_file.pdf", s / "uploads" / "input_file.txt")
    assert status_of(s)[0] == ["missing required parameters: mode"]
    assert put_json(s / "request.json", {"input": {"query": "q"},
                                         "parameter": {"mode": "x"}}) == 0
    assert status_of(s) == (["ready"], [])


def test_status_problems_then_refused_writes(form):
    _, s = form
    assert put_json(s / "request.json", {"input": {"bad": 1}}) == errno.EINVAL
    assert put_json(s / "session.json", {"skill": "nope"}) == errno.EINVAL
    problems, log = status_of(s)
    assert problems[0].startswith("missing required input files")
    assert log == [("request.json", "unknown input key 'bad'"),
                   ("session.json", 'unknown skill "nope" (see .flowfs/skills/)')]


def test_status_request_and_prompt_lines_last(skill_folder, mount_skills):
    skill_folder.add("a", input={"type": "object", "properties": {
        "q": {"type": "string", "x-input-source": "inline"}}})
    skill_folder.add("b", input={"type": "object", "properties": {
        "f": {"type": "string"}}, "required": ["f"]},
        parameter={"type": "object", "properties": {"p": {"type": "integer"}},
                   "required": ["p"]},
        prompts={"gemini": "fine\n{{ input.f }}\n  {% macro m() %}{% endmacro %}"})
    fs = mount_skills()
    s = fs.mnt / "s"
    os.mkdir(s)
    assert bind(s, "a") == 0
    assert put_json(s / "request.json", {"input": {"q": "x"}}) == 0
    assert bind(s, "b") == 0
    problems, _ = status_of(s)
    assert problems[:3] == ["missing required input files: f",
                            "missing required parameters: p",
                            "request.json: unknown input key 'q'"]
    assert len(problems) == 4
    assert re.fullmatch(r"prompt\.txt: line 3, column \d+: .*macro.*",
                        problems[3]), problems[3]


# The Skill-Runner demo's shape (issue 29): a required CSV file, a required
# parameter, a schema silent on undeclared names; and an optional input.
PANDAS_INPUT = {"type": "object", "properties": {
    "csv_file": {"type": "string", "extensions": [".csv"]},
    "labels": {"type": "string"}}, "required": ["csv_file"]}
PANDAS_PARAMETER = {"type": "object", "properties": {
    "column": {"type": "string"}}, "required": ["column"]}


@pytest.fixture
def pandas(skill_folder, mount_skills):
    skill_folder.add("pandas", input=PANDAS_INPUT, parameter=PANDAS_PARAMETER)
    skill_folder.add("open", input=PANDAS_INPUT, parameter={
        **PANDAS_PARAMETER, "additionalProperties": True})
    fs = mount_skills()
    s = fs.mnt / "s"
    os.mkdir(s)
    assert bind(s, "pandas") == 0
    return s


def test_an_upload_under_another_name_is_named(pandas, tmp_path):
    """Issue 29: uploads/data.csv for input csv_file bound nothing and
    status said only that csv_file was missing.  It names what binds
    nothing and the names that would bind, beside that line; once nothing is
    missing, status reads exactly "ready" and status.json's notes say
    it."""
    s = pandas
    data = tmp_path / "data.csv"
    data.write_bytes(b"a,b\n1,2\n")
    shutil.copy(data, s / "uploads")
    assert status_of(s) == ([
        "missing required input files: csv_file",
        "uploads/: data.csv binds no input; the names that would bind: csv_file,"
        " csv_file.csv, labels",
        "missing required parameters: column"], [])
    os.rename(s / "uploads" / "data.csv", s / "uploads" / "csv_file.csv")
    assert status_of(s) == (["missing required parameters: column"], [])
    assert put_json(s / "request.json", {"parameter": {"column": "a"}}) == 0
    shutil.copy(data, s / "uploads" / "notes.txt")
    assert status_of(s) == (["ready"], [])
    assert status_json(s)["notes"] == [
        "uploads/: notes.txt binds no input; the names that would bind: labels"]
    os.rename(s / "uploads" / "notes.txt", s / "uploads" / "labels")
    assert status_json(s)["notes"] == []


def test_a_misspelled_parameter_is_named(pandas):
    """Issue 29: a parameter the skill does not have ("colum") was stored
    silently where the schema does not forbid it.  It is a status line
    until it is mended; a skill whose schema takes undeclared names
    (additionalProperties) gets it in status.json's notes, ready."""
    s = pandas
    write_bytes(s / "uploads" / "csv_file.csv", b"a,b\n1,2\n")
    assert put_json(s / "request.json", {"parameter": {"colum": "a"}}) == 0
    assert status_of(s) == ([
        "missing required parameters: column",
        'request.json: skill pandas has no parameter "colum" (it has:'
        ' column)'], [])
    assert put_json(s / "request.json",
                    {"parameter": {"column": "a", "colour": "red"}}) == 0
    assert status_of(s)[0] == [
        'request.json: skill pandas has no parameter "colour" (it has:'
        ' column)']
    assert bind(s, "open") == 0
    assert status_of(s) == (["ready"], [])
    assert status_json(s)["notes"] == [
        'request.json: skill open declares no parameter "colour" (it has:'
        ' column); it is passed on as given, as its schema allows']
    assert json.loads(read_bytes(s / "parameter.json")) == {
        "column": "a", "colour": "red"}


# -- prompt.txt -----------------------------------------------------------------

def runner_of(skill_folder, sid):
    return json.loads((skill_folder.root / sid / "assets" / "runner.json")
                      .read_text())


def test_default_prompt(form, skill_folder):
    fs, s = form
    img = upload(s, "source_image")
    req = {"input": {"items": [1, 2], "query": "what's \"this\"?"},
           "parameter": {"mode": "fást", "divisor": 4}}
    assert put_json(s / "request.json", req) == 0
    inp = {"source_image": img, "query": "what's \"this\"?", "items": [1, 2]}
    par = {"mode": "fást", "divisor": 4, "temperature": 0.5, "scale": 1.0,
           "tags": ["a", "ü"], "opts": {"k": None, "on": True}}
    shows(s / "input.json", inp)
    shows(s / "parameter.json", par)
    ctx = prompt_context(fs, "s", runner_of(skill_folder, "form"), "form",
                         inp, par)
    expected = jinja_render(DEFAULT_PROMPT, ctx)
    assert "{'k': None, 'on': True}" in expected     # the model is sane
    assert prompt_of(s) == expected


def test_prompt_per_engine(skill_folder, mount_skills):
    prompts = {"gemini": "G: {{ input.q }} via {{ skill.engines[0] }}",
               "codex": "C: {{ input.q | upper }} {{ skill_id }}\n"}
    skill_folder.add("eng", input={"type": "object", "properties": {
        "q": {"type": "string", "x-input-source": "inline"}}},
        engines=("gemini", "codex", "iflow"), prompts=prompts)
    fs = mount_skills()
    s = fs.mnt / "s"
    os.mkdir(s)
    runner = runner_of(skill_folder, "eng")
    for engine, template in [("gemini", prompts["gemini"]),
                             ("codex", prompts["codex"]),
                             ("iflow", DEFAULT_PROMPT)]:
        assert bind(s, "eng", engine=engine) == 0
        assert put_json(s / "request.json", {"input": {"q": engine}}) == 0
        ctx = prompt_context(fs, "s", runner, "eng", {"q": engine}, {"q": engine})
        assert prompt_of(s) == jinja_render(template, ctx), engine
    assert prompt_of(s).startswith('Please call the skill named "eng".')


FEATURES = """{# a comment
   over two lines #}
Skill {{ skill_id }} v{{ skill.version }} ({{ skill['id'] }}) {{ skill.engines[1] }}
Run: {{ run_dir }} / {{ skill_dir }}
{%- if input.query is defined %}
Query: [{{ input.query | trim | upper }}]
{%- elif input['items'] %}
no query
{%- else %}
nothing
{%- endif %}
{% if input.missing is defined %}bad{% else %}undefined ok{% endif %}
Items: {{ input['items'] | join(', ') }} n={{ input['items'] | length }} {{ input.query | length }}
{% for x in input['items'] -%}
  <{{ x }}>
{%- endfor %}
{% for k, v in parameter.items() %}{{ k }}={{ v }};{% endfor %}
Missing: "{{ parameter.nothing }}" "{{ nothere }}" {{ parameter.nothing | default('dflt') }} {{ parameter.mode | default('unused') }}
{% if not parameter.flag and parameter.mode == 'fast' or parameter.mode != "slow" %}logic{% endif %}
{% if parameter.count == 3 and parameter.flag == false %}eq{% endif %}{% if parameter.none_value == none %}none{% endif %}
Literals: {{ "MiXeD" | lower }} {{ 'single' }} {{ 42 }} {{ 1.5 }} {{ -7 }}
JSON: {{ parameter | tojson }}
Str: {{ parameter.none_value }} {{ parameter.flag }} {{ parameter.tags }} {{ parameter.opts }} {{ parameter.big }} {{ parameter.small }} {{ parameter.whole }}
Strings: {{ parameter.tags | join('|') }} {{ input['items'] | join }} {{ parameter.opts | length }}
{{ params_json }}
{%- for k, v in input.items() %}
 - {{ k }}: {{ v }}
{%- endfor %}
end

"""


def test_prompt_template_subset_matches_jinja2(skill_folder, mount_skills):
    skill_folder.add("feat", input={"type": "object", "properties": {
        "query": {"type": "string", "x-input-source": "inline"},
        "items": {"type": "array", "x-input-source": "inline"},
        "csv": {"type": "string", "extensions": [".csv"]}}},
        parameter={"type": "object", "properties": {
            "mode": {"type": "string"}, "flag": {"type": "boolean"},
            "count": {"type": "integer", "default": 3},
            "none_value": {"type": "null", "default": None},
            "tags": {"type": "array"}, "opts": {"type": "object"},
            "big": {"type": "number"}, "small": {"type": "number"},
            "whole": {"type": "number"}}},
        engines=("codex", "gemini"), prompts={"codex": FEATURES})
    fs = mount_skills()
    s = fs.mnt / "s"
    os.mkdir(s)
    assert bind(s, "feat") == 0
    req = {"input": {"items": ["x", 2, None, True, 2.5, "ü"],
                     "query": "  Spaced <b>&'é'  "},
           "parameter": {"mode": "fast", "flag": False,
                         "tags": ["a", "it's", None, 1.0, [2]],
                         "opts": {"z": 1, "a": "<&>", "m": {"n": []}},
                         "big": 1e20, "small": 1e-07, "whole": 100.0}}
    assert put_json(s / "request.json", req) == 0
    csv = upload(s, "csv.CSV")
    inp = {"query": req["input"]["query"], "items": req["input"]["items"],
           "csv": csv}
    par = dict(req["parameter"], count=3, none_value=None)
    shows(s / "input.json", inp)
    shows(s / "parameter.json", par)
    ctx = prompt_context(fs, "s", runner_of(skill_folder, "feat"), "feat",
                         inp, par)
    expected = jinja_render(FEATURES, ctx)
    assert "1e+20" in expected and "\\u003c" in expected   # sane model
    got = prompt_of(s)
    assert got == expected


@pytest.mark.parametrize("template", ["a\n", "a\n\n", "a", "", "\n",
                                      "{% if true %}\n{% endif %}\n"])
def test_prompt_trailing_newline(skill_folder, mount_skills, template):
    skill_folder.add("nl", input={"type": "object", "properties": {}},
                     prompts={"gemini": template})
    fs = mount_skills()
    os.mkdir(fs.mnt / "s")
    assert bind(fs.mnt / "s", "nl") == 0
    ctx = prompt_context(fs, "s", runner_of(skill_folder, "nl"), "nl", {}, {})
    assert prompt_of(fs.mnt / "s") == jinja_render(template, ctx)


# template → (line, a word the message must name)
OUTSIDE_SUBSET = {
    "macro": ("Hello\n{{ input.q }}\n{% macro f(x) %}{{ x }}{% endmacro %}\n",
              3, "macro"),
    "set": ("{% set x = 1 %}{{ x }}", 1, "set"),
    "filter": ("a\nb\n{{ input.q | title }}", 3, "title"),
    "arithmetic": ("x\n{{ 1 + 2 }}", 2, "+"),
    "include": ("{% include 'other.txt' %}", 1, "include"),
    "raw": ("one\n{% raw %}{{ x }}{% endraw %}", 2, "raw"),
    "method": ("{{ input.keys() }}", 1, "method call"),
    "list-literal": ("{{ ['a', 1] | join }}", 1, "list"),
    # Jinja2 itself reports a missing end tag where the template ends.
    "unclosed": ("a\n{% for x in input %}\nb", 3, "endfor"),
}


@pytest.mark.parametrize("case", sorted(OUTSIDE_SUBSET))
def test_prompt_outside_the_subset(skill_folder, mount_skills, case):
    template, line, word = OUTSIDE_SUBSET[case]
    skill_folder.add("odd", input={"type": "object", "properties": {
        "q": {"type": "string", "x-input-source": "inline"}}},
        prompts={"gemini": template})
    fs = mount_skills()
    s = fs.mnt / "s"
    os.mkdir(s)
    assert bind(s, "odd") == 0
    assert put_json(s / "request.json", {"input": {"q": "v"}}) == 0
    assert "prompt.txt" not in os.listdir(s)
    expect(errno.ENOENT, os.open, s / "prompt.txt", os.O_RDONLY)
    problems, _ = status_of(s)
    assert len(problems) == 1, problems
    m = re.fullmatch(r"prompt\.txt: line (\d+), column \d+: (.+)", problems[0])
    assert m, problems[0]
    assert int(m.group(1)) == line
    assert word in m.group(2), problems[0]
    # The other engine has no template of its own: the default renders.
    assert bind(s, "odd", engine="codex") == 0
    assert status_of(s)[0] == ["ready"]
    assert prompt_of(s).startswith('Please call the skill named "odd".')


def test_prompt_render_error_is_not_garbage(skill_folder, mount_skills):
    """Jinja2 raises UndefinedError here: no prompt.txt, a status line."""
    template = "ok\n{{ input.missing.deeper }}"
    jinja2 = pytest.importorskip("jinja2")
    with pytest.raises(jinja2.UndefinedError):
        jinja_render(template, {"input": {}})
    skill_folder.add("err", input={"type": "object", "properties": {}},
                     prompts={"gemini": template})
    fs = mount_skills()
    s = fs.mnt / "s"
    os.mkdir(s)
    assert bind(s, "err") == 0
    expect(errno.ENOENT, os.stat, s / "prompt.txt")
    problems, _ = status_of(s)
    assert len(problems) == 1 and re.fullmatch(
        r"prompt\.txt: line 2, column \d+: .+", problems[0]), problems


# -- output/ and its manifest ---------------------------------------------------

def manifest_of(output_schema):
    """The artifacts issue 3 derives from an output schema."""
    required = output_schema.get("required", [])
    return [{"role": p.get("x-role", "output"),
             "pattern": p.get("x-filename", k),
             "required": k in required}
            for k, p in output_schema.get("properties", {}).items()
            if p.get("x-type") in ("artifact", "file")]


def test_manifest(form):
    _, s = form
    expected = manifest_of(FORM_OUTPUT)
    assert [a["pattern"] for a in expected] == ["digest.md", "raw", "plot",
                                                "run.log"]
    shows(s / "output" / ".manifest.json", expected)


def test_manifest_without_output_schema(skill_folder, mount_skills):
    skill_folder.add("noout", input={"type": "object", "properties": {}})
    fs = mount_skills()
    os.mkdir(fs.mnt / "s")
    assert bind(fs.mnt / "s", "noout") == 0
    shows(fs.mnt / "s" / "output" / ".manifest.json", [])


def test_output_folder_holds_artifacts(form):
    fs, s = form
    out = s / "output"
    assert os.listdir(out) == [".manifest.json"]
    write_bytes(out / "digest.md", b"# digest\n")
    os.mkdir(out / "figs")
    write_bytes(out / "figs" / "p.png", b"\x89PNG")
    assert sorted(os.listdir(out)) == [".manifest.json", "digest.md", "figs"]
    expect(errno.ENOTEMPTY, os.rmdir, out)
    fs.remount()
    assert read_bytes(out / "digest.md") == b"# digest\n"
    shutil.rmtree(out / "figs")
    os.unlink(out / "digest.md")
    # Only the generated manifest is left: rmdir succeeds and output/ returns.
    assert oserror(os.rmdir, out) == 0
    assert os.path.isdir(out)
    shows(out / ".manifest.json", manifest_of(FORM_OUTPUT))


def test_unbound_output_folder(mnt):
    os.mkdir(mnt / "s")
    out = mnt / "s" / "output"
    assert os.listdir(out) == []
    write_bytes(out / "a.txt", b"a")
    assert read_bytes(out / "a.txt") == b"a"
    os.unlink(out / "a.txt")
    assert oserror(os.rmdir, out) == 0
    assert os.path.isdir(out)


# -- the real skills -------------------------------------------------------------

def sample_value(prop):
    t = prop.get("type")
    if t == "integer":
        return max(2, prop.get("minimum", 2))
    if t == "number":
        return 2.5
    if t == "boolean":
        return True
    return "sample"


@pytest.mark.parametrize("sid", ["demo-bad-input", "demo-bible-verse",
                                 "demo-pandas-stats", "demo-prime-number"])
def test_real_skill_end_to_end(real_mount, real_skills, sid):
    """Each real skill binds, shows what is missing, resolves uploads and
    renders its prompt for every engine."""
    fs = real_mount
    d = real_skills / sid
    runner = json.loads((d / "assets" / "runner.json").read_text())
    schemas = {k: json.loads((d / v).read_text())
               for k, v in runner["schemas"].items()}
    s = fs.mnt / "s"
    os.mkdir(s)
    assert bind(s, sid) == 0
    inputs = schemas["input"].get("properties", {})
    params = schemas["parameter"].get("properties", {})
    missing_files = [k for k in schemas["input"].get("required", [])
                     if inputs[k].get("x-input-source", "file") != "inline"]
    missing_params = [k for k in schemas["parameter"].get("required", [])
                      if "default" not in params[k]]
    want = []
    if missing_files:
        want.append("missing required input files: " + ", ".join(missing_files))
    if missing_params:
        want.append("missing required parameters: " + ", ".join(missing_params))
    assert status_of(s)[0] == (want or ["ready"])
    shows(s / "output" / ".manifest.json", manifest_of(schemas["output"]))

    inp = {}
    for k, prop in inputs.items():
        exts = prop.get("extensions")
        inp[k] = upload(s, k + (exts[0].upper() if exts else ""), b"7\n11\n")
    request = {k: sample_value(params[k]) for k in missing_params}
    assert put_json(s / "request.json", {"input": {},
                                         "parameter": request}) == 0
    par = dict(request)
    par.update({k: p["default"] for k, p in params.items()
                if k not in par and "default" in p})
    shows(s / "input.json", inp)
    shows(s / "parameter.json", par)
    assert status_of(s) == (["ready"], [])
    for engine in runner["engines"]:
        assert bind(s, sid, engine=engine) == 0
        template = runner.get("entrypoint", {}).get("prompts", {}).get(
            engine, DEFAULT_PROMPT)
        ctx = prompt_context(fs, "s", runner, sid, inp, par)
        assert prompt_of(s) == jinja_render(template, ctx), engine
    assert json.loads(read_bytes(s / "skill" / "assets" / "runner.json")) == runner


def test_walkthrough_pandas_stats(real_mount, real_skills, tmp_path):
    """What a new user does, mistakes included: each mistake is refused by
    close() with EINVAL or shown in status, and nothing stored is lost."""
    mnt = real_mount.mnt
    data = tmp_path / "data.csv"
    data.write_bytes(b"price,qty\n1.5,2\n2.5,4\n")
    assert "demo-pandas-stats" in os.listdir(mnt / ".flowfs" / "skills")
    s = mnt / "stats"
    os.mkdir(s)

    # Typo in the skill name.
    with pytest.raises(OSError) as e:
        with open(s / "session.json", "w") as f:
            f.write('{"skill": "demo-panda-stats", "title": "prices"}')
    assert e.value.errno == errno.EINVAL
    assert json.loads(read_bytes(s / "session.json"))["skill"] is None
    assert status_of(s)[1][-1] == (
        "session.json", 'unknown skill "demo-panda-stats" (see .flowfs/skills/)')

    # An engine the skill does not have.
    assert put_json(s / "session.json", {"skill": "demo-pandas-stats",
                                         "engine": "claude"}) == errno.EINVAL
    assert status_of(s)[1][-1] == (
        "session.json", 'engine "claude" is not one of skill '
        "demo-pandas-stats's engines (gemini, codex, iflow)")

    sess = json.loads(read_bytes(s / "session.json"))
    sess.update(skill="demo-pandas-stats", title="prices")
    with open(s / "session.json", "w") as f:
        json.dump(sess, f, indent=2)
    sess["engine"] = "gemini"
    shows(s / "session.json", sess)
    assert status_of(s)[0] == ["missing required input files: csv_file",
                               "missing required parameters: column"]
    assert sorted(os.listdir(s / "skill")) == ["SKILL.md", "assets"]

    # Wrong extension: shown in status, not bound.
    shutil.copyfile(data, s / "uploads" / "csv_file.txt")
    shutil.copyfile(data, s / "uploads" / "data.csv")
    shows(s / "input.json", {})
    assert status_of(s)[0][0] == ("uploads/csv_file.txt: extension .txt not "
                                  "allowed for csv_file (allowed: .csv)")
    os.unlink(s / "uploads" / "csv_file.txt")

    # The right name: input.json points at it right after the close.
    shutil.copyfile(data, s / "uploads" / "csv_file.csv")
    csv_path = str(s / "uploads" / "csv_file.csv")
    shows(s / "input.json", {"csv_file": csv_path})
    assert status_of(s)[0] == ["missing required parameters: column"]
    assert read_bytes(csv_path) == data.read_bytes()

    # The column given as an input, with a wrong type, with an unknown key.
    mistakes = [
        ({"input": {"column": "price"}}, "unknown input key 'column'"),
        ({"input": {"csv_file": "data.csv"}},
         "key 'csv_file' is file-sourced; write it to uploads/csv_file"
         " or give an http:// or https:// URL to fetch it from"),
        ({"parameter": {"column": 1.5}},
         "parameter.column: expected a string, got a number"),
        ({"params": {"column": "price"}},
         "unknown key 'params' (request.json has input, parameter)"),
    ]
    for body, message in mistakes:
        fd = os.open(s / "request.json", os.O_WRONLY | os.O_TRUNC)
        os.write(fd, json.dumps(body).encode())
        with pytest.raises(OSError) as e:
            os.close(fd)
        assert e.value.errno == errno.EINVAL, body
        assert status_of(s)[1][-1] == ("request.json", message)
        shows(s / "request.json", EMPTY_REQUEST)
    assert status_of(s)[0] == [
        "missing required parameters: column",
        f"request.json: your last write was refused: {mistakes[-1][1]};"
        f" the file still holds the earlier version"]

    with open(s / "request.json", "w") as f:
        f.write('{"parameter": {"column": "price"}}\n')
    shows(s / "parameter.json", {"column": "price"})
    assert status_of(s)[0] == ["ready"]
    runner = json.loads((real_skills / "demo-pandas-stats" / "assets" /
                         "runner.json").read_text())
    ctx = prompt_context(real_mount, "stats", runner, "demo-pandas-stats",
                         {"csv_file": csv_path}, {"column": "price"})
    prompt = prompt_of(s)
    assert prompt == jinja_render(runner["entrypoint"]["prompts"]["gemini"], ctx)
    assert f"`{csv_path}`" in prompt and "`price`" in prompt
    assert f"{s}/skill/scripts/analyze.py" in prompt
    # Everything the user wrote is still there.
    assert read_bytes(s / "uploads" / "data.csv") == data.read_bytes()
    assert json.loads(read_bytes(s / "session.json"))["title"] == "prices"
