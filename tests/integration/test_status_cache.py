"""Issue 12: status and status.json are rendered once per state and kept
(fs/cache.h, keyed by core/status.h status_version()), so every change of what they show must show at once —
each kind of change below is read right after it, after a stat and a read
that filled the cache."""

import os

import pytest

from conftest import REPO, bind, read_bytes, write_bytes

EXAMPLES = REPO.parent / "shared" / "datcom" / "examples"


def look(s):
    """What a file manager and a script do: stat, then read twice."""
    os.stat(s / "status")
    os.stat(s / "status.json")
    first = read_bytes(s / "status").decode()
    assert read_bytes(s / "status").decode() == first
    read_bytes(s / "status.json")
    return first


def test_status_follows_every_change(make_flowfs, skill_folder,
                                     isolated_config):
    for name in ("needs", "other"):
        skill_folder.add(name, input={
            "type": "object", "properties": {name: {"type": "string"}},
            "required": [name]})
    fs = make_flowfs(extra_args=[f"--skills={skill_folder.root}"])
    s = fs.mnt / "s"
    os.mkdir(s)
    up = s / "uploads"
    assert look(s) == "ready\n"
    assert bind(s, "needs") == 0                       # session.json
    assert look(s) == "missing required input files: needs\n"
    write_bytes(up / "needs", b"x")                    # upload added
    assert look(s) == "ready\n"
    os.rename(up / "needs", up / "later")              # renamed away
    assert look(s) == ("missing required input files: needs\n"
                       "uploads/: later binds no input; the names that"
                       " would bind: needs\n")
    os.rename(up / "later", up / "needs")              # renamed back
    assert look(s) == "ready\n"
    os.unlink(up / "needs")                            # removed
    assert look(s) == "missing required input files: needs\n"
    assert bind(s, "other") == 0                       # another skill
    assert look(s) == "missing required input files: other\n"
    # another session's change leaves this one as it is
    os.mkdir(fs.mnt / "t")
    assert bind(fs.mnt / "t", "needs") == 0
    assert look(fs.mnt / "t") == "missing required input files: needs\n"
    assert look(s) == "missing required input files: other\n"


def test_status_follows_a_deck_edit(make_flowfs, isolated_config):
    fs = make_flowfs()
    s = fs.mnt / "s"
    os.mkdir(s)
    assert bind(s, "datcom") == 0
    deck = s / "uploads" / "deck.dat"
    if not (EXAMPLES / "pydatcom_Navion.dcm").exists():
        pytest.skip(f"{EXAMPLES} is not there (../shared beside the checkout)")
    with open(EXAMPLES / "pydatcom_Navion.dcm", "rb") as f:
        good = f.read()
    write_bytes(deck, good)
    before = look(s)
    assert "uploads/deck.dat" not in before
    write_bytes(deck, good.replace(b"ALSCHD(1)=-2.0,0.0", b"ALSCHD(1)=-2.0,,0.0"))
    broken = look(s)
    assert "uploads/deck.dat" in broken and broken != before, broken
    # written in place and not closed yet: status sees it already
    fd = os.open(deck, os.O_WRONLY | os.O_TRUNC)
    try:
        assert look(s) not in (before, broken)     # empty
        os.write(fd, good)
        assert look(s) == before
    finally:
        os.close(fd)
    assert look(s) == before
