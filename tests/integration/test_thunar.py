"""A real file manager on the mount: Thunar 4.18 under Xvfb (issue
"everyday use").  Each test starts its own X server, D-Bus session bus and
`thunar --daemon`, drives Thunar the way a user does — its D-Bus methods
(org.xfce.FileManager: CopyTo, DisplayFolder, DisplayFolderAndSelect) and
keys sent with xdotool (Delete, the context menu's Restore, the dialogs'
mnemonics) — and kills all of it by pid before the mount is unmounted.

What Thunar shows is read back deterministically, not from screenshots:
Ctrl+A (select all) or the current selection, then Ctrl+C, and the
X clipboard's text/uri-list, read here with libX11 through ctypes (xclip and
xsel are not installed).  The clipboard is emptied before each copy, so a
stale list is never taken for a fresh one.  Dialogs are told apart by their
window titles ("Confirm to replace files" asks before replacing a file,
"Attention" before skipping a file it could not copy or before deleting
for good, "Error" reports); a screenshot of each is kept under the test's
tmp_path/desktop/ when ImageMagick's `import` is installed.

Thunar keeps its settings (xfconf), metadata and home trash under the test's
tmp_path (XDG_* point there), never in the user's home.  The trash view
(trash:///) lists every mount's trash of the user: the items are selected by
their full trash name, never by what they show.
"""

import ctypes
import ctypes.util
import json
import os
import re
import select
import shutil
import signal
import subprocess
import time
import urllib.parse
from pathlib import Path

import pytest

from conftest import (FULL_DATA, diff_keys, fill_session, listing,
                      put_json, read_bytes, status_of, user_data,
                      write_bytes)

REPLACE = "Confirm to replace files"
ATTENTION = "Attention"
ERROR = "Error"
DIALOGS = (REPLACE, ATTENTION, ERROR)
# What is pressed on each dialog: "Replace _All"; "_Skip" (to go on and see
# what else comes); "_Close".
ANSWER = {REPLACE: "alt+a", ATTENTION: "alt+s", ERROR: "Escape"}

DISPLAYS = range(71, 99)        # :57 and :99 belong to others
TIMEOUT = 60


# -- the X clipboard, through libX11 -------------------------------------------

class _SelectionEvent(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("serial", ctypes.c_ulong),
                ("send_event", ctypes.c_int), ("display", ctypes.c_void_p),
                ("requestor", ctypes.c_ulong), ("selection", ctypes.c_ulong),
                ("target", ctypes.c_ulong), ("property", ctypes.c_ulong),
                ("time", ctypes.c_ulong)]


class _Event(ctypes.Union):
    _fields_ = [("type", ctypes.c_int), ("xselection", _SelectionEvent),
                ("pad", ctypes.c_long * 24)]


_SELECTION_NOTIFY = 31
_X = None


def _libx11():
    global _X
    if _X is not None:
        return _X
    name = ctypes.util.find_library("X11") or "libX11.so.6"
    X = ctypes.CDLL(name)
    vp, ul, i = ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int
    sig = {
        "XOpenDisplay": (vp, [ctypes.c_char_p]),
        "XCloseDisplay": (i, [vp]),
        "XDefaultRootWindow": (ul, [vp]),
        "XCreateSimpleWindow": (ul, [vp, ul, i, i, ctypes.c_uint,
                                     ctypes.c_uint, ctypes.c_uint, ul, ul]),
        "XInternAtom": (ul, [vp, ctypes.c_char_p, i]),
        "XGetSelectionOwner": (ul, [vp, ul]),
        "XSetSelectionOwner": (i, [vp, ul, ul, ul]),
        "XConvertSelection": (i, [vp, ul, ul, ul, ul, ul]),
        "XSync": (i, [vp, i]),
        "XFlush": (i, [vp]),
        "XPending": (i, [vp]),
        "XNextEvent": (i, [vp, ctypes.POINTER(_Event)]),
        "XConnectionNumber": (i, [vp]),
        "XGetWindowProperty": (i, [vp, ul, ul, ctypes.c_long, ctypes.c_long,
                                   i, ul, ctypes.POINTER(ul),
                                   ctypes.POINTER(i), ctypes.POINTER(ul),
                                   ctypes.POINTER(ul),
                                   ctypes.POINTER(ctypes.c_void_p)]),
        "XFree": (i, [vp]),
    }
    for fn, (res, args) in sig.items():
        f = getattr(X, fn)
        f.restype, f.argtypes = res, args
    _X = X
    return X


