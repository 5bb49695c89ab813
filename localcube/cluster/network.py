"""The launcher's private network namespace: it holds only loopback.

The launcher's own process enters it (so its children start there, and its relay's
outgoing connections are made there), before any thread exists: a namespace change applies
to the calling thread only (localcube/netns.py), and a user namespace cannot be entered by
a threaded process. As root this is a new network namespace; otherwise a new user namespace
maps the user to root in it, as `unshare -rn` does. A machine that allows neither stops the
launcher with netns's NamespaceUnavailable, saying what it refused.
"""

from __future__ import annotations

import os
import subprocess
import threading

from localcube import netns

CLONE_NEWUSER = 0x10000000


def enter_private_network() -> None:
    """Move this process into a new network namespace with `lo` up and nothing else."""
    if threading.active_count() != 1:
        raise RuntimeError("enter_private_network must run before any thread is started")
    uid, gid = os.getuid(), os.getgid()
    if os.geteuid() == 0:
        netns.unshare(netns.CLONE_NEWNET)
    else:
        netns.unshare(netns.CLONE_NEWNET | CLONE_NEWUSER)
        _map_to_root(uid, gid)
    result = subprocess.run(
        ["ip", "link", "set", "lo", "up"], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise netns.NamespaceUnavailable(
            f"cannot bring up lo in the new network namespace: ip: {result.stderr.strip()}"
        )
    netns.only_loopback()


def _map_to_root(uid: int, gid: int) -> None:
    for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
        with open(f"/proc/self/{name}", "w", encoding="ascii") as file:
            file.write(text)
