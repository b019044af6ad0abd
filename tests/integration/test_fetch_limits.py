"""Issue 12, fetches: what a URL input may cost and where it may go.

- A server that trickles a byte now and then fails the fetch at the
  low-speed limit (--fetch-low-speed), long before --fetch-timeout.
- At most --fetch-jobs fetches go on at once, daemon-wide; the others
  wait ("queued" in status and status.json) and cancel, removing the
  session or another URL drops them; the daemon's threads stay bounded.
- Loopback, private, link-local, unspecified and multicast addresses are
  refused, named directly or reached by a redirect, unless
  --fetch-allow-private.

Each test fails on the daemon before issue 12 (the options did not exist,
a fetch waited for the total timeout, every fetch had a thread, any
address was fetched).
"""
import errno
import fcntl
import ipaddress
import json
import os
import shutil
import socket
import struct
import subprocess
import urllib.parse

import pytest

from conftest import flowfs_bin, put_json, read_bytes, status_of, wait_until
from fake_engine import FileServer
from test_engine import (bind_with, csv_skill, files,  # noqa: F401
                         state_lines, wait_fetch, write_line)

LINE = "fetch uploads/csv_file.csv: "
REFUSED = "refused without --fetch-allow-private"

# what flowfs counts as private (core/fetch.h's fetch_private_kind)
PRIVATE_V4 = [ipaddress.ip_network(n) for n in (
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8",
    "169.254.0.0/16", "172.16.0.0/12", "192.0.0.0/24", "192.168.0.0/16",
    "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4")]


def fetch_mount(make_flowfs, skill_folder, *extra):
    """A mount with the csv skill and no engine (fetches need none)."""
    csv_skill(skill_folder)
    return make_flowfs(extra_args=[f"--skills={skill_folder.root}", *extra])


def fetch_into(mnt, name, url):
    s = mnt / name
    os.mkdir(s)
    bind_with(s, "stats", {"input": {"csv_file": url}})
    return s


def daemon_threads(fs, name=None):
    """How many threads the daemon has (named `name`, when given); one
    that ends while they are counted is not."""
    tasks = f"/proc/{fs.proc.pid}/task"
    count = 0
    for t in os.listdir(tasks):
        try:
            comm = read_bytes(f"{tasks}/{t}/comm").strip()
        except FileNotFoundError:
            continue
        count += name is None or comm == name
    return count