class Clipboard:
    """CLIPBOARD of one X display: who owns it, empty it, read a target."""

    def __init__(self, display):
        self.display = display.encode()

    def _open(self):
        X = _libx11()
        dpy = X.XOpenDisplay(self.display)
        assert dpy, f"cannot open X display {self.display!r}"
        return X, dpy

    def owner(self):
        X, dpy = self._open()
        try:
            return X.XGetSelectionOwner(dpy, X.XInternAtom(dpy, b"CLIPBOARD", 0))
        finally:
            X.XCloseDisplay(dpy)

    def clear(self):
        """Leave the clipboard without an owner until the next copy."""
        X, dpy = self._open()
        try:
            X.XSetSelectionOwner(dpy, X.XInternAtom(dpy, b"CLIPBOARD", 0),
                                 0, 0)
            X.XSync(dpy, 0)
        finally:
            X.XCloseDisplay(dpy)
        assert self.owner() == 0

    def read(self, target, timeout=3.0):
        """The bytes the owner gives for `target`, or None (no owner,
        refused, no answer)."""
        X, dpy = self._open()
        try:
            clip = X.XInternAtom(dpy, b"CLIPBOARD", 0)
            if not X.XGetSelectionOwner(dpy, clip):
                return None
            win = X.XCreateSimpleWindow(dpy, X.XDefaultRootWindow(dpy),
                                        0, 0, 1, 1, 0, 0, 0)
            prop = X.XInternAtom(dpy, b"FLOWFS_TEST_CLIPBOARD", 0)
            X.XConvertSelection(dpy, clip, X.XInternAtom(dpy, target, 0),
                                prop, win, 0)
            X.XFlush(dpy)
            ev = _Event()
            deadline = time.monotonic() + timeout
            while True:
                while X.XPending(dpy):
                    X.XNextEvent(dpy, ctypes.byref(ev))
                    if ev.type != _SELECTION_NOTIFY:
                        continue
                    if ev.xselection.property == 0:
                        return None
                    kind, fmt = ctypes.c_ulong(), ctypes.c_int()
                    n, after = ctypes.c_ulong(), ctypes.c_ulong()
                    data = ctypes.c_void_p()
                    X.XGetWindowProperty(dpy, win, prop, 0, 1 << 24, 1, 0,
                                         ctypes.byref(kind), ctypes.byref(fmt),
                                         ctypes.byref(n), ctypes.byref(after),
                                         ctypes.byref(data))
                    if not data:
                        return b""
                    try:
                        assert fmt.value == 8, fmt.value
                        return ctypes.string_at(data, n.value)
                    finally:
                        X.XFree(data)
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                select.select([X.XConnectionNumber(dpy)], [], [], left)
        finally:
            X.XCloseDisplay(dpy)


def uri_list(data):
    """The URIs of a text/uri-list, unquoted."""
    return [urllib.parse.unquote(line.strip())
            for line in data.decode().splitlines()
            if line.strip() and not line.startswith("#")]


def trash_name(path):
    """The name trash:/// gives an item at `path` (in MNT/.Trash-<uid>/files):
    its whole path with each / as a backslash."""
    return "\\" + str(path).lstrip("/").replace("/", "\\")


# -- the desktop: Xvfb, a session bus, thunar --daemon ---------------------------

def _gvariant(v):
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_gvariant(x) for x in v) + "]" if v else "@as []"
    return json.dumps(str(v))


