"""session.json, status and scratch files in a session folder."""

import calendar
import errno
import json
import os
import re
import subprocess
import time

import pytest

from conftest import (SESSION_ENTRIES, STATUS_TIME_RE, dumps, errname, expect,
                      oserror, put, read_bytes, session_doc, status_entries,
                      status_of, write_bytes)

def doc_of(session):
    return json.loads(read_bytes(session / "session.json"))


def expected_bytes(session, title):
    d = doc_of(session)
    return dumps(session_doc(d["id"], d["created"], title)).encode()


def refusals(session):
    """The messages of the refused session.json writes in the log; status
    names the last of them (issue 29: a refused write is state until the
    file is written well)."""
    problems, log = status_of(session)
    assert all(path == "session.json" for path, _ in log), log
    # a write that went well since ends it
    assert problems == ["ready"] or log and problems == [
        f"session.json: your last write was refused: {log[-1][1]}; the file"
        f" still holds the earlier version"], problems
    return [message for _, message in log]


def iso_to_epoch(s):
    return calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ"))


# -- reading ---------------------------------------------------------------

def test_fresh_session_json(mnt):
    before = time.time()
    os.mkdir(mnt / "fresh")
    after = time.time()
    data = read_bytes(mnt / "fresh" / "session.json")
    doc = json.loads(data)
    assert list(doc) == ["id", "created", "skill", "engine", "title"]
    assert re.fullmatch(STATUS_TIME_RE, doc["created"]), doc["created"]
    assert int(before) - 2 <= iso_to_epoch(doc["created"]) <= after + 2
    assert data.decode() == dumps({"id": "fresh", "created": doc["created"],
                                  "skill": None, "engine": None,
                                   "title": ""})
    assert not data.endswith(b"\n")
    assert os.stat(mnt / "fresh" / "session.json").st_size == len(data)


def test_fresh_status_is_ready(session):
    assert read_bytes(session / "status") == b"ready\n"
    assert os.stat(session / "status").st_size == len(b"ready\n")


def test_created_stable_across_remount(flowfs, session):
    first = read_bytes(session / "session.json")
    flowfs.remount()
    assert read_bytes(session / "session.json") == first


# -- accepted writes -------------------------------------------------------

TITLES = [
    "plain",
    "",
    "ünïcødé ✓ 中文 🚀",
    'say "hi"',
    "back\\slash / slash",
    "line1\nline2\r\nline3",
    "tab\there",
    "controls \x00\x01\x07\x08\x0b\x0c\x1b\x1f\x7f end",
    "\u2028\u2029 separators",
    "é" * 5000,
    "x" * 200000,
]


@pytest.mark.parametrize("title", TITLES, ids=range(len(TITLES)))
def test_title_roundtrip(flowfs, session, title):
    sj = session / "session.json"
    old = read_bytes(sj)
    payload = json.dumps({"title": title}).encode()      # ASCII-escaped input
    err = put(sj, payload)
    if "\x00" in title and err == errno.EINVAL:
        # Refusing an embedded NUL is acceptable; then nothing may change.
        assert read_bytes(sj) == old
        return
    assert err == 0, errname(err)
    want = expected_bytes(session, title)
    got = read_bytes(sj)
    assert got == want
    assert os.stat(sj).st_size == len(want)
    assert refusals(session) == []
    flowfs.remount()
    assert read_bytes(sj) == want


def test_title_written_as_raw_utf8(session):
    sj = session / "session.json"
    title = "raw ✓ 🚀 \"q\""
    payload = json.dumps({"title": title}, ensure_ascii=False).encode()
    assert put(sj, payload) == 0
    assert read_bytes(sj) == expected_bytes(session, title)


@pytest.mark.parametrize("style", ["full", "reordered", "compact", "spacey",
                                   "no_title", "empty_object"])
def test_accepted_forms(session, style):
    sj = session / "session.json"
    d = doc_of(session)
    title = "T"
    if style == "full":
        payload = dumps(session_doc(d["id"], d["created"], title))
    elif style == "reordered":
        payload = json.dumps({"title": title, "created": d["created"], "id": d["id"]})
    elif style == "compact":
        payload = json.dumps({"title": title}, separators=(",", ":"))
    elif style == "spacey":
        payload = '\n\n   {  "title"  :\t"T"  }   \n\n'
    elif style == "no_title":
        put(sj, b'{"title": "before"}')
        payload = json.dumps({"id": d["id"]})
        title = ""
    else:
        put(sj, b'{"title": "before"}')
        payload = "{}"
        title = ""
    assert put(sj, payload.encode()) == 0
    assert read_bytes(sj) == expected_bytes(session, title)
    assert refusals(session) == []


