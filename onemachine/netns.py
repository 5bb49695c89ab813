"""Linux namespaces through libc (ctypes): unshare, setns, and the check that a network
namespace is private (holds only `lo`).

Network namespaces belong to a thread, not to a process: `setns` and `unshare` here change
the calling thread only (and the threads and processes it starts afterwards). When the
machine refuses a namespace, `NamespaceUnavailable` says which and why; nothing falls back
to the machine's own network.
"""

from __future__ import annotations

import ctypes
import os
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

_KINDS = {
    CLONE_NEWNET: ("network", "CLONE_NEWNET"),
    CLONE_NEWUTS: ("UTS", "CLONE_NEWUTS"),
    CLONE_NEWNS: ("mount", "CLONE_NEWNS"),
    CLONE_NEWPID: ("PID", "CLONE_NEWPID"),
    CLONE_NEWUSER: ("user", "CLONE_NEWUSER"),
}

_libc = ctypes.CDLL(None, use_errno=True)


class NamespaceUnavailable(RuntimeError):
    """The machine (kernel, container runtime or missing capability) refused a namespace."""


class NotPrivateNamespace(RuntimeError):
    """The current network namespace holds interfaces other than loopback."""


def _describe(flags: int) -> tuple[str, str]:
    """('network, UTS and mount', 'CLONE_NEWNET|CLONE_NEWUTS|CLONE_NEWNS') for `flags`."""
    kinds = [kind for flag, kind in _KINDS.items() if flags & flag] or [("these", hex(flags))]
    words = [kind[0] for kind in kinds]
    listed = ", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else words[0]
    return listed, "|".join(kind[1] for kind in kinds)


def unshare(flags: int) -> None:
    """The calling thread into new namespaces of the kinds `flags` names (CLONE_NEW*)."""
    if _libc.unshare(ctypes.c_int(flags)) != 0:
        reason = os.strerror(ctypes.get_errno())
        kinds, names = _describe(flags)
        raise NamespaceUnavailable(
            f"this machine does not allow {kinds} namespaces: unshare({names}) failed: {reason}"
        )


def setns(fd: int, nstype: int) -> None:
    """The calling thread into the namespace of kind `nstype` that `fd` refers to."""
    if _libc.setns(ctypes.c_int(fd), ctypes.c_int(nstype)) != 0:
        reason = os.strerror(ctypes.get_errno())
        kinds, names = _describe(nstype)
        raise NamespaceUnavailable(
            f"cannot enter that {kinds} namespace: setns({names}) failed: {reason}"
        )


@contextmanager
def entered(namespace: str | os.PathLike[str] | int, nstype: int = CLONE_NEWNET) -> Iterator[None]:
    """The calling thread inside `namespace` (a path such as /proc/PID/ns/net, or an open
    descriptor) of kind `nstype` (CLONE_NEWNET or CLONE_NEWUTS) for the block, and back in
    its own namespace after it."""
    kind = {CLONE_NEWNET: "net", CLONE_NEWUTS: "uts"}[nstype]
    own = os.open(f"/proc/thread-self/ns/{kind}", os.O_RDONLY)
    target = namespace if isinstance(namespace, int) else os.open(namespace, os.O_RDONLY)
    try:
        setns(target, nstype)
        try:
            yield
        finally:
            setns(own, nstype)
    finally:
        os.close(own)
        if target is not namespace:
            os.close(target)


def interfaces() -> list[str]:
    """The names of the interfaces of the calling thread's network namespace."""
    return [name for _, name in socket.if_nameindex()]


def only_loopback(also: Callable[[str], bool] | None = None) -> None:
    """Raise NotPrivateNamespace unless the calling thread's network namespace holds only
    `lo` (and interfaces `also` accepts), naming every other interface."""
    foreign = [name for name in interfaces() if name != "lo" and not (also and also(name))]
    if foreign:
        raise NotPrivateNamespace(
            f"this network namespace is not private: it holds {', '.join(foreign)} besides lo"
        )


def new_network_namespace() -> int:
    """A descriptor of a new network namespace (holding only a down `lo`), made by a
    short-lived thread so that the calling thread stays where it is; NamespaceUnavailable if
    the machine refuses."""
    made: list[int | BaseException] = []

    def make() -> None:
        try:
            unshare(CLONE_NEWNET)
            made.append(os.open("/proc/thread-self/ns/net", os.O_RDONLY))
        except BaseException as error:
            made.append(error)

    thread = threading.Thread(target=make)
    thread.start()
    thread.join()
    if isinstance(made[0], BaseException):
        raise made[0]
    return made[0]
