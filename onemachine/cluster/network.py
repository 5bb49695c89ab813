"""The launcher's private network namespace: it holds only loopback.

The launcher's own process enters it (so its children start there, and its relay's
outgoing connections are made there), before any thread exists: a namespace change applies
to the calling thread only (onemachine/netns.py), and a user namespace cannot be entered by
a threaded process. As root this is a new network namespace; otherwise a new user namespace
maps the user to root in it, as `unshare -rn` does. A machine that allows neither stops the
launcher with netns's NamespaceUnavailable, saying what it refused: each way this can fail
on a machine raises it.
"""

from __future__ import annotations

import os
import subprocess
import threading

from onemachine import netns


def enter_private_network() -> None:
    """Move this process into a new network namespace with `lo` up and nothing else."""
    if threading.active_count() != 1:
        raise RuntimeError("enter_private_network must run before any thread is started")
    uid, gid = os.getuid(), os.getgid()
    if os.geteuid() == 0:
        netns.unshare(netns.CLONE_NEWNET)
    else:
        netns.unshare(netns.CLONE_NEWNET | netns.CLONE_NEWUSER)
        map_to_root(uid, gid)
    try:
        result = subprocess.run(
            ["ip", "link", "set", "lo", "up"], capture_output=True, text=True, check=False
        )
    except OSError as error:
        raise netns.NamespaceUnavailable(
            f"cannot bring up lo in the new network namespace: ip: {error.strerror} "
            "(iproute2's ip is needed on the PATH)"
        ) from error
    if result.returncode != 0:
        raise netns.NamespaceUnavailable(
            f"cannot bring up lo in the new network namespace: ip: {result.stderr.strip()}"
        )
    netns.only_loopback()


def map_to_root(uid: int, gid: int) -> None:
    """Map the user to root in the user namespace just entered, as `unshare -r` does."""
    for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
        try:
            with open(f"/proc/self/{name}", "w", encoding="ascii") as file:
                file.write(text)
        except OSError as error:
            raise netns.NamespaceUnavailable(
                "this machine does not let this user map itself to root in a new user "
                f"namespace: writing /proc/self/{name} failed: {error.strerror}; run as root "
                "or allow unprivileged user namespaces"
            ) from error
