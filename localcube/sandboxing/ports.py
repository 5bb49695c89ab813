"""Loopback ports for sandboxes, reserved so that two sandboxes never get the same one.

The kernel picks a free port (bind to port 0), but the port is free again once the probe
socket closes, so two sandboxes starting at once could be handed the same port. Every port
handed out stays reserved here until its sandbox ends; the allocator asks the kernel again
while it answers a reserved one. A process outside localcube may still take a port between
the choice and the sandbox's bind: that sandbox then fails to start like any other.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterable

_ATTEMPTS = 1000


def kernel_free_port() -> int:
    """A port no socket on 127.0.0.1 is bound to at this moment."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class PortAllocator:
    """Hands out loopback ports, none twice while it is reserved."""

    def __init__(self, probe: Callable[[], int] = kernel_free_port) -> None:
        self._probe = probe
        self._reserved: set[int] = set()
        self._lock = threading.Lock()

    def allocate(self, count: int = 1) -> list[int]:
        """`count` free ports, reserved until `release`; all or none: RuntimeError when
        not enough can be found."""
        with self._lock:
            ports: list[int] = []
            for _ in range(_ATTEMPTS):
                port = self._probe()
                if port not in self._reserved and port not in ports:
                    ports.append(port)
                    if len(ports) == count:
                        self._reserved.update(ports)
                        return ports
        raise RuntimeError(f"no {count} free loopback ports after {_ATTEMPTS} attempts")

    def reserve(self, ports: Iterable[int]) -> None:
        """Mark ports in use (a sandbox adopted after a restart)."""
        with self._lock:
            self._reserved.update(ports)

    def release(self, ports: Iterable[int]) -> None:
        with self._lock:
            self._reserved.difference_update(ports)

    @property
    def reserved(self) -> frozenset[int]:
        with self._lock:
            return frozenset(self._reserved)
