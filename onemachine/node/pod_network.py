"""Pod addresses and the links that carry them, with iproute2's `ip`.

Pods get addresses from 198.18.0.0/16, a block IANA reserves for benchmarking (RFC 2544,
in 198.18.0.0/15): not a private LAN range and never routed on the Internet, so it cannot
collide with the machine's own network. The node owns a bridge `lcpods0` holding
198.18.0.1/16; each pod's network namespace gets `lo` up and the pod end of a veth as
`eth0` 198.18.0.N/16 with its default route via 198.18.0.1. All of this lives in the node's
network namespace, which must be a private one (the launcher's, or a test's): the node
refuses to make pod links anywhere that holds other interfaces, so no address it assigns
ever reaches the machine's network.

Services: with a service CIDR (the launcher's 198.19.0.0/24, RFC 2544's block too), the node's
Service proxy has a network namespace of its own on the bridge (`attach_services`), which holds
the whole CIDR on its loopback (so every ClusterIP is a local address there, and a ClusterIP
port nobody serves refuses at once); each pod, and the node's namespace, route the CIDR
straight onto the bridge. A namespace of its own, because the parts in the node's namespace
listen on every interface there (the Router on :8080): a listener on ClusterIP:8080 beside
them could not bind.
"""

from __future__ import annotations

import os
import subprocess
import threading
from ipaddress import IPv4Address, IPv4Network

from onemachine.netns import NotPrivateNamespace, interfaces, only_loopback

POD_NETWORK = IPv4Network("198.18.0.0/16")
GATEWAY = IPv4Address("198.18.0.1")
BRIDGE = "lcpods0"
_VETH_PREFIX = "lcv"  # the node's end of a pod's veth: lcv<address index>
_SERVICES_VETH = "lcvservices"  # the node's end of the Service proxy's veth


class AddressesExhausted(RuntimeError):
    """Every pod address is in use."""


class PodNetworkError(RuntimeError):
    """An `ip` command the pod network needs failed."""


class AddressPool:
    """Pod addresses from `network`, from .2 upwards (.1 is the node's), round robin: a
    released address is handed out again only after the ones after it, so a client that
    still holds a gone pod's address does not reach its successor at once."""

    def __init__(self, network: IPv4Network = POD_NETWORK) -> None:
        self._first = int(network.network_address) + 2
        self._last = int(network.broadcast_address) - 1
        self._next = self._first
        self._in_use: set[IPv4Address] = set()
        self._lock = threading.Lock()

    @property
    def in_use(self) -> frozenset[IPv4Address]:
        with self._lock:
            return frozenset(self._in_use)

    def allocate(self) -> IPv4Address:
        with self._lock:
            for offset in range(self._last - self._first + 1):
                candidate = self._first + (self._next - self._first + offset) % (
                    self._last - self._first + 1
                )
                address = IPv4Address(candidate)
                if address not in self._in_use:
                    self._in_use.add(address)
                    self._next = candidate + 1 if candidate < self._last else self._first
                    return address
        raise AddressesExhausted(f"all {self._last - self._first + 1} pod addresses are in use")

    def release(self, address: IPv4Address) -> None:
        with self._lock:
            self._in_use.discard(address)


def _ip(*commands: str, pod: int | None = None, in_pod: bool = False) -> None:
    """Run `ip` commands (one batch), handed the pod's network namespace (descriptor `pod`),
    which they name /proc/self/fd/POD (`ip` takes a path for a namespace's name); inside
    that namespace if `in_pod`."""
    argv = ["ip", "-batch", "-"]
    if in_pod:
        argv = ["nsenter", f"--net=/proc/self/fd/{pod}", *argv]
    result = subprocess.run(
        argv,
        input="\n".join(commands) + "\n",
        capture_output=True,
        text=True,
        check=False,
        pass_fds=(pod,) if pod is not None else (),
    )
    if result.returncode != 0:
        where = " in the pod's network namespace" if in_pod else ""
        raise PodNetworkError(f"ip {'; '.join(commands)}{where}: {' '.join(result.stderr.split())}")


def _node_owned(name: str) -> bool:
    return name == BRIDGE or name.startswith(_VETH_PREFIX)


def _this_namespace() -> int:
    """The calling thread's network namespace (its inode): namespaces belong to threads."""
    return os.stat("/proc/thread-self/ns/net").st_ino


_OPENED = object()  # only open() has it: no PodNetwork skips open()'s check