def test_python_open_write(session):
    sj = session / "session.json"
    with open(sj, "w", encoding="utf-8") as f:
        json.dump({"title": "via open()"}, f)
    with open(sj, encoding="utf-8") as f:
        assert json.load(f)["title"] == "via open()"


def test_write_at_offset_patches_current_content(session):
    sj = session / "session.json"
    assert put(sj, b'{"title": "aaaa"}') == 0
    cur = read_bytes(sj)
    off = cur.index(b'"aaaa"') + 1
    fd = os.open(sj, os.O_RDWR)
    try:
        assert os.pread(fd, len(cur) + 10, 0) == cur
        assert os.pwrite(fd, b"bbbb", off) == 4
    finally:
        os.close(fd)
    assert read_bytes(sj) == expected_bytes(session, "bbbb")


def test_append_without_trunc_starts_from_current(session):
    sj = session / "session.json"
    # Replace the closing brace with one more (valid) member.
    cur = read_bytes(sj)
    assert cur.endswith(b"}")
    fd = os.open(sj, os.O_WRONLY)
    try:
        os.pwrite(fd, b', "title": "late"}', len(cur) - 2)
    finally:
        err = oserror(os.close, fd)
    # {"id", "created", "title": "", "title": "late"} — duplicate key.  Either
    # refused (stored doc unchanged) or last-wins; never a mangled document.
    got = read_bytes(sj)
    if err:
        assert err == errno.EINVAL
        assert got == cur
    else:
        assert got == expected_bytes(session, "late")


def test_fsync_validates_and_stores(session):
    sj = session / "session.json"
    fd = os.open(sj, os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, b'{"title": "synced"}')
        os.fsync(fd)
        # Visible to another reader before close.
        assert json.loads(read_bytes(sj))["title"] == "synced"
    finally:
        os.close(fd)
    assert read_bytes(sj) == expected_bytes(session, "synced")


def test_mtime_changes_only_with_content(session):
    sj = session / "session.json"
    assert put(sj, b'{"title": "one"}') == 0
    m1 = os.stat(sj).st_mtime_ns
    read_bytes(sj)
    os.stat(sj)
    assert os.stat(sj).st_mtime_ns == m1
    assert put(sj, b'{"title": "bad" ') == errno.EINVAL
    assert os.stat(sj).st_mtime_ns == m1
    assert put(sj, b'{"title": "two"}') == 0
    assert os.stat(sj).st_mtime_ns > m1


# -- refused writes --------------------------------------------------------

def created_of(session):
    return doc_of(session)["created"]


BAD_DOCS = {
    "invalid_json": lambda s: b'{"title": "x",',
    "trailing_garbage": lambda s: b'{"title": "x"} extra',
    "not_object_array": lambda s: b'["title"]',
    "not_object_string": lambda s: b'"title"',
    "not_object_number": lambda s: b"42",
    "null": lambda s: b"null",
    "unknown_key": lambda s: b'{"title": "x", "colour": "red"}',
    "title_number": lambda s: b'{"title": 5}',
    "title_null": lambda s: b'{"title": null}',
    "title_object": lambda s: b'{"title": {"a": 1}}',
    "title_array": lambda s: b'{"title": ["x"]}',
    "id_number": lambda s: b'{"id": 1, "title": "x"}',
    "created_null": lambda s: b'{"created": null}',
    "bad_utf8": lambda s: b'{"title": "\xff\xfe"}',
    "lone_surrogate": lambda s: b'{"title": "\\ud800"}',
    "bad_escape": lambda s: b'{"title": "\\q"}',
    "binary": lambda s: bytes(range(256)),
}


@pytest.mark.parametrize("kind", list(BAD_DOCS))
def test_refused_on_close(flowfs, session, kind):
    sj = session / "session.json"
    assert put(sj, b'{"title": "stored"}') == 0
    before = read_bytes(sj)
    mtime = os.stat(sj).st_mtime_ns
    err = put(sj, BAD_DOCS[kind](session))
    assert err == errno.EINVAL, errname(err)
    assert read_bytes(sj) == before
    assert os.stat(sj).st_size == len(before)
    assert os.stat(sj).st_mtime_ns == mtime
    msgs = refusals(session)
    assert len(msgs) == 1, msgs
    flowfs.remount()
    assert read_bytes(sj) == before


