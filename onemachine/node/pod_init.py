"""A pod's holder process, as a pause container: `python -m onemachine.node.pod_init`.

It enters new network, UTS, mount and PID namespaces, then forks the pod's PID 1, which
sets the pod's hostname, makes the pod's root (below), reaps orphans and waits until the node
kills it; every process of the pod dies with it (the kernel ends a PID namespace with its
PID 1). The first process stays outside the pod's PID namespace and waits for PID 1, or for
the node: if the node ends without closing the pod (a crash, kill -9), it kills PID 1, so
that no pod outlives its node.

The pod's root is an overlay of the machine's file system: every mount below `/` (bar
/dev, the machine's, and /proc and /sys, the pod's: a fresh proc of its PID namespace with
/proc/sys read-only, and a fresh sysfs of its network namespace, read-only, as a container
runtime gives an unprivileged container, so that /sys/class/net holds the pod's lo and eth0
and no pod can change the machine's interfaces through it) is overlaid
with an upper directory in the pod's directory, so whatever a container writes -- its
workspace, `/outside` -- lands in `<pod directory>/upper/` and the machine's files
stay unchanged. Where the pod's directory is on a file system that cannot hold an overlay's
writes (an overlay itself, as inside a container), they go to a tmpfs of the pod's own
instead: still off the machine's files, but in memory and not visible from the node. A
mount below / that the kernel will not overlay is bound read-only.

The pod sees the rest of the machine's / through that overlay -- /usr, /bin, /lib, /etc,
/opt ...: the commands the node maps images to (a local python3, an upstream build under
/opt/upstream) run from the machine's binaries and libraries, which a pod without its image
can only find there. Its user data it does not see: /root, /home, /tmp, /var/tmp and /run
(and /var/run through its link to /run) are empty directories of the pod's own
(`PRIVATE_DIRS`, in `<pod directory>/private/`) bound over the machine's, as an image's
would be, so the machine's .bashrc, caches and credentials do not show through (PicoD's
workspace is /root) and the pod's writes there land in the pod's directory (or its tmpfs,
as above). A container whose command is one of the machine's own programs installed
in one of them (the node's Python under pyenv's /root/.pyenv) gets that installation bound
into the pod as it starts (`bind_read_only`, from `container_init`; the rule is
`pod_runtime`'s). The pod's /etc/hosts and /etc/resolv.conf are
files of the pod's directory bound over the machine's (`POD_FILES`), as
the kubelet's etc-hosts and the runtime's resolv.conf are: the node writes them, the
machine's stay unchanged. The pod is chrooted into it, as root: this isolates writes, it is
no security boundary (a root process can leave a chroot; /dev is shared).

The node reads its report on the descriptor `--report-fd`: `pid N` (PID 1's pid in the
node's view), then `ready`, or `unavailable MESSAGE` (the machine refused a namespace) or
`error MESSAGE`.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import errno
import os
import select
import signal
import socket
import sys
from pathlib import Path

from onemachine.netns import (
    CLONE_NEWNET,
    CLONE_NEWNS,
    CLONE_NEWPID,
    CLONE_NEWUTS,
    NamespaceUnavailable,
    unshare,
)

_MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 0x2, 0x4, 0x8
_MS_RDONLY, _MS_REMOUNT = 0x1, 0x20
_MS_BIND, _MS_REC, _MS_PRIVATE = 0x1000, 0x4000, 0x40000
_PR_SET_PDEATHSIG = 1
# Mounts shared with the machine, bound whole into the pod's root.
_SHARED = ("/dev",)
_READ_ONLY = _MS_RDONLY | _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
_NOT_IN_OPTIONS = (",", ":", "\\")  # separators of overlayfs' mount options
# Files of the pod's directory (written by the node) bound over these paths of the pod's root.
HOSTS_FILE, RESOLV_CONF_FILE = "etc-hosts", "resolv.conf"
POD_FILES = {HOSTS_FILE: "/etc/hosts", RESOLV_CONF_FILE: "/etc/resolv.conf"}
# Paths where the machine keeps user data, each an empty directory of the pod's own (with
# the mode an image gives it), in `<pod directory>/private/<path>`.
PRIVATE_DIRS = {
    "/root": 0o700,
    "/home": 0o755,
    "/tmp": 0o1777,
    "/var/tmp": 0o1777,
    "/run": 0o755,
    "/var/run": 0o755,  # where it is a directory, not the usual link to /run
}
_libc = ctypes.CDLL(None, use_errno=True)


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    fs = fstype.encode() if fstype else None
    if _libc.mount(source.encode(), target.encode(), fs, flags, data.encode() or None) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"mount {fstype or 'bind'} {source} on {target}: {os.strerror(error)}")


def _mount_points() -> list[str]:
    """The machine's mount points other than /, parents before children (mountinfo order)."""
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].encode().decode("unicode_escape")
        if point != "/" and point not in points:
            points.append(point)
    return points


def _below(path: str, parents: tuple[str, ...]) -> bool:
    return any(path == parent or path.startswith(parent + "/") for parent in parents)


def _overlay(lower: str, layer: Path, target: str) -> None:
    """`lower` at `target` with writes in `layer/upper`; a mount below / the kernel will
    not overlay (an unusual file system, a file such as a container's /etc/hosts) is bound
    read-only instead."""
    if lower != "/" and not Path(lower).is_dir():
        bind_read_only(lower, target)
        return
    for made in (layer / "upper", layer / "work", Path(target)):
        made.mkdir(parents=True, exist_ok=True)
    options = f"lowerdir={lower},upperdir={layer}/upper,workdir={layer}/work"
    try:
        _mount("overlay", target, "overlay", 0, options)
    except OSError:
        if lower == "/":
            raise
        bind_read_only(lower, target)


