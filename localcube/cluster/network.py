"""The launcher's private network namespace: it holds only loopback.

The launcher's own process enters it (so its children start there, and its relay's
outgoing connections are made there), before any thread exists: a namespace change applies
to the calling thread only, and a user namespace cannot be entered by a threaded process.
As root this is a new network namespace; otherwise a new user namespace maps the user to
root in it, as `unshare -rn` does. A machine that allows neither stops the launcher, saying
what it refused.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import threading

CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000


class NamespaceUnavailable(Exception):
    """The machine refused a private network namespace; the message says what it refused."""


def enter_private_network() -> None:
    """Move this process into a new network namespace with `lo` up and nothing else."""
    if threading.active_count() != 1:
        raise RuntimeError("enter_private_network must run before any thread is started")
    uid, gid = os.getuid(), os.getgid()
    as_root = os.geteuid() == 0
    flags = CLONE_NEWNET if as_root else CLONE_NEWNET | CLONE_NEWUSER
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(flags) != 0:
        reason = os.strerror(ctypes.get_errno())
        what = "unshare(CLONE_NEWNET)" if as_root else "unshare(CLONE_NEWUSER|CLONE_NEWNET)"
        raise NamespaceUnavailable(
            f"this machine does not allow network namespaces: {what} failed: {reason}"
        )
    if not as_root:
        _map_to_root(uid, gid)
    result = subprocess.run(
        ["ip", "link", "set", "lo", "up"], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise NamespaceUnavailable(f"cannot bring up lo in the new namespace: {result.stderr}")
    interfaces = links()
    if interfaces != ["lo"]:
        raise NamespaceUnavailable(f"the new network namespace holds {interfaces}, not only lo")


def links() -> list[str]:
    """The names of this namespace's network interfaces."""
    listing = subprocess.run(
        ["ip", "-o", "link", "show"], capture_output=True, text=True, check=True
    ).stdout
    return [line.split(":")[1].strip().split("@")[0] for line in listing.splitlines()]


def _map_to_root(uid: int, gid: int) -> None:
    with open("/proc/self/setgroups", "w") as setgroups:
        setgroups.write("deny")
    with open("/proc/self/uid_map", "w") as uid_map:
        uid_map.write(f"0 {uid} 1")
    with open("/proc/self/gid_map", "w") as gid_map:
        gid_map.write(f"0 {gid} 1")