def test_truncate_without_writing_keeps_document(session):
    # Shells open with O_TRUNC, dup2 and close before the first write
    # (`echo x > session.json`): that close must not commit an empty
    # document, nor log a refusal.
    sj = session / "session.json"
    assert put(sj, b'{"title": "stored"}') == 0
    before = read_bytes(sj)
    fd = os.open(sj, os.O_WRONLY | os.O_TRUNC)
    dup = os.dup(fd)
    os.close(fd)
    os.write(dup, b'{"title": "after dup"}')
    os.close(dup)
    assert json.loads(read_bytes(sj))["title"] == "after dup"
    fd = os.open(sj, os.O_WRONLY | os.O_TRUNC)
    os.close(fd)
    assert json.loads(read_bytes(sj))["title"] == "after dup"
    assert refusals(session) == []
    assert before != read_bytes(sj)


def test_explicit_truncate_to_empty_is_refused(session):
    sj = session / "session.json"
    assert put(sj, b'{"title": "stored"}') == 0
    before = read_bytes(sj)
    fd = os.open(sj, os.O_WRONLY)
    os.ftruncate(fd, 0)
    err = oserror(os.close, fd)
    assert err == errno.EINVAL, errname(err)
    assert read_bytes(sj) == before
    (msg,) = refusals(session)
    assert "empty" in msg


def test_invalid_json_message_has_line_and_column(session):
    sj = session / "session.json"
    bad = b'{\n  "title": "x"\n  "oops": 1\n}'      # missing comma on line 3
    assert put(sj, bad) == errno.EINVAL
    (msg,) = refusals(session)
    m = re.search(r"line (\d+), column (\d+)", msg)
    assert m, msg
    assert int(m.group(1)) == 3


def test_id_and_created_of_a_copy_are_not_used(session):
    """A copy of another session's session.json (cp -a of a backup) binds
    and names as it says; id and created stay this session's."""
    sj = session / "session.json"
    d = doc_of(session)
    copy = {"id": "other", "created": "2000-01-01T00:00:00Z", "skill": None,
            "engine": None, "title": "copied"}
    assert put(sj, json.dumps(copy).encode()) == 0
    assert read_bytes(sj) == dumps(session_doc(d["id"], d["created"],
                                               "copied")).encode()
    assert refusals(session) == []


def test_a_field_left_out_takes_its_default(session):
    """Issue 29, decided: session.json is taken whole, as a file's content
    is (the README says so beside its one-liners): binding a skill with
    '{"skill": ...}' empties the title, and a title alone unbinds the
    skill.  What the README gives for changing one field — the file's
    own document with that field changed, written back — keeps the
    others."""
    sj = session / "session.json"
    assert put(sj, b'{"title": "Wing study"}') == 0
    assert put(sj, b'{"skill": "datcom"}') == 0
    d = doc_of(session)
    assert (d["skill"], d["engine"], d["title"]) == ("datcom", "gemini", "")
    assert put(sj, b'{"title": "Wing study"}') == 0
    d = doc_of(session)
    assert (d["skill"], d["engine"], d["title"]) == (None, None, "Wing study")
    d["skill"] = "datcom"
    assert put(sj, json.dumps(d).encode()) == 0
    d = doc_of(session)
    assert (d["skill"], d["engine"], d["title"]) == \
        ("datcom", "gemini", "Wing study")
    assert status_of(session)[1] == []     # nothing refused

def test_refusal_messages_say_what(session):
    sj = session / "session.json"
    assert put(sj, b'{"title": "x", "colour": 1}') == errno.EINVAL
    assert put(sj, json.dumps({"id": 7}).encode()) == errno.EINVAL
    assert put(sj, b'{"title": 7}') == errno.EINVAL
    msgs = refusals(session)
    assert len(msgs) == 3
    assert "colour" in msgs[0]
    assert "id" in msgs[1]
    assert "title" in msgs[2]