def bind_read_only(source: str, target: str) -> None:
    """`source` (and the mounts below it) bound at `target`, read-only."""
    _mount(source, target, None, _MS_BIND | _MS_REC)
    _mount("none", target, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY)


def make_root(directory: Path) -> Path:
    """The pod's root under `directory`: `/` and every other mount overlaid, writes in
    `directory/upper/` (the root's) and `directory/mounts/N/upper/` (mount N's), bar
    `PRIVATE_DIRS`: empty, in `directory/private/`."""
    if any(character in str(directory) for character in _NOT_IN_OPTIONS):
        raise OSError(
            errno.EINVAL,
            f"the pod's directory {directory} holds one of {' '.join(_NOT_IN_OPTIONS)}, "
            "which overlayfs options cannot carry: give the node a --root without them",
        )
    points = _mount_points()
    # opened before a tmpfs may hide them (below)
    pod_files = {os.open(directory / name, os.O_PATH): path for name, path in POD_FILES.items()}
    _mount("none", "/", None, _MS_REC | _MS_PRIVATE)
    root = f"{directory}/root"
    try:
        _overlay("/", directory, root)
    except OSError as refused:
        if refused.errno != errno.EINVAL:
            raise
        # `directory` is on a file system an overlay cannot write to (an overlay itself, as
        # in a container): the layers go to a tmpfs of the pod's own instead.
        _mount("tmpfs", str(directory), "tmpfs", 0, "mode=0700")
        _overlay("/", directory, root)
    for number, point in enumerate(points):
        if not _below(point, (*_SHARED, *PRIVATE_DIRS, "/proc", "/sys", str(directory))):
            _overlay(point, directory / f"mounts/{number}", f"{root}{point}")
    for path, mode in PRIVATE_DIRS.items():
        _private_dir(directory / f"private{path}", mode, root, path)
    for point in _SHARED:
        _mount(point, f"{root}{point}", None, _MS_BIND | _MS_REC)
    _mount("proc", f"{root}/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    bind_read_only(f"{root}/proc/sys", f"{root}/proc/sys")
    _mount("sysfs", f"{root}/sys", "sysfs", _READ_ONLY)  # of the pod's network namespace
    for descriptor, path in pod_files.items():
        _bind_file(descriptor, Path(f"{root}{path}"))
        os.close(descriptor)
    return Path(root)


def _private_dir(source: Path, mode: int, root: str, path: str) -> None:
    """The empty directory `source` bound over `path` of the pod's `root`. A link there that
    leads to another of `PRIVATE_DIRS` (/var/run -> /run) is left as it is; any other link
    is replaced by a directory, so that it cannot lead the pod to the machine's files."""
    target = Path(f"{root}{path}")
    if target.is_symlink():
        leads_to = os.path.normpath(os.path.join(os.path.dirname(path), os.readlink(target)))
        if leads_to != path and leads_to in PRIVATE_DIRS:
            return
        target.unlink()
    target.mkdir(parents=True, exist_ok=True)
    source.mkdir(parents=True)
    source.chmod(mode)
    _mount(str(source), str(target), None, _MS_BIND)


def _bind_file(descriptor: int, target: Path) -> None:
    """The file open as `descriptor` bound over `target`, made a plain file first where it is
    missing or a symbolic link (as /etc/resolv.conf under systemd-resolved), whose target
    may be missing from the pod."""
    if target.is_symlink() or not target.exists():
        target.unlink(missing_ok=True)
        target.touch()
    _mount(f"/proc/self/fd/{descriptor}", str(target), None, _MS_BIND)


def die_with_parent() -> None:
    """This process killed by the kernel when its parent ends."""
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _pod_init(hostname: str, directory: Path, report: int) -> None:
    """PID 1 of the pod: its hostname and root, then reaping until it is killed."""
    die_with_parent()
    try:
        socket.sethostname(hostname)
        os.chroot(make_root(directory))
        os.chdir("/")
    except OSError as error:
        where = f": {error.filename}" if error.filename else ""
        os.write(report, f"error {error.strerror or error}{where}\n".encode())
        os._exit(1)
    os.write(report, b"ready\n")
    os.close(report)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    while True:
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass
        signal.sigtimedwait({signal.SIGCHLD}, 5)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m onemachine.node.pod_init")
    parser.add_argument("--hostname", required=True)
    parser.add_argument("--directory", required=True, type=Path)
    parser.add_argument("--report-fd", required=True, type=int)
    options = parser.parse_args(argv)
    try:
        unshare(CLONE_NEWNET | CLONE_NEWUTS | CLONE_NEWNS | CLONE_NEWPID)
    except NamespaceUnavailable as refused:
        os.write(options.report_fd, f"unavailable {refused}\n".encode())
        sys.exit(1)
    node = _node()
    pid = os.fork()
    if pid == 0:
        _pod_init(options.hostname, options.directory, options.report_fd)
    os.write(options.report_fd, f"pid {pid}\n".encode())
    os.close(options.report_fd)
    _wait_for(pid, node)


def _node() -> int | None:
    """A pidfd of the node (this process's parent), None if it is gone already."""
    parent = os.getppid()
    try:
        node = os.pidfd_open(parent)
    except ProcessLookupError:
        return None
    return node if os.getppid() == parent else None


def _wait_for(pod_init: int, node: int | None) -> None:
    """Exit once the pod's PID 1 has; kill it first if the node (pidfd `node`) ends. (Its
    pid cannot be another process's: it is this process's child, not reaped yet.)"""
    if node is None or node in select.select([node, os.pidfd_open(pod_init)], [], [])[0]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pod_init, signal.SIGKILL)
    _, status = os.waitpid(pod_init, 0)
    sys.exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main()