def public_local_address():
    """An IPv4 address of this machine that flowfs does not count as
    private (192.0.2.2, a documentation address, on the CI machines), or
    None."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for _, name in socket.if_nameindex():
            try:
                # SIOCGIFADDR: the interface's IPv4 address
                raw = fcntl.ioctl(sock.fileno(), 0x8915,
                                  struct.pack("256s", name.encode()[:15]))
            except OSError:
                continue
            a = ipaddress.ip_address(raw[20:24])
            if not any(a in n for n in PRIVATE_V4):
                return str(a)
    return None


# -- the low-speed limit -------------------------------------------------------------

def test_a_trickling_server_fails_at_the_low_speed_limit(make_flowfs, skill_folder,
                                                         isolated_config, files):
    """A byte every half second (the issue's server sent one every 2 s and
    held the fetch for the hour of --fetch-timeout)."""
    files.files["a.csv"] = b"a,b\n" * 1000
    files.trickle_seconds = 0.5
    fs = fetch_mount(make_flowfs, skill_folder, "--fetch-allow-private",
                     "--fetch-low-speed=100:2")
    s = fetch_into(fs.mnt, "s", f"{files.base}/trickle/a.csv")
    why = "slower than 100 bytes/s for 2 s (--fetch-low-speed)"
    assert wait_fetch(s, timeout=20) == LINE + "failed: " + why
    assert status_of(s)[1] == [("uploads/csv_file.csv", "fetch started"),
                               ("uploads/csv_file.csv", "fetch failed: " + why)]
    assert os.listdir(s / "uploads") == []
    assert LINE + "failed: " + why in status_of(s)[0]


def test_fetch_low_speed_0_lifts_the_limit(make_flowfs, skill_folder, isolated_config,
                                           files):
    """The same trickle under --fetch-low-speed=0 comes in whole (and under
    a limit of 2 s it would have failed: above)."""
    files.files["a.csv"] = b"a,b,c,d,e\n"
    files.trickle_seconds = 0.3
    fs = fetch_mount(make_flowfs, skill_folder, "--fetch-allow-private",
                     "--fetch-low-speed=0")
    s = fetch_into(fs.mnt, "s", f"{files.base}/trickle/a.csv")
    assert wait_fetch(s, timeout=20) == LINE + "done: 0.0 MiB"
    assert read_bytes(s / "uploads" / "csv_file.csv") == b"a,b,c,d,e\n"


@pytest.mark.parametrize("option,line", [
    *[(f"--fetch-low-speed={v}", "flowfs: --fetch-low-speed takes BYTES:SECONDS such"
       " as 1K:30 (at most 1G and 86400), or 0")
      for v in ("1K", "0:30", "1K:0", "1K:x", "2G:30", "1K:86401", "-5:30")],
    *[(f"--fetch-jobs={v}", "flowfs: --fetch-jobs takes a whole number from 1"
       f' to 64, not "{v}"') for v in ("0", "65", "-1")],
])
def test_fetch_options_are_range_checked(tmp_path, option, line):
    """A bad --fetch-low-speed or --fetch-jobs stops the daemon before it
    mounts, with one line."""
    r = subprocess.run([str(flowfs_bin()), f"--db={tmp_path / 'x.db'}", option,
                        str(tmp_path)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and r.stderr.strip() == line, r
    assert not os.path.ismount(tmp_path)


# -- the pool of fetches -----------------------------------------------------------

def test_fetches_beyond_the_pool_wait_in_a_queue(make_flowfs, skill_folder,
                                                 isolated_config, files):
    """30 fetches that do not end, with --fetch-jobs=2: two go on, the
    rest wait, and the daemon does not grow a thread per fetch (1000 slow
    fetches made 1007 threads)."""
    skill_folder.add("notes", input={"type": "object", "properties": {
        "csv_file": {"type": "string", "x-input-source": "inline"}}})
    files.files.update({f"{i}.csv": b"a,b\n" * 300 for i in range(30)})
    files.files["a.csv"] = b"a,b\n" * 300
    fs = fetch_mount(make_flowfs, skill_folder, "--fetch-allow-private",
                     "--fetch-jobs=2")
    idle = daemon_threads(fs)
    sessions = [fetch_into(fs.mnt, f"s{i:02}", f"{files.base}/hold/{i}.csv")
                for i in range(30)]
    wait_until(lambda: len(files.hits) == 2, "two fetches reach the server")
    lines = [state_lines(s) for s in sessions]
    assert all(len(l) == 1 and l[0].startswith(LINE + "fetching")
               for l in lines[:2]), lines
    assert lines[2:] == [[LINE + "queued"]] * 28
    assert json.loads(read_bytes(sessions[2] / "status.json"))["fetches"][0]["state"] \
        == "queued"
    assert "fetch uploads/csv_file.csv: queued" in \
        read_bytes(sessions[2] / "status").decode().splitlines()
    assert status_of(sessions[2])[1] == [("uploads/csv_file.csv", "fetch queued")]
    # a fetch going on is a thread; the FUSE loop may have started up to
    # 8 threads of its own meanwhile
    assert daemon_threads(fs, b"flowfs-fetch") == 2
    threads = daemon_threads(fs)
    assert threads <= idle + 8 + 2, (idle, threads)
    # cancel, removing the session and another URL drop queued fetches
    assert write_line(sessions[2] / "ctl", "cancel\n") == 0
    assert state_lines(sessions[2]) == [LINE + "cancelled"]
    assert status_of(sessions[2])[1][-1] == ("uploads/csv_file.csv", "fetch cancelled")
    shutil.rmtree(sessions[3])
    bind_with(sessions[4], "notes")
    assert state_lines(sessions[4]) == []
    assert put_json(sessions[5] / "request.json",
                    {"input": {"csv_file": f"{files.base}/file/a.csv"}}) == 0
    assert state_lines(sessions[5]) == [LINE + "queued"]
    assert len(files.hits) == 2
    # the two going on end; the rest follow, two at a time
    files.release.set()
    for s in sessions[:2] + sessions[5:]:
        assert wait_fetch(s).startswith(LINE + "done: "), s.name
    assert status_of(sessions[6])[1] == [("uploads/csv_file.csv", "fetch queued"),
                                         ("uploads/csv_file.csv", "fetch started"),
                                         ("uploads/csv_file.csv", "fetched 0.0 MiB")]
    assert state_lines(sessions[2]) == [LINE + "cancelled"]
    assert sorted(files.hits) == sorted(
        [f"/hold/{i}.csv" for i in range(30) if i not in (2, 3, 4, 5)] + ["/file/a.csv"])
    assert set(files.hits.values()) == {1}
    assert read_bytes(sessions[5] / "uploads" / "csv_file.csv") == files.files["a.csv"]


def test_a_run_waits_for_a_queued_fetch(make_flowfs, skill_folder, isolated_config,
                                        files):
    """As for a fetch going on: `echo run > ctl` is refused with the reason."""
    skill_folder.add("optional", input={"type": "object", "properties": {
        "csv_file": {"type": "string", "extensions": [".csv"]}}})
    files.files.update({"a.csv": b"a,b\n", "b.csv": b"b,c\n"})
    fs = fetch_mount(make_flowfs, skill_folder, "--fetch-allow-private",
                     "--fetch-jobs=1", "--engine-url=http://127.0.0.1:9/v1")
    fetch_into(fs.mnt, "a", f"{files.base}/hold/a.csv")
    wait_until(lambda: files.hits, "the first fetch reaches the server")
    s = fs.mnt / "b"
    os.mkdir(s)
    bind_with(s, "optional", {"input": {"csv_file": f"{files.base}/file/b.csv"}})
    assert state_lines(s) == [LINE + "queued"]
    assert write_line(s / "ctl", "run\n") == errno.EINVAL
    assert status_of(s)[1][-1] == (
        "ctl", "cannot run: a URL input is still being fetched (see the fetch lines)")
    files.release.set()
    assert wait_fetch(s) == LINE + "done: 0.0 MiB"


def test_stopping_with_fetches_queued(make_flowfs, skill_folder, isolated_config,
                                      files):
    """An unmount cancels a queued fetch with the one going on, and never
    starts it; a daemon killed leaves both failed after the next mount."""
    files.files.update({f"{c}.csv": b"a,b\n" for c in "abcd"})
    fs = fetch_mount(make_flowfs, skill_folder, "--fetch-allow-private",
                     "--fetch-jobs=1")
    held = fetch_into(fs.mnt, "a", f"{files.base}/hold/a.csv")
    queued = fetch_into(fs.mnt, "b", f"{files.base}/hold/b.csv")
    wait_until(lambda: files.hits, "the first fetch reaches the server")
    assert state_lines(queued) == [LINE + "queued"]
    fs.remount()
    assert state_lines(held) == [LINE + "cancelled"]
    assert state_lines(queued) == [LINE + "cancelled"]
    assert status_of(queued)[1] == [("uploads/csv_file.csv", "fetch queued"),
                                    ("uploads/csv_file.csv", "fetch cancelled")]
    assert list(files.hits) == ["/hold/a.csv"]
    held = fetch_into(fs.mnt, "c", f"{files.base}/hold/c.csv")
    queued = fetch_into(fs.mnt, "d", f"{files.base}/hold/d.csv")
    wait_until(lambda: "/hold/c.csv" in files.hits, "the fetch reaches the server")
    assert state_lines(queued) == [LINE + "queued"]
    fs.kill9_remount()
    for s in (held, queued):
        assert state_lines(s) == [LINE + "failed: flowfs stopped during the fetch"]
    assert "/hold/d.csv" not in files.hits


# -- private destinations ----------------------------------------------------------

@pytest.mark.parametrize("host,shown", [
    ("127.0.0.1", "127.0.0.1 is a loopback address"),
    ("127.1.2.3", "127.1.2.3 is a loopback address"),
    ("[::1]", "::1 is a loopback address"),
    ("[::ffff:127.0.0.1]", "::ffff:127.0.0.1 is a loopback address"),
    ("0.0.0.0", "0.0.0.0 is an unspecified address"),
    ("10.11.12.13", "10.11.12.13 is a private address"),
    ("172.16.0.1", "172.16.0.1 is a private address"),
    ("192.168.1.1", "192.168.1.1 is a private address"),
    ("[fd00::1]", "fd00::1 is a private address"),
    ("169.254.169.254", "169.254.169.254 is a link-local address"),
    ("[fe80::1]", "fe80::1 is a link-local address"),
    ("224.0.0.1", "224.0.0.1 is a multicast address"),
])
def test_private_destinations_are_refused(make_flowfs, skill_folder, isolated_config,
                                          files, host, shown):
    """Without --fetch-allow-private nothing is connected to: not the
    loopback file server, not the cloud's metadata address."""
    files.files["a.csv"] = b"a,b\n"
    fs = fetch_mount(make_flowfs, skill_folder)
    port = files.server.server_address[1]
    s = fetch_into(fs.mnt, "s", f"http://{host}:{port}/file/a.csv")
    assert wait_fetch(s, timeout=10) == f"{LINE}failed: {shown}: {REFUSED}"
    assert files.hits == {}
    assert os.listdir(s / "uploads") == []