class Desktop:
    """An X server, a D-Bus session bus and Thunar of one test; every
    process started for it (and every service its bus started) is killed by
    pid in stop()."""

    def __init__(self, root):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.procs = []         # (name, Popen) started here
        self.display = None
        self.bus = None
        self.env = None
        self.shots = 0
        self.markers = 0

    # -- starting ------------------------------------------------------------
    def start(self):
        for tool in ("dbus-daemon", "gdbus"):
            if shutil.which(tool) is None:
                pytest.fail(f"{tool} is not installed (apt-get install "
                            "dbus-x11 libglib2.0-bin)", pytrace=False)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("DBUS_", "XDG_", "DISPLAY", "LANGUAGE",
                                    "LC_", "WAYLAND", "GTK_", "GIO_"))}
        for k in ("config", "data", "cache", "runtime"):
            d = self.root / "xdg" / k
            d.mkdir(parents=True, exist_ok=True)
            os.chmod(d, 0o700)
        env.update(XDG_CONFIG_HOME=str(self.root / "xdg" / "config"),
                   XDG_DATA_HOME=str(self.root / "xdg" / "data"),
                   XDG_CACHE_HOME=str(self.root / "xdg" / "cache"),
                   XDG_RUNTIME_DIR=str(self.root / "xdg" / "runtime"),
                   LANG="C.UTF-8", LC_ALL="C.UTF-8", NO_AT_BRIDGE="1",
                   GDK_BACKEND="x11")
        self._start_x(env)
        env["DISPLAY"] = self.display
        self._start_bus(env)
        env["DBUS_SESSION_BUS_ADDRESS"] = self.bus
        self.env = env
        self._spawn("thunar", ["thunar", "--daemon"])
        self.wait(lambda: self._has_owner("org.xfce.FileManager"),
                  "thunar --daemon on the session bus", dialogs=False)
        self.clipboard = Clipboard(self.display)

    def _spawn(self, name, args, **kw):
        log = open(self.root / f"{name}.log", "ab")
        kw.setdefault("stdout", log)
        p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stderr=log,
                             env=self.env, start_new_session=True, **kw)
        log.close()
        self.procs.append((name, p))
        return p

    def _start_x(self, env):
        self.env = env
        for n in DISPLAYS:
            if os.path.exists(f"/tmp/.X{n}-lock") or \
                    os.path.exists(f"/tmp/.X11-unix/X{n}"):
                continue
            p = self._spawn(f"xvfb-{n}", ["Xvfb", f":{n}", "-screen", "0",
                                          "1280x800x24", "-nolisten", "tcp"])
            deadline = time.monotonic() + 10
            while p.poll() is None and time.monotonic() < deadline:
                if os.path.exists(f"/tmp/.X11-unix/X{n}"):
                    time.sleep(0.2)     # another X server's? ours then quits
                    if p.poll() is None:
                        self.display = f":{n}"
                        return
                time.sleep(0.02)
            self._kill(p)
        pytest.fail("no free X display for Xvfb among :71..:98", pytrace=False)

    def _start_bus(self, env):
        p = self._spawn("dbus", ["dbus-daemon", "--session", "--nofork",
                                 "--print-address=1"], stdout=subprocess.PIPE)
        ready, _, _ = select.select([p.stdout], [], [], 10)
        line = p.stdout.readline().decode().strip() if ready else ""
        if not line:
            pytest.fail("dbus-daemon printed no address", pytrace=False)
        self.bus = line

    def _has_owner(self, name):
        r = subprocess.run(
            ["gdbus", "call", "--session", "--dest", "org.freedesktop.DBus",
             "--object-path", "/org/freedesktop/DBus", "--method",
             "org.freedesktop.DBus.NameHasOwner", name],
            capture_output=True, text=True, env=self.env, timeout=10)
        return "true" in r.stdout

    # -- stopping --------------------------------------------------------------
    def _ours(self):
        """Pids of every process that has our bus in its environment: what
        we started and what the bus started for us (xfconfd, gvfsd, ...)."""
        needle = f"DBUS_SESSION_BUS_ADDRESS={self.bus}".encode()
        found = []
        for d in os.listdir("/proc"):
            if not d.isdigit() or int(d) == os.getpid():
                continue
            try:
                with open(f"/proc/{d}/environ", "rb") as f:
                    if needle in f.read().split(b"\0"):
                        found.append(int(d))
            except OSError:
                continue
        return found

    @staticmethod
    def _kill(p):
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def stop(self):
        thunar = [p for n, p in self.procs if n == "thunar"]
        for p in thunar:
            self._kill(p)
        if self.bus:
            pids = self._ours()
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + 5
            for pid in pids:
                while os.path.exists(f"/proc/{pid}") and \
                        time.monotonic() < deadline:
                    try:
                        with open(f"/proc/{pid}/stat") as f:
                            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                                break       # a zombie: its parent reaps it
                    except OSError:
                        break
                    time.sleep(0.02)
                try:
                    if os.path.exists(f"/proc/{pid}"):
                        os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for name, p in reversed(self.procs):
            self._kill(p)
            if p.stdout:
                p.stdout.close()
        self.procs = []
        gvfs = self.root / "xdg" / "runtime" / "gvfs"
        if os.path.ismount(gvfs):
            subprocess.run(["fusermount3", "-uz", str(gvfs)])

    # -- talking to Thunar -----------------------------------------------------
    def call(self, method, *args):
        """A method of /org/xfce/FileManager, e.g. "org.xfce.FileManager.CopyTo";
        waits for its reply (without one some do nothing)."""
        r = subprocess.run(
            ["gdbus", "call", "--session", "--dest", "org.xfce.FileManager",
             "--object-path", "/org/xfce/FileManager", "--method", method,
             *[_gvariant(a) for a in args]],
            capture_output=True, text=True, env=self.env, timeout=TIMEOUT)
        assert r.returncode == 0, (method, args, r.stderr)
        return r.stdout

    def xdo(self, *args, check=True, timeout=TIMEOUT):
        """xdotool; with check=False a failure (a window gone meanwhile,
        `windowfocus --sync` waiting in vain) is returned, not raised."""
        try:
            r = subprocess.run(["xdotool", *map(str, args)],
                               capture_output=True, text=True, env=self.env,
                               timeout=timeout)
        except subprocess.TimeoutExpired:
            if check:
                raise
            return subprocess.CompletedProcess(args, -1, "", "timeout")
        if check:
            assert r.returncode == 0, (args, r.stderr)
        return r

    def search(self, pattern):
        """Visible windows whose title matches `pattern`: [(id, title)]."""
        r = self.xdo("search", "--onlyvisible", "--name", pattern, check=False)
        out = []
        for wid in r.stdout.split():
            name = self.xdo("getwindowname", wid, check=False)
            if name.returncode == 0:
                out.append((wid, name.stdout.rstrip("\n")))
        return out

    def window(self, title):
        """The one window titled `title` (waited for)."""
        found = []

        def one():
            found[:] = [w for w, t in self.search(f"^{re.escape(title)}$")]
            return len(found) == 1
        self.wait(one, f"one Thunar window titled {title!r}")
        return found[0]

    def dialogs(self):
        return self.search("^(" + "|".join(map(re.escape, DIALOGS)) + ")$")

    def screenshot(self, wid=None, what="shot"):
        if shutil.which("import") is None:
            return None
        self.shots += 1
        path = self.root / f"{self.shots:02d}-{what}.png"
        if wid is not None:
            self.xdo("windowmove", wid, 0, 0, check=False)
            time.sleep(0.3)
        subprocess.run(["import", "-window", "root", str(path)],
                       env=self.env, capture_output=True, timeout=TIMEOUT)
        return path

    def wait(self, cond, what, timeout=TIMEOUT, dialogs=True):
        """Poll cond() until true; fail at once when a dialog shows up
        (naming it, with a screenshot), or after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while not cond():
            if dialogs:
                shown = self.dialogs()
                if shown:
                    shot = self.screenshot(shown[0][0], "dialog")
                    pytest.fail(f"while waiting for {what}: Thunar shows "
                                f"{[t for _, t in shown]} (screenshot: {shot})")
            if time.monotonic() > deadline:
                shot = self.screenshot(what="timeout")
                pytest.fail(f"not after {timeout} s: {what} (screenshot: {shot})")
            time.sleep(0.05)

    def show(self, folder, select=None):
        """Open a Thunar window on `folder` (a path or a URI), with the item
        named `select` selected; returns the window's id once that is so."""
        uri = folder if isinstance(folder, str) else folder.as_uri()
        if select is None:
            self.call("org.xfce.FileManager.DisplayFolder", uri,
                      self.display, "")
        else:
            self.call("org.xfce.FileManager.DisplayFolderAndSelect", uri,
                      select, self.display, "")
        title = "Trash" if uri == "trash:///" else \
            urllib.parse.unquote(uri.rstrip("/").rsplit("/", 1)[1])
        return self.window(f"{title} - Thunar")

    def close(self, wid):
        """Close a Thunar window (Ctrl+Q, "Close Window")."""
        self.xdo("windowfocus", "--sync", wid, "key", "ctrl+q")
        self.wait(lambda: wid not in self.xdo("search", "--onlyvisible",
                                              "--name", "", check=False
                                              ).stdout.split(),
                  f"window {wid} closed")

    def selection(self, wid, select_all=False, tries=5):
        """The URIs the window has selected (all it shows with select_all):
        Ctrl+C, then the clipboard's text/uri-list.  Nothing selected leaves
        the clipboard empty: tries=1 then gives None instead of failing."""
        keys = ["ctrl+a", "ctrl+c"] if select_all else ["ctrl+c"]
        for _ in range(tries):
            self.clipboard.clear()
            self.xdo("windowfocus", "--sync", wid, "key", *keys)
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline:
                if self.clipboard.owner():
                    data = self.clipboard.read(b"text/uri-list")
                    if data is not None:
                        return uri_list(data)
                time.sleep(0.02)
        if tries == 1:
            return None
        shot = self.screenshot(what="no-selection")
        pytest.fail(f"Thunar's window {wid} put nothing on the clipboard "
                    f"(screenshot: {shot})")

    def shown(self, wid, tries=5):
        """The names Thunar shows in the window (Ctrl+A, Ctrl+C); None when
        it shows nothing (after `tries` attempts)."""
        uris = self.selection(wid, True, tries)
        return None if uris is None else \
            sorted(u.rsplit("/", 1)[1] for u in uris)

    def paste(self, sources, targets):
        """Copy sources[i] to targets[i] in one Thunar job (CopyTo, what a
        paste runs), pressing ANSWER on every dialog that comes; returns
        [(title, screenshot)] of the dialogs in their order.  A marker file
        copied last, outside the mount, tells when the job has ended."""
        self.markers += 1
        marker = self.root / f"marker-{self.markers}"
        write_bytes(marker, b"last\n")
        done = self.root / f"marker-{self.markers}-copied"
        self.call("org.xfce.FileManager.CopyTo", "",
                  [p.as_uri() for p in sources] + [marker.as_uri()],
                  [p.as_uri() for p in targets] + [done.as_uri()],
                  self.display, "")
        seen, log = {}, []
        deadline = time.monotonic() + TIMEOUT
        while not done.exists():
            for wid, title in self.dialogs():
                if wid not in seen:
                    log.append((title, self.screenshot(wid, "dialog")))
                elif time.monotonic() - seen[wid] < 2:
                    continue        # answered: give it time to go
                seen[wid] = time.monotonic()
                self.xdo("windowfocus", "--sync", wid, "key", ANSWER[title],
                         check=False, timeout=5)
            if time.monotonic() > deadline:
                shot = self.screenshot(what="paste-timeout")
                pytest.fail(f"Thunar's copy did not end in {TIMEOUT} s; "
                            f"dialogs so far {log}; screenshot {shot}")
            time.sleep(0.05)
        return log