def test_refused_on_fsync(session):
    sj = session / "session.json"
    before = read_bytes(sj)
    fd = os.open(sj, os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, b'{"title": ')
        assert oserror(os.fsync, fd) == errno.EINVAL
        assert read_bytes(sj) == before
    finally:
        close_err = oserror(os.close, fd)
    # the refused draft stays refused at close, and is reported once
    assert close_err == errno.EINVAL
    assert read_bytes(sj) == before
    assert len(refusals(session)) == 1


def test_refused_on_python_close(session):
    sj = session / "session.json"
    before = read_bytes(sj)
    f = open(sj, "w")
    f.write('{"title": 1}')
    with pytest.raises(OSError) as ei:
        f.close()
    assert ei.value.errno == errno.EINVAL
    assert read_bytes(sj) == before


def test_rename_bad_scratch_onto_session_json(flowfs, session):
    sj = session / "session.json"
    before = read_bytes(sj)
    tmp = session / "session.json.tmp"
    write_bytes(tmp, b'{"title": "x", "bogus": true}')
    assert oserror(os.rename, tmp, sj) == errno.EINVAL
    assert read_bytes(sj) == before
    assert read_bytes(tmp) == b'{"title": "x", "bogus": true}'
    assert len(refusals(session)) == 1
    # Invalid JSON through rename too.
    write_bytes(tmp, b"{nope")
    assert oserror(os.rename, tmp, sj) == errno.EINVAL
    assert read_bytes(sj) == before
    assert read_bytes(tmp) == b"{nope"
    msgs = refusals(session)
    assert len(msgs) == 2 and re.search(r"line \d+, column \d+", msgs[1]), msgs
    flowfs.remount()
    assert read_bytes(sj) == before
    assert read_bytes(tmp) == b"{nope"


def test_rename_good_scratch_onto_session_json(session):
    sj = session / "session.json"
    tmp = session / ".session.json.new"
    write_bytes(tmp, json.dumps({"title": "renamed in"}).encode())
    os.rename(tmp, sj)
    assert read_bytes(sj) == expected_bytes(session, "renamed in")
    assert ".session.json.new" not in os.listdir(session)
    assert refusals(session) == []


LOG_KEEP = 500     # session.h: SESSION_LOG_KEEP


def test_log_keeps_the_last_500(flowfs, session):
    sj = session / "session.json"
    before = read_bytes(sj)
    for i in range(LOG_KEEP + 10):
        # The error is on line i+1, so each log line is distinguishable.
        assert put(sj, b"\n" * i + b"{,}") == errno.EINVAL
    msgs = refusals(session)
    assert len(msgs) == LOG_KEEP
    lines = [int(re.search(r"line (\d+)", m).group(1)) for m in msgs]
    assert lines == list(range(11, LOG_KEEP + 11))
    assert read_bytes(sj) == before
    stamps = [when for when, _, _ in status_entries(session)[1]]
    assert stamps == sorted(stamps)
    flowfs.remount()
    assert len(refusals(session)) == LOG_KEEP


def test_status_lines_are_per_session(mnt):
    os.mkdir(mnt / "a")
    os.mkdir(mnt / "b")
    assert put(mnt / "a" / "session.json", b"{") == errno.EINVAL
    assert len(refusals(mnt / "a")) == 1
    assert read_bytes(mnt / "b" / "status") == b"ready\n"


def test_status_takes_writes_and_drops_them(session):
    """What is written to a generated file is dropped (a copy of a session
    can be copied back); the log says so when it differed, in one line for
    drops that follow one another (issue 29)."""
    st = session / "status"
    for flags in (os.O_WRONLY, os.O_RDWR, os.O_WRONLY | os.O_TRUNC,
                  os.O_WRONLY | os.O_APPEND):
        fd = os.open(st, flags)
        os.write(fd, b"not what flowfs says\n")
        os.close(fd)
        assert read_bytes(st) == b"ready\n"
    assert oserror(os.truncate, st, 0) == 0
    assert read_bytes(st) == b"ready\n"
    problems, log = status_of(session)
    assert log == [("status", "flowfs makes this file: the 84 bytes"
                    " written to it were dropped")]
    # what it holds anyway is no news
    write_bytes(st, b"ready\n")
    assert status_of(session)[1] == log