def test_a_name_that_resolves_to_loopback_is_refused(make_flowfs, skill_folder,
                                                     isolated_config, files):
    """The check is on the address connected to, after DNS: "localhost"
    is no way around it."""
    files.files["a.csv"] = b"a,b\n"
    fs = fetch_mount(make_flowfs, skill_folder)
    port = files.server.server_address[1]
    s = fetch_into(fs.mnt, "s", f"http://localhost:{port}/file/a.csv")
    line = wait_fetch(s, timeout=10)
    assert line in (f"{LINE}failed: 127.0.0.1 is a loopback address: {REFUSED}",
                    f"{LINE}failed: ::1 is a loopback address: {REFUSED}"), line
    assert files.hits == {}


def test_with_fetch_allow_private_loopback_is_fetched(make_flowfs, skill_folder,
                                                      isolated_config, files):
    files.files["a.csv"] = b"a,b\n"
    fs = fetch_mount(make_flowfs, skill_folder, "--fetch-allow-private")
    s = fetch_into(fs.mnt, "s", f"{files.base}/file/a.csv")
    assert wait_fetch(s) == LINE + "done: 0.0 MiB"
    assert read_bytes(s / "uploads" / "csv_file.csv") == b"a,b\n"


ALLOWED = "127.0.0.2"