class PodNetwork:
    """The node's bridge and the pods' links, in the network namespace open() checked and
    made them in; attach() and detach() refuse to run from any other (a thread elsewhere,
    the host's above all)."""

    def __init__(
        self,
        pool: AddressPool,
        namespace: int,
        opened: object,
        service_cidr: IPv4Network | None = None,
    ) -> None:
        if opened is not _OPENED:
            raise TypeError(
                "a PodNetwork is made by PodNetwork.open(), which checks that its network "
                "namespace is private"
            )
        self._pool = pool
        self._namespace = namespace
        self.service_cidr = service_cidr

    @classmethod
    def open(
        cls, pool: AddressPool | None = None, service_cidr: IPv4Network | None = None
    ) -> PodNetwork:
        """The pod network of this (private) network namespace: lo up, the bridge made; with
        `service_cidr`, every pod routes it onto the bridge (see `attach_services`)."""
        try:
            only_loopback(also=_node_owned)
        except NotPrivateNamespace as refused:
            raise NotPrivateNamespace(
                f"the node makes pod networks only inside a private network namespace, "
                f"and {refused}; run it through `python -m onemachine cluster`, which "
                "creates one holding only loopback"
            ) from None
        commands = ["link set lo up"]
        if BRIDGE not in interfaces():
            commands += [f"link add {BRIDGE} type bridge", f"addr add {GATEWAY}/16 dev {BRIDGE}"]
        _ip(*commands, f"link set {BRIDGE} up")
        return cls(pool or AddressPool(), _this_namespace(), _OPENED, service_cidr)

    def _in_node_namespace(self, doing: str) -> None:
        if _this_namespace() != self._namespace:
            raise PodNetworkError(
                f"refusing to {doing} from another network namespace than the node's "
                "(the one PodNetwork.open() checked)"
            )

    def attach(self, pod: int) -> IPv4Address:
        """A new address on `eth0` in the pod's network namespace (an open descriptor: a pid
        could be another process's by now), linked to the bridge; lo up there too, and the
        default route via the node. Never the node's own namespace."""
        self._in_node_namespace("attach a pod")
        if os.fstat(pod).st_ino == self._namespace:
            raise PodNetworkError("refusing to give the node's own network namespace a pod address")
        address = self._pool.allocate()
        veth = _veth(address)
        try:
            _ip(
                f"link add {veth} type veth peer name eth0 netns /proc/self/fd/{pod}",
                f"link set {veth} master {BRIDGE} up",
                pod=pod,
            )
            _ip(
                "link set lo up",
                f"addr add {address}/{POD_NETWORK.prefixlen} dev eth0",
                "link set eth0 up",
                f"route add default via {GATEWAY}",
                *([f"route add {self.service_cidr} dev eth0"] if self.service_cidr else []),
                pod=pod,
                in_pod=True,
            )
        except PodNetworkError:
            self.detach(address)
            raise
        return address

    def attach_services(self, services: int) -> None:
        """The Service proxy's network namespace (descriptor `services`, a new one) on the
        bridge: `service_cidr` on its loopback, the pod network on-link through its `eth0`;
        the node's namespace routes the CIDR onto the bridge too (the launcher's forwards)."""
        self._in_node_namespace("attach the Service proxy")
        if self.service_cidr is None:
            raise PodNetworkError("no service CIDR: the node was given none")
        if os.fstat(services).st_ino == self._namespace:
            raise PodNetworkError("refusing to give the node's own namespace the Service CIDR")
        _ip(
            f"link add {_SERVICES_VETH} type veth peer name eth0 netns /proc/self/fd/{services}",
            f"link set {_SERVICES_VETH} master {BRIDGE} up",
            f"route add {self.service_cidr} dev {BRIDGE}",
            pod=services,
        )
        _ip(
            "link set lo up",
            f"addr add {self.service_cidr} dev lo",
            "link set eth0 up",
            f"route add {POD_NETWORK} dev eth0",
            pod=services,
            in_pod=True,
        )

    def detach(self, address: IPv4Address) -> None:
        """The node's end of the pod's link removed (if the pod's end has not taken it
        along already) and the address released."""
        self._in_node_namespace("detach a pod")
        veth = _veth(address)
        if veth in interfaces():
            subprocess.run(["ip", "link", "del", veth], capture_output=True, check=False)
        self._pool.release(address)


def _veth(address: IPv4Address) -> str:
    return f"{_VETH_PREFIX}{int(address) - int(POD_NETWORK.network_address)}"
