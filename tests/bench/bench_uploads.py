#!/usr/bin/python3
"""Side-by-side benchmark of uploads/ on tmpfs, fuse-overlayfs and flowfs.

Not a test: nothing here asserts a time. It measures each operation on every
target in the same run, interleaving the targets rep by rep (in rotating order) so that load from
other work on the machine hits all of them alike, and prints the medians and
the ratios that DESIGN.md §10 sets targets for.

Layout, so later benchmarks (issue 4: `cat parameters.json`) can reuse it:
  - a Target (TmpfsTarget, OverlayTarget, FlowfsTarget) mounts, remounts and
    unmounts one filesystem and says where to work (`work`);
  - one function per measurement, `m_*(target, ctx) -> float`, each timing one
    repetition and leaving its files for the next measurement;
  - a Row per line of the table, with its unit, whether higher is better, and
    a Goal (ratio against fuse-overlayfs, or an absolute bound);
  - measure() runs a function on every target `reps` times and keeps the median.
A flowfs-only row with a baseline that is no filesystem (json.dumps of the same
document) uses Row(targets={"flowfs"}, goal=Goal(ratio=1, against="python")),
appends its baseline's timings to row.samples["python"] before measure(), and
the verdict column then shows the flowfs/python ratio.

FUSE figures depend heavily on CPU contention (two cores: the daemon and the
client each want one), so the header prints the load average at both ends.

Needs root (tmpfs mounts, /proc/sys/vm/drop_caches), /dev/fuse, fusermount3
and fuse-overlayfs. Run through tests/bench/run, which builds a release build.
"""

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time

MiB = 1 << 20
GiB = 1 << 30
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CACHE_DIR = "/tmp/flowfs-bench-cache"


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- helpers

def spawn_daemon(cmd, logpath):
    """Start a FUSE daemon in the foreground as our child.

    Its own session keeps a Ctrl-C meant for us from reaching it (we unmount
    in order instead); stderr goes to a file, as a pipe nobody reads could
    fill up and stall the daemon."""
    with open(logpath, "ab") as err:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=err, start_new_session=True)
    proc.logpath = logpath
    return proc


def wait_for(pred, timeout, what, proc=None):
    """Poll pred() every 0.5 ms; fail early if proc (the daemon) died."""
    deadline = time.monotonic() + timeout
    while not pred():
        if proc is not None and proc.poll() is not None:
            err = ""
            with contextlib.suppress(OSError, AttributeError):
                with open(proc.logpath, errors="replace") as f:
                    err = f.read()[-2000:]
            raise RuntimeError(f"{what}: daemon exited with {proc.returncode}: {err.strip()}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: timed out after {timeout} s")
        time.sleep(0.0005)


def mounted(path):
    """True once `path` is the root of a mount other than its parent's.

    os.path.ismount() stats the path, which for a FUSE mount is answered by the
    daemon, so a True here also means the daemon serves requests."""
    try:
        return os.path.ismount(path)
    except OSError:
        return False


def drop_caches(level):
    """Write `level` to drop_caches (1 page cache, 2 dentries+inodes, 3 both).

    Returns False when the kernel refuses (not root, read-only /proc)."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write(f"{level}\n")
        return True
    except OSError:
        return False


def fadvise_dontneed(path):
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def resident_bytes(path):
    """Bytes of `path` in the page cache per fincore(1), or None if unknown."""
    if not shutil.which("fincore"):
        return None
    try:
        out = subprocess.run(["fincore", "-b", "-n", "-o", "RES", path],
                             capture_output=True, text=True, timeout=30)
        return int(out.stdout.split()[0])
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        return None


def write_all(fd, buf):
    view = memoryview(buf)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def proc_status(pid, key):
    """Value of `key` (e.g. VmRSS) in /proc/<pid>/status, in bytes."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                num, unit = line.split()[1:3]
                assert unit == "kB"
                return int(num) * 1024
    return None


