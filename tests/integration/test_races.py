"""Races between processes on one name (issue 13, "ENOENT on a name that
exists"): the kernel keeps an inode it looked up until it forgets it, and
may open or stat it after another process renamed a file over its name or
unlinked it.  flowfs once dropped the row at once, so that open() or
stat() failed with ENOENT, about 8.5 % of opens in the race, where tmpfs
fails none."""

import errno
import os
import signal
import sqlite3
import subprocess
import sys

from conftest import wait_until

REPLACER = r"""
import os, sys
n = 0
while True:
    n += 1
    with open("cfg.tmp", "w") as f:
        f.write(f"v{n}\n")
    os.rename("cfg.tmp", "cfg")
"""

REMOVER = r"""
import os
while True:
    try:
        os.unlink("x")
    except FileNotFoundError:
        pass
"""

TRIES = 2000


def in_loop(code, cwd):
    """`code` looping in a process of its own until stop()ped."""
    return subprocess.Popen([sys.executable, "-c", code], cwd=cwd,
                            start_new_session=True)


def stop(proc):
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def unlinked_rows(db):
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        return c.execute("SELECT count(*) FROM inodes WHERE nlink = 0"
                         ).fetchone()[0]


def test_a_name_replaced_by_rename_always_opens(flowfs, uploads):
    """The README's atomic replace (write a temporary file, rename it over
    the name) under a reader: every open and stat finds a file, and what
    it reads is one whole version."""
    (uploads / "cfg").write_text("v0\n")
    writer = in_loop(REPLACER, uploads)
    failed, torn = [], []
    try:
        wait_until(lambda: (uploads / "cfg").read_text() != "v0\n",
                   "the replacing began")
        for _ in range(TRIES):
            try:
                os.stat(uploads / "cfg")
                with open(uploads / "cfg") as f:
                    text = f.read()
                if not (text.startswith("v") and text.endswith("\n") and
                        text[1:-1].isdigit()):
                    torn.append(text)
            except OSError as e:
                failed.append(errno.errorcode[e.errno])
    finally:
        stop(writer)
    assert failed == [] and torn == [], (failed[:5], len(failed), torn[:5])
    # what the kernel held of the replaced files went with its FORGET
    wait_until(lambda: unlinked_rows(flowfs.db) == 0,
               "no replaced file kept once forgotten")


def test_create_while_another_process_unlinks(flowfs, uploads):
    """`echo abc > x` while another process removes x: the open with
    O_CREAT never fails (it found the name, then the file was gone)."""
    remover = in_loop(REMOVER, uploads)
    failed = []
    try:
        for _ in range(TRIES):
            try:
                fd = os.open(uploads / "x", os.O_WRONLY | os.O_CREAT |
                             os.O_TRUNC, 0o644)
                try:
                    os.write(fd, b"abc\n")
                finally:
                    os.close(fd)
            except OSError as e:
                failed.append(errno.errorcode[e.errno])
    finally:
        stop(remover)
    assert failed == [], (failed[:5], len(failed))
    wait_until(lambda: unlinked_rows(flowfs.db) == 0,
               "no removed file kept once forgotten")


def test_a_file_unlinked_after_its_lookup_answers_as_unlinked(uploads):
    """A descriptor open on a file whose name went: fstat says nlink 0 and
    its data reads, as on any file system; a second open of the same inode
    through /proc (the kernel's inode, found by the lookup before the
    unlink) also works."""
    (uploads / "f").write_bytes(b"data")
    fd = os.open(uploads / "f", os.O_RDONLY)
    try:
        os.unlink(uploads / "f")
        assert os.fstat(fd).st_nlink == 0
        with open(f"/proc/self/fd/{fd}", "rb") as again:
            assert again.read() == b"data"
        assert os.pread(fd, 10, 0) == b"data"
    finally:
        os.close(fd)


def test_a_listing_taken_before_a_rename_binds_no_old_name(uploads):
    """A folder opened, a file renamed over a name, then the listing read
    (readdirplus hands the kernel an inode per name): the listing taken at
    opendir named the replaced file, and the kernel bound the name to it
    for the hour an entry lives — `cat cfg` gave the old data, or ENOENT
    once the old file was gone, and `new` came back (found in review)."""
    (uploads / "cfg").write_text("old\n")
    (uploads / "new").write_text("new\n")
    listing = os.scandir(uploads)       # opendir: the listing is taken
    try:
        os.rename(uploads / "new", uploads / "cfg")
        names = sorted(e.name for e in listing)   # readdirplus
    finally:
        listing.close()
    # the listing is what the folder held at opendir, as on other file
    # systems a snapshot may be; what matters is what the names bind to
    assert names == ["cfg", "new"]
    assert (uploads / "cfg").read_text() == "new\n"
    assert not (uploads / "new").exists()
    assert sorted(os.listdir(uploads)) == ["cfg"]


def test_listing_while_replacing_always_opens(flowfs, uploads):
    """The replacer of the first test with a listing before each open."""
    (uploads / "cfg").write_text("v0\n")
    writer = in_loop(REPLACER, uploads)
    failed = []
    try:
        wait_until(lambda: (uploads / "cfg").read_text() != "v0\n",
                   "the replacing began")
        for _ in range(TRIES // 2):
            try:
                os.listdir(uploads)
                with open(uploads / "cfg") as f:
                    f.read()
            except OSError as e:
                failed.append(errno.errorcode[e.errno])
    finally:
        stop(writer)
    assert failed == [], (failed[:5], len(failed))
