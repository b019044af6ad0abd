"""Forks (issue 27): `echo "fork NEW" > SESSION/ctl` makes session NEW with
everything SESSION holds and none of its runs or jobs, its large files
shared (copied on the first write to either side), in O(rows)."""

import errno
import os
import sqlite3
import subprocess
import threading
import time

from conftest import (FULL_DATA, daemon_env, fill_session, read_bytes,
                      user_data, write_bytes)

MiB = 1024 * 1024


def data_files(fs):
    d = f"{fs.db}.d"
    return sorted(n for n in os.listdir(d) if n[0].isdigit())


def ctl(session, line):
    """Write one command to ctl: 0 or the errno."""
    try:
        with open(session / "ctl", "w") as f:
            f.write(line + "\n")
    except OSError as e:
        return e.errno
    return 0


def check_clean(fs):
    fs.stop()
    fs.check()
    r = subprocess.run([str(fs.bin), f"--db={fs.db}", "--check"],
                       capture_output=True, text=True, env=daemon_env())
    assert r.returncode == 0, r.stdout + r.stderr
    fs.start()


def test_fork_holds_everything_and_shares_its_data(flowfs):
    s = flowfs.mnt / "S"
    fill_session(s)
    big = os.urandom(5 * MiB)
    write_bytes(s / "uploads" / "big.bin", big)
    before = user_data(s)
    files = data_files(flowfs)
    assert ctl(s, "fork F") == 0
    f = flowfs.mnt / "F"
    # a fork is another workflow: its template id is its own
    assert masked(user_data(f)) == masked(before)
    assert user_data(f)["parameters.json"] != before["parameters.json"]
    assert read_bytes(f / "uploads" / "big.bin") == big
    # shared: no byte copied, the content counted twice
    assert data_files(flowfs) == files
    con = sqlite3.connect(f"file:{flowfs.db}?mode=ro", uri=True)
    assert con.execute("SELECT max(refs) FROM contents").fetchone() == (2,)
    con.close()
    assert os.listdir(f / "jobs") == []
    assert "forked from S" in read_bytes(f / "log").decode()
    assert "forked to F" in read_bytes(s / "log").decode()
    # independent after writes on either side
    with open(f / "uploads" / "big.bin", "r+b") as fh:
        fh.write(b"FORK")
    write_bytes(s / "uploads" / "data.csv", b"changed,in,S\n")
    assert read_bytes(s / "uploads" / "big.bin") == big
    assert read_bytes(f / "uploads" / "big.bin") == b"FORK" + big[4:]
    assert read_bytes(f / "uploads" / "data.csv") == FULL_DATA
    assert len(data_files(flowfs)) == len(files) + 1
    # both survive a remount, and the store checks clean
    check_clean(flowfs)
    assert read_bytes(s / "uploads" / "big.bin") == big
    assert read_bytes(f / "uploads" / "big.bin")[:4] == b"FORK"
    # removing one side leaves the other whole
    subprocess.run(["rm", "-rf", str(s)], check=True)
    assert read_bytes(f / "uploads" / "big.bin")[:4] == b"FORK"
    assert read_bytes(f / "uploads" / "sub" / "deep.txt")


def masked(data):
    """user_data() without the template's id (parameters.json's meta)."""
    import json
    data = dict(data)
    doc = json.loads(data["parameters.json"])
    doc["meta"].pop("template_uuid")
    data["parameters.json"] = doc
    return data


def test_fork_refusals(flowfs):
    s = flowfs.mnt / "S"
    os.mkdir(s)
    os.mkdir(flowfs.mnt / "T")
    assert ctl(s, "fork T") == errno.EEXIST
    assert ctl(s, "fork") == errno.EINVAL
    assert ctl(s, "fork a/b") == errno.EINVAL
    assert ctl(s, "fork .hidden") == errno.EINVAL
    assert ctl(s, "fork " + "x" * 300) == errno.EINVAL
    log = read_bytes(s / "log").decode()
    assert 'a session named "T" exists' in log, log
    assert "fork takes a name" in log, log
    assert sorted(os.listdir(flowfs.mnt)) == [".flowfs", "S", "T"]


def test_kill9_during_a_fork_loses_nothing(flowfs):
    """A fork is one transaction: killed during it, the store has the fork
    whole or not at all, every closed file is there, --check is clean."""
    s = flowfs.mnt / "S"
    os.mkdir(s)
    for i in range(400):
        write_bytes(s / "uploads" / f"f{i}", b"%d" % i * 10)
    big = os.urandom(3 * MiB)
    write_bytes(s / "uploads" / "big", big)
    t = threading.Thread(target=ctl, args=(s, "fork F"))
    t.start()
    time.sleep(0.02)
    flowfs.kill9()
    t.join()
    flowfs.start()
    assert read_bytes(s / "uploads" / "big") == big
    assert read_bytes(s / "uploads" / "f399") == b"399" * 10
    f = flowfs.mnt / "F"
    if f.exists():
        assert sorted(os.listdir(f / "uploads")) == \
            sorted(os.listdir(s / "uploads"))
        assert read_bytes(f / "uploads" / "big") == big
    check_clean(flowfs)


def test_cp_inside_the_mount_shares_the_data(flowfs):
    """coreutils' cp of a big upload inside the mount goes through
    copy_file_range, which shares the data file: nothing is copied until
    either side is written.  A small file is copied as bytes."""
    s = flowfs.mnt / "S"
    os.mkdir(s)
    up = s / "uploads"
    big = os.urandom(8 * MiB + 1)
    write_bytes(up / "big", big)
    write_bytes(up / "small", b"small")
    files = data_files(flowfs)
    subprocess.run(["cp", up / "big", up / "copy"], check=True)
    subprocess.run(["cp", up / "small", up / "small2"], check=True)
    assert data_files(flowfs) == files
    assert read_bytes(up / "copy") == big
    assert read_bytes(up / "small2") == b"small"
    assert os.stat(up / "copy").st_size == len(big)
    # a copy made by copy_file_range(2) itself, too
    fi = os.open(up / "big", os.O_RDONLY)
    fo = os.open(up / "copy2", os.O_WRONLY | os.O_CREAT, 0o644)
    assert os.copy_file_range(fi, fo, len(big)) == len(big)
    os.close(fi)
    os.close(fo)
    assert data_files(flowfs) == files
    with open(up / "copy", "r+b") as f:
        f.seek(MiB)
        f.write(b"mine")
    assert read_bytes(up / "big") == big
    assert read_bytes(up / "copy2") == big
    assert read_bytes(up / "copy")[MiB:MiB + 4] == b"mine"
    assert len(data_files(flowfs)) == len(files) + 1


def test_trash_keeps_sharing(flowfs):
    """Moving a file or a session to the trash copies nothing."""
    s = flowfs.mnt / "S"
    os.mkdir(s)
    big = os.urandom(4 * MiB)
    write_bytes(s / "uploads" / "big", big)
    files = data_files(flowfs)
    trash = flowfs.mnt / f".Trash-{os.getuid()}"
    os.makedirs(trash / "files", exist_ok=True)
    os.rename(s / "uploads" / "big", trash / "files" / "big")
    assert data_files(flowfs) == files
    assert read_bytes(trash / "files" / "big") == big
    os.rename(trash / "files" / "big", s / "uploads" / "big")
    os.rename(s, trash / "files" / "S")
    assert data_files(flowfs) == files
    assert read_bytes(trash / "files" / "S" / "uploads" / "big") == big
