"""What the daemon does when its connection ends with files still open.

The kernel sends RELEASE asynchronously and drops what is queued when the
connection goes, so a close right before an unmount may never reach the
daemon.  Aborting the connection (fusectl) while files and folders are
open makes that case certain: the daemon must still exit cleanly, release
every handle (no leak under ASan) and keep every committed byte.
"""

import os
import subprocess
import time

import pytest

from conftest import put, read_bytes, write_bytes

FUSECTL = "/sys/fs/fuse/connections"


def fusectl_ready():
    if not os.path.isdir(FUSECTL):
        return False
    if os.listdir(FUSECTL):
        return True
    r = subprocess.run(["mount", "-t", "fusectl", "none", FUSECTL],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return r.returncode == 0 or bool(os.listdir(FUSECTL))


@pytest.mark.root      # mounting fusectl and aborting through it
def test_abort_with_open_handles(flowfs, session):
    if not fusectl_ready():
        pytest.skip("no fusectl to abort the connection with")
    data = os.urandom(300_000)
    write_bytes(session / "uploads" / "kept.bin", data)
    fds = [os.open(session / "uploads" / "kept.bin", os.O_RDONLY),
           os.open(session / "uploads" / "new.bin",
                   os.O_WRONLY | os.O_CREAT, 0o644),
           os.open(session / "uploads", os.O_RDONLY | os.O_DIRECTORY),
           os.open(session / "status", os.O_RDONLY),
           os.open(session / "context.json", os.O_WRONLY)]
    os.write(fds[1], b"flushed on close only\n")
    conn = os.path.join(FUSECTL, str(os.minor(os.stat(flowfs.mnt).st_dev)))
    with open(os.path.join(conn, "abort"), "w") as f:
        f.write("1")
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass        # the connection is gone: ENOTCONN is expected
    deadline = time.monotonic() + 10
    while flowfs.proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    flowfs.stop()
    flowfs.check()      # exit status 0, no sanitizer report (no leak)
    flowfs.start()
    assert read_bytes(session / "uploads" / "kept.bin") == data
    assert read_bytes(session / "context.json") == b"null"
    assert put(session / "context.json", "null") == 0