def need_desktop_tools():
    """Fail when thunar, Xvfb or xdotool is missing under tools/test (which
    names its test user in FLOWFS_TEST_USER): tools/setup installs them, so
    a missing one is a broken set-up.  Run by hand without them, the Thunar
    tests skip."""
    missing = [t for t in ("thunar", "Xvfb", "xdotool")
               if shutil.which(t) is None]
    if not missing:
        return
    why = (f"Thunar under Xvfb, driven with xdotool: {', '.join(missing)} "
           "not installed (tools/setup installs them: apt-get install thunar"
           " xvfb xdotool dbus-x11 gvfs-daemons libglib2.0-bin)")
    if os.environ.get("FLOWFS_TEST_USER"):
        pytest.fail(why, pytrace=False)
    pytest.skip(why)


@pytest.fixture
def desk(isolated_config, flowfs, tmp_path):
    """Thunar on an X display of its own; stopped before the mount goes."""
    need_desktop_tools()
    d = Desktop(tmp_path / "desktop")
    try:
        d.start()
        yield d
    finally:
        d.stop()


def describe(log):
    return "; ".join(f"{title!r} (screenshot {shot})" for title, shot in log)


# -- 1. pasting a copied session, copying one out ---------------------------------

def check_pasted(desk, log, original, before, new):
    """What a paste must come to: Thunar asked once (replace?, answered
    Replace All) and reported nothing; the new session holds what the
    original does and is ready; no dialog is left open."""
    findings = []
    titles = [t for t, _ in log]
    if titles != [REPLACE]:
        findings.append(f"dialogs: expected one {REPLACE!r} (answered "
                        f"Replace All), got {len(log)}: {describe(log)}")
    # Thunar keeps the times of the files it copies, not of the
    # folders and links
    diff = diff_keys(user_data(original, times="files"),
                     user_data(new, times="files"))
    if diff:
        findings.append("the new session differs from the original:\n  "
                        + "\n  ".join(f"{k}: {a!r:.120} != {b!r:.120}"
                                       for k, (a, b) in diff.items()))
    status = read_bytes(new / "status")
    if status != b"ready\n":
        findings.append(f"status of the new session: {status!r}")
    left = desk.dialogs()
    if left:
        findings.append(f"dialogs left open: {[t for _, t in left]}")
    if user_data(original) != before:
        findings.append("the original session changed")
    assert not findings, "\n".join(findings)