def pid_alive(pid):
    """False once `pid` is gone or a zombie (a daemonized flowfs is not our
    child, and PID 1 in a container may be slow to reap it)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("State:"):
                    return "Z" not in line.split()[1]
    except OSError:
        return False
    return True


def find_daemon_pid(binary, mountpoint):
    """pid of the process whose command line names `binary` and `mountpoint`."""
    binary = os.path.realpath(binary)
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
        except OSError:
            continue
        if not args:
            continue
        exe = args[0]
        if os.path.basename(exe) != os.path.basename(binary):
            continue
        if mountpoint in args or os.path.abspath(mountpoint) in args:
            return int(pid)
    return None


class TmpfsMount:
    """A fresh tmpfs at `path` (falls back to a folder on /dev/shm if mounting
    is not allowed, which is still tmpfs)."""

    def __init__(self, path, size="8g"):
        self.path = path
        self.mounted = False
        os.makedirs(path, exist_ok=True)
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755",
                            "tmpfs", path], capture_output=True)
        if r.returncode == 0:
            self.mounted = True
        else:
            self.path = tempfile.mkdtemp(prefix="flowfs-bench-", dir="/dev/shm")
            log(f"note: cannot mount tmpfs ({r.stderr.decode().strip()}); using {self.path}")

    def close(self):
        if self.mounted:
            if subprocess.run(["umount", self.path], capture_output=True).returncode:
                subprocess.run(["umount", "-l", self.path], capture_output=True)
            self.mounted = False
        else:
            shutil.rmtree(self.path, ignore_errors=True)


def fuse_unmount(mnt, proc=None):
    """Unmount a FUSE mount and reap its daemon (started by us) if we have it."""
    if mounted(mnt):
        for _ in range(50):
            r = subprocess.run(["fusermount3", "-u", mnt], capture_output=True)
            if r.returncode == 0 or not mounted(mnt):
                break
            time.sleep(0.1)
        else:
            subprocess.run(["fusermount3", "-u", "-z", mnt], capture_output=True)
    if proc is not None:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ---------------------------------------------------------------- targets

class Target:
    """One filesystem under test.

    name:    short id used by --only and the table ("tmpfs", "overlayfs", "flowfs")
    label:   column heading
    root:    mountpoint (or tmpfs folder)
    work:    folder where measurements create their files
    pid:     daemon pid, or None for an in-kernel filesystem
    """

    name = label = None
    is_fuse = False

    def __init__(self, base):
        self.base = os.path.join(base, self.name)
        os.makedirs(self.base)
        self.root = self.work = None
        self.pid = None

    def setup(self):
        raise NotImplementedError

    def remount(self):
        """Drop every kernel cache of this filesystem (page, dentry, inode)."""

    def close(self):
        raise NotImplementedError

    def rss(self):
        return proc_status(self.pid, "VmRSS") if self.pid else None

    def backing_used(self):
        """Bytes used on the tmpfs that holds this target's data (for flowfs:
        the database and its WAL)."""
        st = os.statvfs(self.tmp.path)
        return (st.f_blocks - st.f_bfree) * st.f_frsize

    def hwm(self):
        return proc_status(self.pid, "VmHWM") if self.pid else None


class TmpfsTarget(Target):
    name, label = "tmpfs", "tmpfs"

    def setup(self):
        self.tmp = TmpfsMount(os.path.join(self.base, "mnt"))
        self.root = self.tmp.path
        self.work = os.path.join(self.root, "uploads")
        os.mkdir(self.work)

    def close(self):
        self.tmp.close()


class FuseTarget(Target):
    """A FUSE daemon run in the foreground (-f) as our child, in its own
    session so that a Ctrl-C reaches only us and we unmount in order."""

    is_fuse = True
    binary = None

    def command(self):
        raise NotImplementedError

    def mount(self):
        self.proc = spawn_daemon(self.command(), os.path.join(self.base, "daemon.log"))
        wait_for(lambda: mounted(self.mnt), 30, f"mounting {self.name}", self.proc)
        self.pid = self.proc.pid

    def unmount(self):
        fuse_unmount(self.mnt, getattr(self, "proc", None))
        self.proc = None
        self.pid = None

    def remount(self):
        self.unmount()
        self.mount()


class OverlayTarget(FuseTarget):
    name, label = "overlayfs", "fuse-overlayfs"
    binary = "fuse-overlayfs"

    def setup(self):
        self.tmp = TmpfsMount(os.path.join(self.base, "backing"))
        for d in ("lower", "upper", "work"):
            os.mkdir(os.path.join(self.tmp.path, d))
        self.mnt = os.path.join(self.base, "mnt")
        os.mkdir(self.mnt)
        self.mount()
        self.root = self.mnt
        self.work = os.path.join(self.root, "uploads")
        os.mkdir(self.work)

    def command(self):
        t = self.tmp.path
        return [self.binary, "-f", "-o",
                f"lowerdir={t}/lower,upperdir={t}/upper,workdir={t}/work", self.mnt]

    def close(self):
        try:
            self.unmount()
        finally:
            self.tmp.close()


class FlowfsTarget(FuseTarget):
    """flowfs with its database on a fresh tmpfs; work happens in the
    uploads/ of a session named `bench`."""

    name, label = "flowfs", "flowfs"
    session = "bench"

    def __init__(self, base, binary, db=None):
        super().__init__(base)
        self.binary = binary
        self.db = db

    def setup(self):
        self.tmp = TmpfsMount(os.path.join(self.base, "backing"))
        if self.db is None:
            self.db = os.path.join(self.tmp.path, "flowfs.db")
        self.mnt = os.path.join(self.base, "mnt")
        os.mkdir(self.mnt)
        self.mount()
        self.root = self.mnt
        sess = os.path.join(self.root, self.session)
        if not os.path.isdir(sess):
            os.mkdir(sess)
        self.work = os.path.join(sess, "uploads")

    def command(self):
        return [self.binary, f"--db={self.db}", "-f", self.mnt]

    def close(self):
        try:
            self.unmount()
        finally:
            self.tmp.close()


# ---------------------------------------------------------------- measurements
#
# Each m_* function times ONE repetition on one target and returns a number in
# the unit of its row. `ctx` carries the sizes (ctx.file_size, ctx.nfiles) and
# a random buffer. Files are left in place for the next measurement.

class Ctx:
    def __init__(self, quick):
        self.quick = quick
        self.file_size = (32 if quick else 256) * MiB
        self.nfiles = 1000 if quick else 10000
        self.chunk = os.urandom(MiB)
        self.small = os.urandom(4096)
        self.notes = []
        # daemon CPU seconds per GiB, by what was done and target name
        self.cpu = {}

    def note(self, msg):
        if msg not in self.notes:
            self.notes.append(msg)
            log("note: " + msg)


def big_path(t):
    return os.path.join(t.work, "big.bin")


def files_dir(t):
    return os.path.join(t.work, "many")


def used_bytes(path):
    st = os.statvfs(path)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def daemon_cpu(t):
    """CPU seconds the target's daemon has used (all its threads, user and
    system, those that ended too), or None for an in-kernel filesystem:
    the honest measure on a shared machine, where wall time swings with
    the other engineers' load."""
    if not t.pid:
        return None
    with open(f"/proc/{t.pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def count_cpu(t, ctx, what, before, nbytes):
    after = daemon_cpu(t)
    if before is not None and after is not None:
        ctx.cpu.setdefault(what, {}).setdefault(t.name, []).append(
            (after - before) * GiB / nbytes)


def _seq_write(t, ctx, fsync):
    path = big_path(t)
    before = used_bytes(t.work)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
        # flowfs removes a file's data when the kernel forgets it, which
        # may be just after unlink() returns: keep that out of the timing
        # too (statfs shows the space free once it is done)
        deadline = time.perf_counter() + 3
        while (used_bytes(t.work) > before - ctx.file_size // 2 and
               time.perf_counter() < deadline):
            time.sleep(0.01)
    os.sync()  # keep the previous rep's writeback out of this one
    n = ctx.file_size // len(ctx.chunk)
    cpu = daemon_cpu(t)
    t0 = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for _ in range(n):
            write_all(fd, ctx.chunk)
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)
    dt = time.perf_counter() - t0
    if not fsync:
        count_cpu(t, ctx, "written", cpu, ctx.file_size)
    return ctx.file_size / MiB / dt