@pytest.fixture
def allowed_files():
    """A file server on 127.0.0.2, which the mounts below allow with
    --fetch-allow (loopback as any, allowed by name)."""
    f = FileServer(host=ALLOWED)
    yield f
    f.close()


def test_the_default_pool_bounds_the_daemons_threads(make_flowfs, skill_folder,
                                                    isolated_config, allowed_files):
    """With no option but the allowed address: 16 fetches that do not end
    make 4 threads, not 16."""
    allowed_files.files.update({f"{i}.csv": b"a,b\n" for i in range(16)})
    fs = fetch_mount(make_flowfs, skill_folder, f"--fetch-allow={ALLOWED}")
    idle = daemon_threads(fs)
    sessions = [fetch_into(fs.mnt, f"s{i:02}", f"{allowed_files.base}/hold/{i}.csv")
                for i in range(16)]
    wait_until(lambda: len(allowed_files.hits) >= 4, "four fetches reach the server")
    threads = daemon_threads(fs)
    assert threads <= idle + 8 + 4, (idle, threads)
    assert daemon_threads(fs, b"flowfs-fetch") == 4
    assert sum(state_lines(s) == [LINE + "queued"] for s in sessions) == 12
    allowed_files.release.set()
    for s in sessions:
        assert wait_fetch(s).startswith(LINE + "done: "), s.name
    assert len(allowed_files.hits) == 16