def test_paste_a_copied_session_as_a_new_session(desk, flowfs, tmp_path):
    """A user copies a session out (cp -a mnt/full ~/copy/twin), then
    pastes the copy's folder into the mount with Thunar: Thunar makes
    mnt/twin (mkdir: a new session, which already has session.json,
    status, ...), asks "This folder already contains a file ..." once,
    which the user answers with Replace All; the new session is the
    original's twin."""
    mnt = flowfs.mnt
    s = mnt / "full"
    copy = tmp_path / "copy" / "twin"
    before = fill_session(s, copy_to=copy)
    log = desk.paste([copy], [mnt / "twin"])
    check_pasted(desk, log, s, before, mnt / "twin")


def test_paste_a_copys_contents_into_a_new_session(desk, flowfs, tmp_path):
    """The same, the other way round: the user makes the session (mkdir
    mnt/pre), selects everything in the copy's folder and pastes it into
    the session (the items in the order Thunar's view lists them, by
    name)."""
    mnt = flowfs.mnt
    s = mnt / "full"
    copy = tmp_path / "copy" / "full"
    before = fill_session(s, copy_to=copy)
    new = mnt / "pre"
    os.mkdir(new)
    names = sorted(os.listdir(copy))
    log = desk.paste([copy / n for n in names], [new / n for n in names])
    check_pasted(desk, log, s, before, new)


