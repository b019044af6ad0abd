"""Installed like a FUSE tool (issue 14): `meson install` puts flowfs on
PATH with its skills, its man page and a systemd user unit; the mount
helper form (`mount -t fuse.flowfs DB MNT -o ...`) and an /etc/fstab line
mount it for real.

meson install writes its log into the build folder, which is root's in
tools/test: these run as root (into a DESTDIR, nothing of the system's
changes but for the one symlink the fstab test needs, removed after)."""

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import REPO, _fusermount, daemon_env, flowfs_bin

pytestmark = pytest.mark.root

PREFIX = "/usr/local"


def build_dir():
    return Path(os.environ.get("FLOWFS_BUILD_DIR", REPO / "build-test"))


@pytest.fixture(scope="module")
def destdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("destdir")
    r = subprocess.run(["meson", "install", "-C", str(build_dir()),
                        "--no-rebuild", "--destdir", str(d)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return d


def installed(destdir, path):
    return destdir / path.lstrip("/")


def test_install_puts_every_part_in_place(destdir):
    exe = installed(destdir, f"{PREFIX}/bin/flowfs")
    assert os.access(exe, os.X_OK)
    v = subprocess.run([str(exe), "-V"], capture_output=True, text=True,
                       env=daemon_env(), timeout=60)
    assert v.returncode == 0 and v.stdout.startswith("flowfs "), v.stderr
    skills = installed(destdir, f"{PREFIX}/share/flowfs/skills")
    for skill in ("datcom", "scientific-workflow"):
        assert (skills / skill / "SKILL.md").is_file(), skill
    assert installed(destdir, f"{PREFIX}/share/man/man1/flowfs.1").is_file()
    assert installed(destdir,
                     f"{PREFIX}/lib/systemd/user/flowfs@.service").is_file()


def test_man_page_renders_without_warnings_and_names_every_option(destdir):
    page = installed(destdir, f"{PREFIX}/share/man/man1/flowfs.1")
    r = subprocess.run(["groff", "-ww", "-z", "-man", str(page)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    r = subprocess.run(["man", "-l", str(page)], capture_output=True,
                       text=True, env=dict(os.environ, MANWIDTH="100"),
                       timeout=60)
    assert r.returncode == 0, r.stderr
    text = re.sub(r".\x08", "", r.stdout).replace("\u2010", "-")
    for section in ("SYNOPSIS", "OPTIONS", "THE TREE", "FILES",
                    "EXIT STATUS", "EXAMPLES", "SEE ALSO"):
        assert section in text, section
    assert "@" not in page.read_text().replace("flowfs@", ""), \
        "a placeholder left unfilled"
    helptext = subprocess.run([str(flowfs_bin()), "--help"],
                              capture_output=True, text=True,
                              env=daemon_env(), timeout=60).stdout
    options = set(re.findall(r"(--[a-z-]+)", helptext))
    assert len(options) > 15, helptext
    flat = re.sub(r"-\s+", "-", text)  # hyphenated at a line's end
    missing = sorted(o for o in options if o not in flat)
    assert not missing, f"flowfs --help has options the man page lacks: {missing}"
    for fstab_word in ("fuse.flowfs", "x-systemd.automount", "noauto,user"):
        assert fstab_word in flat, fstab_word


def test_systemd_user_unit_verifies(destdir, tmp_path):
    unit = installed(destdir, f"{PREFIX}/lib/systemd/user/flowfs@.service")
    text = unit.read_text()
    assert f"ExecStart={PREFIX}/bin/flowfs -f %f" in text
    # systemd-analyze checks that ExecStart's program exists: point it at
    # the installed one in DESTDIR; an instance: the template's %f filled
    inst = tmp_path / "flowfs@home-me-flows.service"
    inst.write_text(text.replace(f"{PREFIX}/bin/flowfs",
                                 str(installed(destdir, f"{PREFIX}/bin/flowfs"))))
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    r = subprocess.run(["systemd-analyze", "verify", "--user", str(inst)],
                       capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, XDG_RUNTIME_DIR=str(runtime),
                                MANPATH=str(installed(destdir,
                                                      f"{PREFIX}/share/man"))))
    # verify exits 0 on unknown keys too: any line it prints is a fault
    assert r.returncode == 0 and not (r.stdout + r.stderr).strip(), \
        r.stdout + r.stderr


def wait_mounted(mnt, timeout=30):
    deadline = time.monotonic() + timeout
    while not os.path.ismount(mnt):
        assert time.monotonic() < deadline, f"{mnt} not mounted"
        time.sleep(0.05)


def unmount(mnt):
    if os.path.ismount(mnt):
        subprocess.run(["umount", str(mnt)], capture_output=True, timeout=60)
    if os.path.ismount(mnt):
        _fusermount(mnt, lazy=True)
    assert not os.path.ismount(mnt), f"{mnt} still mounted"


@pytest.fixture
def on_default_path(destdir):
    """mount(8) runs its helpers without PATH (the shell's default, which
    has /usr/local/bin): the installed flowfs there while the test runs."""
    link = Path(f"{PREFIX}/bin/flowfs")
    if link.exists() or link.is_symlink():
        if not (link.is_symlink() and
                os.readlink(link).startswith(str(destdir.parent))):
            pytest.skip(f"{link} exists: an installed flowfs is not replaced")
        link.unlink()
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(installed(destdir, f"{PREFIX}/bin/flowfs"))
    try:
        yield link
    finally:
        link.unlink()


def check_mount_works(mnt, db):
    os.mkdir(mnt / "s")
    assert os.path.isdir(mnt / "s" / "uploads")
    assert (mnt / ".flowfs" / "config").read_text().count(str(db)) >= 1


def test_mount_t_fuse_flowfs(on_default_path, tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    db = tmp_path / "helper.db"
    try:
        r = subprocess.run(["mount", "-t", "fuse.flowfs", str(db), str(mnt),
                            "-o", "nosuid,nodev"], capture_output=True,
                           text=True, env=daemon_env(), timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr
        wait_mounted(mnt)
        check_mount_works(mnt, db)
    finally:
        unmount(mnt)
    assert db.is_file()


def test_fstab_line(on_default_path, tmp_path):
    """A throw-away fstab (mount -T) with the options the README and the
    man page show: noauto and user are mount(8)'s, x-systemd.automount
    systemd's; flowfs takes the line as it is."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    db = tmp_path / "fstab.db"
    fstab = tmp_path / "fstab"
    fstab.write_text(f"{db} {mnt} fuse.flowfs "
                     "noauto,user,x-systemd.automount,nosuid,nodev 0 0\n")
    try:
        r = subprocess.run(["mount", "-T", str(fstab), str(mnt)],
                           capture_output=True, text=True, env=daemon_env(),
                           timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr
        wait_mounted(mnt)
        check_mount_works(mnt, db)
        line = next(ln for ln in open("/proc/self/mounts")
                    if f" {mnt} " in ln)
        assert " fuse.flowfs " in line and "nosuid" in line, line
    finally:
        unmount(mnt)


@pytest.fixture
def user_on_default_path():
    """The flowfs under test on mount(8)'s default PATH, for a user's
    mount (the test user reaches the build, not the DESTDIR)."""
    link = Path(f"{PREFIX}/bin/flowfs")
    if link.exists() or link.is_symlink():
        pytest.skip(f"{link} exists: an installed flowfs is not replaced")
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(flowfs_bin())
    try:
        yield link
    finally:
        link.unlink()


def test_fstab_line_mounted_by_its_user(user_on_default_path, tmp_path):
    """Issue 29: the README's fstab line, `mount ~/flows` as the user it is
    written for, failed: mount(8) runs the helper with an environment that
    is not the user's (here HOME=/root, as runuser leaves it), and flowfs
    took its folders from it ("cannot make the work folder
    /root/.local/state/flowfs/jobs: Permission denied").  Now its folders
    come from the user's passwd entry.  In a mount namespace of the test's
    own, where /etc/fstab is a file of the test's."""
    import pwd
    try:
        user = pwd.getpwnam("flowfs-test")
    except KeyError:
        pytest.skip("no user flowfs-test (tools/test makes it)")
    home = Path(user.pw_dir)
    mnt = home / f"flows-{os.getpid()}"
    db = home / f"flows-{os.getpid()}.db"
    fstab = tmp_path / "fstab"
    fstab.write_text(f"{db} {mnt} fuse.flowfs "
                     "noauto,user,x-systemd.automount,nosuid,nodev 0 0\n")
    fstab.chmod(0o644)
    script = f"""
set -u
mount --bind {fstab} /etc/fstab || exit 90
as_user() {{ runuser -u flowfs-test -- "$@"; }}
as_user mkdir -p {mnt}
echo "@@mount"
HOME=/root as_user mount {mnt} 2>&1; echo "@@rc $?"
for i in $(seq 100); do mountpoint -q {mnt} && break; sleep 0.1; done
echo "@@config"
as_user cat {mnt}/.flowfs/config
as_user mkdir {mnt}/s && echo "@@made a session"
echo "@@umount"
as_user umount {mnt} 2>&1; echo "@@rc $?"
for i in $(seq 100); do mountpoint -q {mnt} || break; sleep 0.1; done
mountpoint -q {mnt} && fusermount3 -uz {mnt}
mountpoint -q {mnt} && echo "@@still mounted"
as_user rmdir {mnt}
"""
    try:
        r = subprocess.run(["unshare", "-m", "--propagation", "private",
                            "bash", "-c", script], capture_output=True,
                           text=True, timeout=120)
        out = r.stdout + r.stderr
        assert "@@rc 0" in out.split("@@config")[0], out
        config = json.loads(out.split("@@config\n")[1].split("@@")[0])
        assert config["database"] == str(db), config
        assert config["jobs"]["work_dir"].startswith(
            f"{home}/.local/state/flowfs/jobs"), config
        assert config["tool_map"] == f"{home}/.config/flowfs/tools.json"
        assert "@@made a session" in out, out
        assert out.split("@@umount\n")[1].startswith("@@rc 0"), out
        assert "@@still mounted" not in out, out
    finally:
        for path in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
            if path.exists():
                path.unlink()