def m_seq_write(t, ctx):
    """MiB/s: 1 MiB writes of a new file, then close()."""
    return _seq_write(t, ctx, fsync=False)


def m_seq_write_fsync(t, ctx):
    """MiB/s: 1 MiB writes of a new file, fsync(), close()."""
    return _seq_write(t, ctx, fsync=True)


def read_through(path):
    """Bytes read from `path` to its end, 1 MiB at a time."""
    fd = os.open(path, os.O_RDONLY)
    total = 0
    try:
        buf = bytearray(MiB)
        while True:
            n = os.readv(fd, [buf])
            if n == 0:
                break
            total += n
    finally:
        os.close(fd)
    return total


def _read_all(path, ctx):
    t0 = time.perf_counter()
    total = read_through(path)
    dt = time.perf_counter() - t0
    if total != ctx.file_size:
        raise RuntimeError(f"read {total} bytes of {path}, expected {ctx.file_size}")
    return total / MiB / dt


def drop_file_cache(t, path, ctx):
    """Evict `path` from the page cache; remount if the kernel kept it."""
    fadvise_dontneed(path)
    drop_caches(1)
    if not t.is_fuse:
        return  # tmpfs pages are the file itself: "cold" does not exist there
    res = resident_bytes(path)
    if res is None or res > ctx.file_size // 100:
        ctx.note(f"{t.name}: page cache not dropped by fadvise/drop_caches "
                 f"(resident={res}); remounting for cold reads")
        t.remount()


def ensure_big(t, ctx):
    """Write the big file (untimed) unless a write row already left it."""
    try:
        if os.stat(big_path(t)).st_size == ctx.file_size:
            return
    except FileNotFoundError:
        pass
    m_seq_write(t, ctx)


def ensure_files(t, ctx):
    """Create the small files (untimed) unless the create row already did."""
    try:
        if len(os.listdir(files_dir(t))) == ctx.nfiles:
            return
    except FileNotFoundError:
        pass
    m_create_files(t, ctx)


def m_cold_read(t, ctx):
    """MiB/s: 1 MiB reads of the file after evicting it from the page cache."""
    ensure_big(t, ctx)
    path = big_path(t)
    drop_file_cache(t, path, ctx)
    cpu = daemon_cpu(t)
    v = _read_all(path, ctx)
    count_cpu(t, ctx, "read (cold)", cpu, ctx.file_size)
    return v


WARM_READS = 9