def test_copy_a_session_out(desk, flowfs, tmp_path):
    """A user copies a session out of the mount with Thunar (copy mnt/full,
    paste it into a folder of their own): Thunar asks and reports nothing
    (it used to stop at ctl) and the copy is complete: every entry with the
    mount's bytes and modes, ctl an empty file, skill a link, the files'
    modification times kept."""
    s = flowfs.mnt / "full"
    fill_session(s)
    shown = listing(s)
    out = tmp_path / "out"
    out.mkdir()
    log = desk.paste([s], [out / "full"])
    assert log == [], describe(log)
    copy = listing(out / "full")
    assert copy == shown, diff_keys(shown, copy)
    assert copy["ctl"] == ("file", 0o600, b"")
    assert copy["skill"] == ("link", "../.flowfs/skills/scientific-workflow")
    assert copy["uploads/data.csv"][2] == FULL_DATA
    assert user_data(out / "full", times="files") == \
        user_data(s, times="files")
    assert desk.dialogs() == []
    assert status_of(s) == (["ready"], [])


# -- 2. Delete and Restore ---------------------------------------------------------

def context_menu_restore(desk, wid):
    """Shift+F10 (the context menu), then its first R item, "Restore"."""
    before = set(desk.xdo("search", "--onlyvisible", "--name", "",
                          check=False).stdout.split())
    desk.xdo("windowfocus", "--sync", wid, "key", "shift+F10")
    menu = []

    def popped():
        now = set(desk.xdo("search", "--onlyvisible", "--name", "",
                           check=False).stdout.split())
        menu[:] = [w for w in now - before
                   if int(desk.xdo("getwindowgeometry", w, check=False)
                          .stdout.split("Geometry: ")[-1].split("x")[0]
                          or 0) > 50]
        return bool(menu)
    desk.wait(popped, "the context menu")
    desk.xdo("key", "r", "Return")


def restore_from_trash(desk, trashed, original):
    """Restore from trash:/// the item kept at `trashed` (in
    MNT/.Trash-<uid>/files), and wait until it is back at `original`."""
    w = desk.show("trash:///", select=trash_name(trashed))
    assert desk.selection(w) == ["trash:///" + trash_name(trashed)]
    context_menu_restore(desk, w)
    desk.wait(lambda: os.path.lexists(original) and
              not os.path.lexists(trashed), f"{original.name} back from the trash")
    desk.close(w)