def test_status_stays_after_rename_onto_it(session):
    write_bytes(session / "fake", b"not a status\n")
    assert oserror(os.rename, session / "fake", session / "status") == 0
    assert read_bytes(session / "status") == b"ready\n"
    assert "fake" not in os.listdir(session)
    assert status_of(session)[1] == [
        ("status", "flowfs makes this file: the 13 bytes moved onto it"
         " were dropped")]


# -- scratch files and special names ---------------------------------------

SCRATCH = [".session.json.swp", "session.json~", "4913", "notes.txt",
           ".goutputstream-ABC123", "#session.json#"]


def test_scratch_files_kept_as_is(flowfs, session):
    payloads = {}
    for name in SCRATCH:
        payloads[name] = os.urandom(3000) + b"{not json"
        write_bytes(session / name, payloads[name])
    assert set(os.listdir(session)) == SESSION_ENTRIES | {
                                        *SCRATCH}
    flowfs.remount()
    for name, data in payloads.items():
        assert read_bytes(session / name) == data
        assert os.stat(session / name).st_size == len(data)
    assert refusals(session) == []
    os.rename(session / "notes.txt", session / "notes2.txt")
    assert read_bytes(session / "notes2.txt") == payloads["notes.txt"]
    for name in os.listdir(session):
        if name not in SESSION_ENTRIES:
            os.unlink(session / name)
    assert set(os.listdir(session)) == SESSION_ENTRIES
    os.rmdir(session)


def seen_by_another_process(path):
    """What another process reads at `path` (None: no such file)."""
    r = subprocess.run(["cat", "--", str(path)], capture_output=True)
    return r.stdout if r.returncode == 0 else None


def test_unlink_of_reserved_names(session):
    """Unlinking a generated file changes nothing; unlinking a document
    empties it.  Either way the name stays, but the process that removed
    it finds it gone until it makes it again (tar x removes a file that
    exists and creates it anew)."""
    sj = session / "session.json"
    assert put(sj, b'{"title": "kept?"}') == 0
    os.unlink(sj)
    os.unlink(session / "status")
    expect(errno.ENOENT, os.stat, sj)
    expect(errno.ENOENT, os.stat, session / "status")
    assert seen_by_another_process(session / "status") == b"ready\n"
    assert json.loads(seen_by_another_process(sj))["title"] == ""
    assert set(os.listdir(session)) == SESSION_ENTRIES
    # made again by it: there for it too, written as any document
    fd = os.open(sj, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, b'{"title": "again"}')
    os.close(fd)
    assert json.loads(read_bytes(sj))["title"] == "again"
    fd = os.open(session / "status", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    os.close(fd)
    assert read_bytes(session / "status") == b"ready\n"


def test_rmdir_empty_uploads_comes_back(session):
    os.rmdir(session / "uploads")
    assert os.path.isdir(session / "uploads")
    assert os.listdir(session / "uploads") == []
    write_bytes(session / "uploads" / "f", b"x")
    assert oserror(os.rmdir, session / "uploads") == errno.ENOTEMPTY
    assert read_bytes(session / "uploads" / "f") == b"x"


def test_rename_session_json_onto_a_folder_is_eisdir(session):
    sj = session / "session.json"
    before = read_bytes(sj)
    os.mkdir(session / "d")
    write_bytes(session / "d" / "x", b"x")
    assert oserror(os.rename, sj, session / "d") == errno.EISDIR
    assert read_bytes(sj) == before
    assert os.listdir(session / "d") == ["x"]


def test_rename_session_json_away_leaves_copy(session):
    sj = session / "session.json"
    assert put(sj, b'{"title": "orig"}') == 0
    before = read_bytes(sj)
    os.rename(sj, session / "session.json~")
    assert read_bytes(sj) == before
    assert read_bytes(session / "session.json~") == before
    # The copy is a plain scratch file: anything may be written to it.
    write_bytes(session / "session.json~", b"garbage")
    assert read_bytes(session / "session.json~") == b"garbage"
    assert read_bytes(sj) == before


def test_editor_style_save_sequence(session):
    """rename original to backup, write new file, delete backup."""
    sj = session / "session.json"
    os.rename(sj, session / "session.json~")
    write_bytes(sj, json.dumps({"title": "edited"}).encode())
    os.unlink(session / "session.json~")
    assert read_bytes(sj) == expected_bytes(session, "edited")
    assert set(os.listdir(session)) == SESSION_ENTRIES
    assert refusals(session) == []
