#!/usr/bin/python3
"""bench_sessions: forks, snapshots, restores and copies inside the mount
(issue 27).  A session of `--files` files holding `--mib` MiB in all (one
large file per ten, the rest 4 KiB) is forked, snapshotted and restored;
each prints its time and the disk it added (the tmpfs holding the
database, its log and the data files), and a `cp` of a 256 MiB upload
inside the mount beside a plain `cp` on tmpfs.  Needs root (tmpfs mounts).

    tests/bench/run --sessions [--files N] [--mib N] [--reps N]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

MiB = 1 << 20


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def disk_used(path):
    st = os.statvfs(path)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def ctl(session, line):
    with open(os.path.join(session, "ctl"), "w") as f:
        f.write(line + "\n")


def tmpfs(path, size):
    os.makedirs(path)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                    path], check=True)


class Mount:
    """flowfs with its database on a tmpfs of its own."""

    def __init__(self, binary, base):
        self.tmp = os.path.join(base, "backing")
        self.mnt = os.path.join(base, "mnt")
        tmpfs(self.tmp, "8g")
        os.makedirs(self.mnt)
        self.proc = subprocess.Popen([binary, f"--db={self.tmp}/flowfs.db",
                                      "-f", self.mnt],
                                     stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while not os.path.ismount(self.mnt):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError("flowfs did not mount")
            time.sleep(0.01)

    def close(self):
        subprocess.run(["fusermount3", "-u", self.mnt])
        self.proc.wait()
        subprocess.run(["umount", self.tmp])


def fill(session, files, mib):
    """`files` files, one in ten large, `mib` MiB in all."""
    big_n = max(1, files // 10)
    small = 4096
    big = (mib * MiB - (files - big_n) * small) // big_n
    chunk = os.urandom(MiB)
    up = os.path.join(session, "uploads")
    for i in range(files):
        with open(os.path.join(up, f"f{i:05d}"), "wb") as f:
            if i % 10 == 0:
                left = big
                while left > 0:
                    f.write(chunk[:min(left, MiB)])
                    left -= MiB
            else:
                f.write(chunk[:small])


def measure(rows, name, where, fn):
    before = disk_used(where)
    t0 = time.perf_counter()
    fn()
    t = time.perf_counter() - t0
    rows.setdefault(name, []).append((t, disk_used(where) - before))
    log(f"  {name}: {t:.3f} s, +{rows[name][-1][1] / MiB:.1f} MiB")


def cp(src, dst):
    subprocess.run(["cp", src, dst], check=True)


def write_256(path):
    chunk = os.urandom(MiB)
    with open(path, "wb") as f:
        for _ in range(256):
            f.write(chunk)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--flowfs", required=True)
    p.add_argument("--files", type=int, default=1000)
    p.add_argument("--mib", type=int, default=1024)
    p.add_argument("--reps", type=int, default=3)
    a = p.parse_args(argv)
    base = tempfile.mkdtemp(prefix="flowfs-bench-sessions-")
    rows = {}
    try:
        m = Mount(a.flowfs, base)
        try:
            s = os.path.join(m.mnt, "S")
            os.mkdir(s)
            log(f"filling a session: {a.files} files, {a.mib} MiB")
            fill(s, a.files, a.mib)
            for rep in range(a.reps):
                measure(rows, "fork", m.tmp, lambda: ctl(s, f"fork F{rep}"))
                measure(rows, "snapshot", m.tmp,
                        lambda: ctl(s, f"snapshot v{rep}"))
                measure(rows, "restore (and its snapshot)", m.tmp,
                        lambda: ctl(s, f"restore v{rep}"))
            up = os.path.join(s, "uploads")
            write_256(os.path.join(up, "big256"))
            for rep in range(a.reps):
                measure(rows, "cp 256 MiB in the mount", m.tmp,
                        lambda: cp(os.path.join(up, "big256"),
                                   os.path.join(up, f"copy{rep}")))
        finally:
            m.close()
        plain = os.path.join(base, "plain")
        tmpfs(plain, "2g")
        try:
            write_256(os.path.join(plain, "big256"))
            for rep in range(a.reps):
                measure(rows, "cp 256 MiB on tmpfs", plain,
                        lambda: cp(os.path.join(plain, "big256"),
                                   os.path.join(plain, f"copy{rep}")))
        finally:
            subprocess.run(["umount", plain])
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"\nsessions benchmark: a session of {a.files:,} files, {a.mib:,}"
          f" MiB (median of {a.reps})\n")
    print(f"{'operation':<28} {'time s':>8} {'disk added MiB':>15}")
    for k, v in rows.items():
        t = statistics.median(x[0] for x in v)
        d = statistics.median(x[1] for x in v)
        print(f"{k:<28} {t:8.3f} {d / MiB:15.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