def test_delete_moves_to_the_trash_and_restore_brings_back(desk, flowfs):
    """Delete on a session selected in Thunar, and on a file in its
    uploads/, moves each to the mount's trash without asking anything (no
    "permanently delete?"); Restore in Thunar's trash view puts them back,
    the session whole."""
    mnt = flowfs.mnt
    s = mnt / "doomed"
    before = fill_session(s)
    files = mnt / f".Trash-{os.getuid()}" / "files"

    w = desk.show(mnt, select=s.name)
    assert desk.selection(w) == [f"file://{s}"]
    desk.xdo("windowfocus", "--sync", w, "key", "Delete")
    desk.wait(lambda: not os.path.lexists(s) and (files / s.name).is_dir(),
              "the session moved to the trash")
    desk.close(w)
    assert read_bytes(files / s.name / "uploads" / "data.csv") == \
        FULL_DATA

    # restore it first: the file's folder is inside it
    restore_from_trash(desk, files / s.name, s)
    assert user_data(s) == before
    assert read_bytes(s / "status") == b"ready\n"

    data = s / "uploads" / "data.csv"
    w = desk.show(s / "uploads", select=data.name)
    assert desk.selection(w) == [f"file://{data}"]
    desk.xdo("windowfocus", "--sync", w, "key", "Delete")
    desk.wait(lambda: not os.path.lexists(data) and
              (files / data.name).is_file(), "data.csv moved to the trash")
    desk.close(w)
    assert read_bytes(files / data.name) == FULL_DATA

    restore_from_trash(desk, files / data.name, data)
    assert user_data(s) == before
    assert os.listdir(files) == []
    assert desk.dialogs() == []


# -- 3. fresh views ------------------------------------------------------------------

def test_thunar_sees_for005_come_and_go_by_itself(desk, flowfs, tmp_path):
    """Thunar shows output/ of a datcom session (hidden files shown, so
    that .manifest.json is always there to select).  A complete request
    written from outside makes output/for005.dat appear in Thunar's view,
    an incomplete one makes it go — nobody presses reload.  Three rounds;
    the delays are written to tmp_path/delays.txt."""
    from test_datcom import PC9
    s = flowfs.mnt / "pc9"
    os.mkdir(s)
    assert put_json(s / "session.json", {"skill": "datcom"}) == 0
    incomplete = {k: v for k, v in PC9.items() if k != "wing_naca"}
    w = desk.show(s / "output")
    desk.xdo("windowfocus", "--sync", w, "key", "ctrl+h")
    names = []

    def shows(cond, tries=5):
        names[:] = desk.shown(w, tries) or []
        return cond(names)
    # until Ctrl+H has taken effect the view may be empty (nothing to copy)
    desk.wait(lambda: shows(lambda n: ".manifest.json" in n, tries=1),
              "Thunar showing output/.manifest.json", timeout=20)
    assert names == [".manifest.json"]
    delays = []
    for _ in range(3):
        t0 = time.monotonic()
        assert put_json(s / "request.json", {"parameter": PC9}) == 0
        assert "for005.dat" in os.listdir(s / "output")
        # .manifest.json changes with for005.dat: Thunar may take it out
        # of the view and put it back a moment later, so the view is
        # waited for as a whole
        desk.wait(lambda: shows(
            lambda n: n == [".manifest.json", "for005.dat"]),
            "for005.dat in Thunar's view of output/", timeout=10)
        delays.append(("appear", time.monotonic() - t0))
        t0 = time.monotonic()
        assert put_json(s / "request.json", {"parameter": incomplete}) == 0
        assert "for005.dat" not in os.listdir(s / "output")
        desk.wait(lambda: shows(lambda n: n == [".manifest.json"]),
                  "for005.dat gone from Thunar's view of output/", timeout=10)
        delays.append(("vanish", time.monotonic() - t0))
    t0 = time.monotonic()
    shows(lambda n: True)
    delays.append(("one look", time.monotonic() - t0))
    (tmp_path / "delays.txt").write_text(
        "".join(f"{k} {d:.3f}\n" for k, d in delays))