def test_a_redirect_to_a_private_address_is_refused(make_flowfs, skill_folder,
                                                    isolated_config, files,
                                                    allowed_files):
    """An allowed server that redirects to loopback: the redirect is
    checked as the first URL is, and loopback never sees a request."""
    files.files["a.csv"] = b"a,b\n"
    allowed_files.files["b.csv"] = b"b,c\n"
    target = urllib.parse.quote(f"{files.base}/file/a.csv", safe="")
    fs = fetch_mount(make_flowfs, skill_folder, f"--fetch-allow={ALLOWED}/32")
    # the allowed server itself is fetched from
    s = fetch_into(fs.mnt, "direct", f"{allowed_files.base}/file/b.csv")
    assert wait_fetch(s) == LINE + "done: 0.0 MiB"
    s = fetch_into(fs.mnt, "s", f"{allowed_files.base}/goto/{target}")
    assert wait_fetch(s, timeout=10) == \
        f"{LINE}failed: redirected to 127.0.0.1, a loopback address: {REFUSED}"
    assert allowed_files.hits == {"/file/b.csv": 1, f"/goto/{target}": 1}
    assert files.hits == {}
    assert os.listdir(s / "uploads") == []
    # allowed, the same redirect is followed
    fs.remount(fs.extra_args + ["--fetch-allow-private"])
    s2 = fetch_into(fs.mnt, "s2", f"{allowed_files.base}/goto/{target}")
    assert wait_fetch(s2) == LINE + "done: 0.0 MiB"
    assert files.hits == {"/file/a.csv": 1}


def test_this_machines_own_address_is_refused(make_flowfs, skill_folder,
                                              isolated_config):
    """A service listening on all interfaces answers on this machine's
    own addresses too, whatever range they are in: refused like
    loopback, unless allowed."""
    address = public_local_address()
    if address is None:
        pytest.skip("this machine has no address outside the private ranges")
    server = FileServer(host="0.0.0.0")
    try:
        server.files["a.csv"] = b"a,b\n"
        port = server.server.server_address[1]
        fs = fetch_mount(make_flowfs, skill_folder)
        s = fetch_into(fs.mnt, "s", f"http://{address}:{port}/file/a.csv")
        assert wait_fetch(s, timeout=10) == \
            f"{LINE}failed: {address} is a local address: {REFUSED}"
        assert server.hits == {}
        fs.remount(fs.extra_args + [f"--fetch-allow={address}"])
        s2 = fetch_into(fs.mnt, "s2", f"http://{address}:{port}/file/a.csv")
        assert wait_fetch(s2) == LINE + "done: 0.0 MiB"
    finally:
        server.close()


@pytest.mark.parametrize("value", ["x", "10.0.0.0/33", "::1/129", "1.2.3.4,",
                                   ",".join(["10.0.0.1"] * 33)])
def test_fetch_allow_takes_addresses_and_ranges(tmp_path, value):
    r = subprocess.run([str(flowfs_bin()), f"--db={tmp_path / 'x.db'}",
                        f"--fetch-allow={value}", str(tmp_path)],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2, r
    assert r.stderr.startswith("flowfs: --fetch-allow takes addresses or"
                               " ranges such as 192.168.1.10 or 10.1.0.0/16,"
                               " comma-separated (at most 32), not "), r.stderr
    assert not os.path.ismount(tmp_path)


def test_one_session_holds_at_most_half_the_pool(make_flowfs, skill_folder,
                                                 isolated_config, files):
    """One request.json of four URLs that do not end (slow enough, they
    pass the low-speed limit for an hour) takes two of the four slots;
    another session's fetch starts at once, and the queued two start as
    slots free."""
    skill_folder.add("four", input={"type": "object", "properties": {
        f"f{i}": {"type": "string", "extensions": [".csv"]} for i in range(4)}})
    files.files.update({f"{i}.csv": b"a,b\n" for i in range(5)})
    fs = fetch_mount(make_flowfs, skill_folder, "--fetch-allow-private")
    hog = fs.mnt / "hog"
    os.mkdir(hog)
    bind_with(hog, "four", {"input": {
        f"f{i}": f"{files.base}/hold/{i}.csv" for i in range(4)}})
    wait_until(lambda: len(files.hits) == 2, "two of its fetches start")
    lines = state_lines(hog)
    assert sorted(l.split(": ")[1] for l in lines) == \
        ["fetching", "fetching", "queued", "queued"], lines
    other = fetch_into(fs.mnt, "other", f"{files.base}/hold/4.csv")
    wait_until(lambda: len(files.hits) == 3, "the other session's fetch starts")
    assert state_lines(other)[0].startswith(LINE + "fetching")
    files.release.set()
    assert wait_fetch(other).startswith(LINE + "done: ")
    wait_until(lambda: len(files.hits) == 5, "the queued two start")
