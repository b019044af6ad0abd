"""Names flowfs makes in a session (status, output/for005.dat, the skill
link, ...), as the tools that copy sessions in and out use them, and as
anything else must not: regressions from the review of issue 11."""

import errno
import os
import shutil
import subprocess

from conftest import expect, put_json, read_bytes, status_of, write_bytes


def test_a_file_moved_onto_a_generated_name_from_elsewhere_stays(session):
    """mv of a user's file onto a name flowfs makes, from another folder,
    would lose the file (it once did, with success): refused, kept, and
    the log says why.  A file holding what the name shows may go (a copy
    brought back from the trash)."""
    notes = session / "uploads" / "notes.txt"
    write_bytes(notes, b"my notes\n")
    expect(errno.EACCES, os.rename, notes, session / "status")
    assert read_bytes(notes) == b"my notes\n"
    assert status_of(session)[1][-1] == (
        "status", "flowfs makes this file: a file moved onto it from"
        " another folder is refused (what it holds would be lost)")
    copy = session / "uploads" / "status"
    write_bytes(copy, read_bytes(session / "status"))
    os.rename(copy, session / "status")
    assert not copy.exists()


def test_one_process_empties_output_twice(session):
    """An agent clearing output/ between steps: the second rmtree works
    (the guard against tar x's loop once answered EBUSY)."""
    for step in (b"one", b"two"):
        write_bytes(session / "output" / "result.txt", step)
        shutil.rmtree(session / "output")
        assert os.listdir(session / "output") == []


def test_a_removed_name_stays_gone_for_its_remover(session):
    """The process that removed a name flowfs makes finds it gone (tar x
    makes it anew), even after another process looked it up or listed
    the folder (the kernel's cache of the name once brought it back)."""
    os.unlink(session / "status")
    other = subprocess.run(["stat", "-c", "%s", str(session / "status")],
                           capture_output=True, text=True)
    assert other.returncode == 0, other.stderr
    subprocess.run(["ls", "-l", str(session)], check=True,
                   capture_output=True)
    assert not os.path.exists(session / "status")
    assert "status" in os.listdir(session)


def test_the_daemon_echoes_no_escapes(flowfs):
    """A link target an archive brings (untrusted text) reaches the log and
    the daemon's stderr as one line, with no terminal escapes."""
    s = flowfs.mnt / "s"
    os.mkdir(s)
    assert put_json(s / "session.json", {"skill": "scientific-workflow"}) == 0
    os.unlink(s / "skill")
    os.symlink("evil\n\x1b[2Jnext", s / "skill")
    want = ("flowfs makes this link (to ../.flowfs/skills/scientific-workflow):"
            " the link to evil\\n\\u001b[2Jnext was dropped")
    assert status_of(s)[1][-1] == ("skill", want)
    err = flowfs.stderr()
    assert "\x1b" not in err, repr(err)
    assert [line for line in err.splitlines()
            if line.endswith(" s/skill: " + want)], err