def m_warm_read(t, ctx):
    """MiB/s: 1 MiB reads again, right after another open/read/close; the
    median of WARM_READS such reads (a page-cache copy: memory bandwidth
    on a shared machine swings by ±20% from one read to the next)."""
    ensure_big(t, ctx)
    path = big_path(t)
    _read_all(path, ctx)  # make sure the previous open left it cached
    return statistics.median(_read_all(path, ctx) for _ in range(WARM_READS))


PAR_FILES = 4


def par_path(t, i):
    return os.path.join(t.work, f"par{i}.bin")


def ensure_par_files(t, ctx):
    """PAR_FILES files of a quarter of the big file's size (untimed)."""
    size = ctx.file_size // PAR_FILES
    for i in range(PAR_FILES):
        path = par_path(t, i)
        try:
            if os.stat(path).st_size == size:
                continue
        except FileNotFoundError:
            pass
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            for _ in range(size // len(ctx.chunk)):
                write_all(fd, ctx.chunk)
        finally:
            os.close(fd)
    os.sync()
    return size


def parallel_read(readers):
    """MiB/s of `readers` threads each reading a different file, cold, all
    at once (issue 13: readers of different files must not queue behind
    one another): the bytes of all over the time until the last ends."""
    def m(t, ctx):
        size = ensure_par_files(t, ctx)
        paths = [par_path(t, i) for i in range(readers)]
        for path in paths:
            fadvise_dontneed(path)
        drop_caches(1)
        if t.is_fuse and any((resident_bytes(p) or 0) > size // 100
                             for p in paths):
            t.remount()
        errors = []

        def read_one(path):
            try:
                got = read_through(path)
                if got != size:
                    errors.append(f"{path}: {got} of {size} bytes")
            except OSError as e:
                errors.append(f"{path}: {e}")
        threads = [threading.Thread(target=read_one, args=(p,))
                   for p in paths]
        t0 = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        dt = time.perf_counter() - t0
        if errors:
            raise RuntimeError("; ".join(errors))
        return readers * size / MiB / dt
    m.__doc__ = f"MiB/s: {readers} readers of different files at once"
    return m


def m_create_files(t, ctx):
    """files/s: create + 4 KiB write + close of ctx.nfiles files in one folder."""
    d = files_dir(t)
    if os.path.exists(d):
        shutil.rmtree(d)
    os.mkdir(d)
    os.sync()
    names = [os.path.join(d, f"f{i:05d}") for i in range(ctx.nfiles)]
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    small = ctx.small
    t0 = time.perf_counter()
    for p in names:
        fd = os.open(p, flags, 0o644)
        os.write(fd, small)
        os.close(fd)
    dt = time.perf_counter() - t0
    return ctx.nfiles / dt


def _ls_l(path, ctx, expect):
    """entries/s of `ls -l path > /dev/null`; the count is checked afterwards."""
    t0 = time.perf_counter()
    r = subprocess.run(["ls", "-l", path], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"ls -l {path}: {r.stderr.decode().strip()}")
    got = len(os.listdir(path))
    if got != expect:
        raise RuntimeError(f"ls -l {path}: {got} entries, expected {expect}")
    return expect / dt


def m_ls_cold(t, ctx):
    """entries/s: `ls -l` of the files folder after dropping dentry/inode caches."""
    ensure_files(t, ctx)
    if not drop_caches(3) and t.is_fuse:
        ctx.note(f"{t.name}: cannot write drop_caches; remounting for cold ls")
        t.remount()
    return _ls_l(files_dir(t), ctx, ctx.nfiles)


def m_ls_warm(t, ctx):
    """entries/s: `ls -l` again with caches warm."""
    ensure_files(t, ctx)
    _ls_l(files_dir(t), ctx, ctx.nfiles)
    return _ls_l(files_dir(t), ctx, ctx.nfiles)


def m_unlink_files(t, ctx):
    """files/s: unlink of the ctx.nfiles files (then recreates them untimed)."""
    ensure_files(t, ctx)
    d = files_dir(t)
    names = [os.path.join(d, n) for n in os.listdir(d)]
    if len(names) != ctx.nfiles:
        raise RuntimeError(f"{d}: {len(names)} files, expected {ctx.nfiles}")
    os.sync()
    t0 = time.perf_counter()
    for p in names:
        os.unlink(p)
    dt = time.perf_counter() - t0
    m_create_files(t, ctx)  # leave the folder as the next rep expects it
    return ctx.nfiles / dt


# ---------------------------------------------------------------- rows

class Goal:
    """What DESIGN.md §10 asks of a row.

    ratio:   flowfs must reach `ratio` x the value in column `against`
             (default fuse-overlayfs), in the row's higher-is-better sense.
             `against` may name a baseline that is not a mounted target, e.g.
             a row whose fn stores values["python"] for json.dumps.
    below / above: flowfs's own value must be < below (or >= above).
    """

    def __init__(self, ratio=None, below=None, above=None, text="", against="overlayfs"):
        self.ratio, self.below, self.above, self.text = ratio, below, above, text
        self.against = against

    def verdict(self, row):
        if self.ratio is not None:
            r = row.ratio(self.against)
            return None if r is None else r >= self.ratio
        v = row.values.get("flowfs")
        if v is None:
            return None
        if self.below is not None:
            return v < self.below
        if self.above is not None:
            return v >= self.above
        return None


class Row:
    def __init__(self, label, unit, higher_better=True, goal=None, fn=None,
                 targets=None, scale=1.0):
        self.label, self.unit, self.higher_better = label, unit, higher_better
        self.goal, self.fn, self.targets, self.scale = goal, fn, targets, scale
        self.values = {}    # target name -> median
        self.samples = {}   # target name -> list of reps

    def ratio(self, base):
        """flowfs versus `base`, oriented so that > 1 means flowfs is better."""
        f, b = self.values.get("flowfs"), self.values.get(base)
        if f is None or b is None or f <= 0 or b <= 0:
            return None
        return f / b if self.higher_better else b / f


def measure(row, targets, ctx, reps):
    """Run row.fn `reps` times on each target, interleaved, keep the medians.

    The order rotates every rep so that no target always runs right after
    another one's work (or always first)."""
    active = [t for t in targets if row.targets is None or t.name in row.targets]
    for rep in range(reps):
        k = rep % len(active) if active else 0
        for t in active[k:] + active[:k]:
            v = row.fn(t, ctx)
            row.samples.setdefault(t.name, []).append(v)
            log(f"  {row.label:<34} {t.name:<10} rep {rep + 1}: {fmt(v)} {row.unit}")
    for name, vs in row.samples.items():
        row.values[name] = statistics.median(vs)


# ---------------------------------------------------------------- flowfs-only: big database

def build_big_db(binary, path, nsessions, per_session, chunk, base):
    """Fill a new flowfs database through the mount: `nsessions` sessions with
    one `per_session`-byte upload each."""
    tmp = TmpfsMount(os.path.join(base, "build-backing"))
    mnt = os.path.join(base, "build-mnt")
    os.makedirs(mnt, exist_ok=True)
    db = os.path.join(tmp.path, "flowfs.db")
    proc = None
    try:
        proc = spawn_daemon([binary, f"--db={db}", "-f", mnt], mnt + ".log")
        wait_for(lambda: mounted(mnt), 30, "mounting flowfs to build the database", proc)
        t0 = time.monotonic()
        for i in range(nsessions):
            s = os.path.join(mnt, f"s{i:04d}")
            os.mkdir(s)
            fd = os.open(os.path.join(s, "uploads", "data.bin"),
                         os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                left = per_session
                while left:
                    n = min(left, len(chunk))
                    write_all(fd, chunk[:n])
                    left -= n
            finally:
                os.close(fd)
            if (i + 1) % 100 == 0:
                log(f"  built {i + 1}/{nsessions} sessions ({time.monotonic() - t0:.1f} s)")
        fuse_unmount(mnt, proc)
        proc = None
        os.makedirs(os.path.dirname(path), exist_ok=True)
        # Clean unmount checkpoints the WAL; copy any side file anyway.
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(db + suffix):
                shutil.copyfile(db + suffix, path + ".tmp" + suffix)
        for suffix in ("-wal", "-shm"):
            if os.path.exists(path + ".tmp" + suffix):
                os.replace(path + ".tmp" + suffix, path + suffix)
        # the uploads themselves (storage v2: files past 128 KiB live in
        # DB.d/ beside the database; without them the store is broken)
        if os.path.isdir(db + ".d"):
            shutil.rmtree(path + ".d", ignore_errors=True)
            shutil.copytree(db + ".d", path + ".tmp.d")
            os.replace(path + ".tmp.d", path + ".d")
        os.replace(path + ".tmp", path)
    finally:
        fuse_unmount(mnt, proc)
        tmp.close()


def schema_key(binary, base):
    """Short key of the database layout the current flowfs creates: the
    schema number from .flowfs/version plus a hash of sqlite_master of a
    fresh empty database (a layout change during development rebuilds the
    cached big database even if the number stayed)."""
    tmp = TmpfsMount(os.path.join(base, "ver-backing"), size="64m")
    mnt = os.path.join(base, "ver-mnt")
    os.makedirs(mnt, exist_ok=True)
    db = os.path.join(tmp.path, "v.db")
    proc = None
    try:
        proc = spawn_daemon([binary, f"--db={db}", "-f", mnt], mnt + ".log")
        wait_for(lambda: mounted(mnt), 30, "mounting flowfs", proc)
        try:
            with open(os.path.join(mnt, ".flowfs", "version")) as f:
                version = f.read()
        except OSError:
            version = ""
        fuse_unmount(mnt, proc)
        proc = None
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            sql = "\n".join(r[0] or "" for r in con.execute(
                "SELECT sql FROM sqlite_master ORDER BY type, name"))
        finally:
            con.close()
    finally:
        fuse_unmount(mnt, proc)
        tmp.close()
    number = "".join(c for c in version.split("schema")[-1] if c.isalnum()) or "x"
    return f"schema{number}-{hashlib.sha256(sql.encode()).hexdigest()[:10]}"


def big_db(binary, ctx, base):
    """Path of the cached big database, building it if missing or stale."""
    nsessions = 100 if ctx.quick else 1000
    per = MiB
    key = schema_key(binary, base)
    path = os.path.join(CACHE_DIR, f"sessions{nsessions}-{per // 1024}KiB-{key}.db")
    # a copy made before it kept DB.d/ holds no upload: made again
    if not os.path.exists(path) or not os.path.isdir(path + ".d"):
        prefix = f"sessions{nsessions}-{per // 1024}KiB-"
        for old in os.listdir(CACHE_DIR) if os.path.isdir(CACHE_DIR) else []:
            if old.startswith(prefix):  # an older layout's copy: 1 GiB each
                old = os.path.join(CACHE_DIR, old)
                if os.path.isdir(old):
                    shutil.rmtree(old, ignore_errors=True)
                else:
                    os.unlink(old)
        log(f"building {path} ({nsessions} sessions x {per // 1024} KiB) through the mount...")
        build_big_db(binary, path, nsessions, per, ctx.chunk, base)
    return path, nsessions, nsessions * per


def mount_timed(binary, db, mnt, ctx):
    """Seconds from spawning flowfs until the mount answers os.stat().

    Without -f flowfs returns once the mount is ready; that is what a person
    waits for. If that mode fails, fall back to -f and poll for the mount.
    Returns (seconds, foreground process or None)."""
    # stderr to a file: the daemonized child may keep a pipe open.
    with open(mnt + ".log", "w+b") as err:
        t0 = time.perf_counter()
        r = subprocess.run([binary, f"--db={db}", mnt], stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=err, timeout=60)
        err.seek(0)
        r.stderr = err.read()
    if r.returncode == 0:
        wait_for(lambda: mounted(mnt), 30, "flowfs mount")
        os.stat(mnt)
        return time.perf_counter() - t0, None
    ctx.note(f"flowfs without -f exited {r.returncode} "
             f"({r.stderr.decode(errors='replace').strip()}); timing -f until mounted")
    fuse_unmount(mnt)
    t0 = time.perf_counter()
    proc = spawn_daemon([binary, f"--db={db}", "-f", mnt], mnt + ".log")
    wait_for(lambda: mounted(mnt), 30, "flowfs mount", proc)
    os.stat(mnt)
    return time.perf_counter() - t0, proc


def bench_big_mount(binary, ctx, base, reps):
    """Mount time and daemon RSS on the big database. Returns rows."""
    path, nsessions, nbytes = big_db(binary, ctx, base)
    tmp = TmpfsMount(os.path.join(base, "big-backing"))
    mnt = os.path.join(base, "big-mnt")
    os.makedirs(mnt, exist_ok=True)
    db = os.path.join(tmp.path, "flowfs.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            shutil.copyfile(path + suffix, db + suffix)
    shutil.copytree(path + ".d", db + ".d")
    what = f"{nsessions} sessions, {nbytes / MiB:.0f} MiB"
    r_mount = Row(f"mount ({what})", "s", higher_better=False,
                  goal=Goal(below=0.2 if not ctx.quick else None, text="< 0.2 s"),
                  targets={"flowfs"})
    r_lsR = Row(f"ls -lR of that mount (cold)", "s", higher_better=False,
                targets={"flowfs"})
    r_rss = Row("daemon VmRSS after ls -lR", "MiB", higher_better=False,
                goal=Goal(below=64 if not ctx.quick else None, text="< 64 MiB"),
                targets={"flowfs"})
    r_hwm = Row("daemon VmHWM (peak RSS)", "MiB", higher_better=False, targets={"flowfs"})
    proc = None
    try:
        for rep in range(reps):
            drop_caches(3)
            dt, proc = mount_timed(binary, db, mnt, ctx)
            r_mount.samples.setdefault("flowfs", []).append(dt)
            log(f"  mount rep {rep + 1}: {dt * 1000:.1f} ms")
            pid = proc.pid if proc else find_daemon_pid(binary, mnt)
            if rep < reps - 1:
                fuse_unmount(mnt, proc)
                proc = None
                if pid:
                    wait_for(lambda: not pid_alive(pid), 30, "daemon exit")
                continue
            # Last mount: walk everything, then look at the daemon's memory.
            t0 = time.perf_counter()
            r = subprocess.run(["ls", "-lR", mnt], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            dt = time.perf_counter() - t0
            if r.returncode != 0:
                raise RuntimeError(f"ls -lR: {r.stderr.decode(errors='replace').strip()}")
            r_lsR.samples["flowfs"] = [dt]
            if pid:
                r_rss.samples["flowfs"] = [proc_status(pid, "VmRSS") / MiB]
                r_hwm.samples["flowfs"] = [proc_status(pid, "VmHWM") / MiB]
            else:
                ctx.note("could not find the flowfs daemon's pid for RSS")
    finally:
        fuse_unmount(mnt, proc)
        tmp.close()
    rows = [r_mount, r_lsR, r_rss, r_hwm]
    for row in rows:
        for name, vs in row.samples.items():
            row.values[name] = statistics.median(vs)
    return rows


# ---------------------------------------------------------------- table

def fmt(v):
    if v is None:
        return "-"
    if v >= 100:
        return f"{v:,.0f}"
    if v >= 10:
        return f"{v:.1f}"
    if v >= 1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def fmt_ratio(r):
    return "-" if r is None else f"{r:.2f}x"


COLUMN_LABELS = {"tmpfs": "tmpfs", "overlayfs": "fuse-overlayfs", "python": "python"}
RATIO_LABELS = {"tmpfs": "flowfs/tmpfs", "overlayfs": "flowfs/ovl", "python": "flowfs/python"}


def table(rows, columns=("tmpfs", "overlayfs"), ratios=("overlayfs", "tmpfs")):
    """The results: a value column per baseline in `columns`, flowfs, a
    ratio column per baseline in `ratios`, the goal and its verdict."""
    head = (["operation", "unit"] + [COLUMN_LABELS[c] for c in columns] + ["flowfs"]
            + [RATIO_LABELS[r] for r in ratios] + ["target", "verdict"])
    body = []
    for row in rows:
        verdict = row.goal.verdict(row) if row.goal else None
        shown = {True: "OK", False: "BELOW", None: "-" if not row.goal else "n/a"}[verdict]
        if row.goal and row.goal.ratio is not None and row.goal.against not in (
                ratios) and verdict is not None:
            shown += f" ({fmt_ratio(row.ratio(row.goal.against))})"
        body.append([row.label, row.unit]
                    + [fmt(row.values.get(c)) for c in columns]
                    + [fmt(row.values.get("flowfs"))]
                    + [fmt_ratio(row.ratio(r)) for r in ratios]
                    + [row.goal.text if row.goal else "", shown])
    widths = [max(len(r[i]) for r in [head] + body) for i in range(len(head))]
    left = {0, 1, len(head) - 2, len(head) - 1}

    def line(cells):
        return "  ".join(c.ljust(w) if i in left else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    out = [line(head), line(["-" * w for w in widths])]
    out += [line(b) for b in body]
    return "\n".join(out)


def rss_row(targets):
    """The daemons' resident memory now, as a row."""
    daemon = Row("daemon VmRSS after the above", "MiB", higher_better=False)
    for t in targets:
        if t.pid:
            daemon.values[t.name] = t.rss() / MiB
    return daemon


def close_all(targets):
    """Unmount and remove every target, last first, whatever fails."""
    for t in reversed(targets):
        try:
            t.close()
        except Exception as e:  # keep unmounting the others
            log(f"warning: closing {t.name}: {e}")
    targets.clear()


def rows_json(rows):
    return [{"label": r.label, "unit": r.unit, "higher_better": r.higher_better,
             "values": r.values, "samples": r.samples} for r in rows]


# ---------------------------------------------------------------- main

def upload_rows(ctx):
    size = f"{ctx.file_size // MiB} MiB"
    n = f"{ctx.nfiles:,}"
    return [
        Row(f"seq write {size} (write+close)", "MiB/s", fn=m_seq_write,
            goal=Goal(ratio=0.9, text=">= 0.9x ovl")),
        Row(f"seq write {size} (+fsync)", "MiB/s", fn=m_seq_write_fsync),
        Row(f"cold read {size}", "MiB/s", fn=m_cold_read,
            goal=Goal(ratio=0.9, text=">= 0.9x ovl")),
        Row(f"warm read {size}", "MiB/s", fn=m_warm_read,
            goal=Goal(ratio=0.9, text=">= 0.9x ovl")),
        *[Row(f"cold read, {r} reader{'s' if r > 1 else ''} of"
              f" {ctx.file_size // MiB // PAR_FILES} MiB files at once",
              "MiB/s", fn=parallel_read(r)) for r in (1, 2, 4)],
        Row(f"create+4KiB write+close x{n}", "files/s", fn=m_create_files,
            goal=Goal(ratio=0.9, text=">= 0.9x ovl")),
        Row(f"ls -l of {n} files (cold)", "entries/s", fn=m_ls_cold,
            goal=Goal(ratio=0.5, text=">= 0.5x ovl")),
        Row(f"ls -l of {n} files (warm)", "entries/s", fn=m_ls_warm),
        Row(f"unlink x{n}", "files/s", fn=m_unlink_files,
            goal=Goal(ratio=1.0, text=">= 1x ovl")),
    ]


def default_flowfs():
    return os.path.join(REPO, "build-bench", "fs", "flowfs")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="smoke run: 32 MiB file, 1,000 files, 100-session database")
    p.add_argument("--only", default="tmpfs,overlayfs,flowfs",
                   help="comma-separated targets among tmpfs,overlayfs,flowfs")
    p.add_argument("--flowfs", default=os.environ.get("FLOWFS_BIN", default_flowfs()),
                   help="flowfs binary (default: build-bench/fs/flowfs in the repo)")
    p.add_argument("--reps", type=int, default=3, help="repetitions per measurement (median)")
    p.add_argument("--rows", metavar="WORDS",
                   help="only rows whose label contains one of these comma-separated words "
                        "(e.g. 'write,ls'); files a row reads are made untimed if missing")
    p.add_argument("--no-big", action="store_true",
                   help="skip the flowfs mount-time/RSS measurement on the big database")
    p.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    a = p.parse_args(argv)
    a.only = [x.strip() for x in a.only.split(",") if x.strip()]
    for x in a.only:
        if x not in ("tmpfs", "overlayfs", "flowfs"):
            p.error(f"unknown target {x!r}")
    return a


def on_sigterm(signum, frame):
    raise KeyboardInterrupt


def describe_env(args, load_start):
    lines = [f"kernel {os.uname().release}, {os.cpu_count()} cpus, "
             f"load average {load_start:.2f} at start, {os.getloadavg()[0]:.2f} at end"]
    if "overlayfs" in args.only:
        r = subprocess.run(["fuse-overlayfs", "--version"], capture_output=True, text=True)
        v = (r.stdout + r.stderr).splitlines()
        lines.append(next((x for x in v if x.startswith("fuse-overlayfs")), "fuse-overlayfs ?"))
    if "flowfs" in args.only:
        lines.append(f"flowfs {args.flowfs}")
    return lines


def main(argv):
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, on_sigterm)
    if os.geteuid() != 0:
        log("note: not root; tmpfs mounts and drop_caches will fall back")
    if "flowfs" in args.only and not os.access(args.flowfs, os.X_OK):
        log(f"error: no flowfs binary at {args.flowfs} (build it, pass --flowfs, "
            f"or use --only tmpfs,overlayfs)")
        return 2
    ctx = Ctx(args.quick)
    load_start = os.getloadavg()[0]
    base = tempfile.mkdtemp(prefix="flowfs-bench-")
    targets = []
    rows = upload_rows(ctx)
    extra = []
    t_start = time.monotonic()
    try:
        for name in ("tmpfs", "overlayfs", "flowfs"):
            if name not in args.only:
                continue
            t = {"tmpfs": lambda: TmpfsTarget(base),
                 "overlayfs": lambda: OverlayTarget(base),
                 "flowfs": lambda: FlowfsTarget(base, args.flowfs)}[name]()
            targets.append(t)
            t.setup()
        if args.rows:
            words = [w for w in args.rows.split(",") if w]
            rows = [r for r in rows if any(w in r.label for w in words)]
        for row in rows:
            log(f"{row.label}:")
            measure(row, targets, ctx, args.reps)
        for what, by in ctx.cpu.items():
            r = Row(f"daemon CPU per GiB {what}", "s", higher_better=False)
            r.samples = by
            r.values = {k: statistics.median(v) for k, v in by.items()}
            extra.append(r)
        extra.append(rss_row(targets))
        space = Row("tmpfs space used after the above", "MiB", higher_better=False)
        for t in targets:
            space.values[t.name] = t.backing_used() / MiB
        extra.append(space)
        close_all(targets)
        if "flowfs" in args.only and not args.no_big:
            log("flowfs on a big database:")
            extra += bench_big_mount(args.flowfs, ctx, base, args.reps)
    finally:
        close_all(targets)
        shutil.rmtree(base, ignore_errors=True)

    rows += extra
    print()
    print(f"flowfs uploads benchmark{' (--quick)' if args.quick else ''}: "
          f"median of {args.reps}, targets interleaved, {time.monotonic() - t_start:.0f} s")
    for line in describe_env(args, load_start):
        print("  " + line)
    print()
    print(table(rows))
    print()
    print("Ratios are oriented so that > 1 means flowfs is better (faster or smaller).")
    print("tmpfs has no cold read (its pages are the data); its metadata figures are")
    print("bounded by this script's own per-call Python overhead.")
    for n in ctx.notes:
        print("note: " + n)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"quick": args.quick, "reps": args.reps,
                       "rows": [{"label": r.label, "unit": r.unit,
                                 "higher_better": r.higher_better,
                                 "values": r.values, "samples": r.samples,
                                 "ratio_overlayfs": r.ratio("overlayfs"),
                                 "ratio_tmpfs": r.ratio("tmpfs")} for r in rows],
                       "notes": ctx.notes}, f, indent=2)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        log("interrupted; everything unmounted")
        sys.exit(130)
