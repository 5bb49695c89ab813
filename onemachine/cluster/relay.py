"""The host's way in: 127.0.0.1 ports on the host relayed into the private namespace.

A socket belongs to the network namespace it was created in, even after its process moves:
so the launcher opens its listening sockets first (`listen`), then enters the private
namespace, and each connection accepted on a host port is carried to a port on the
namespace's own loopback. Bytes pass unchanged both ways (TLS included), with half-closes.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
from collections.abc import Awaitable, Callable

from onemachine.cluster.layout import LOOPBACK
from onemachine.splice import join

LOG = logging.getLogger("onemachine.cluster.relay")
# Where a connection goes: a port of the namespace's loopback, or a function called (in a
# worker thread) for each connection, which returns (host, port) or raises LookupError.
Target = int | Callable[[], tuple[str, int]]


def listen(port: int = 0) -> socket.socket:
    """A listening socket on 127.0.0.1 (a free port by default), in the current namespace."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((LOOPBACK, port))
    listener.listen(128)
    listener.setblocking(False)
    return listener


class Relay:
    """Carries each connection accepted on a listener to its target (127.0.0.1:PORT, or where
    the resolver says), in whatever namespace the relay's thread runs in; one thread, one
    event loop for all."""

    def __init__(self, routes: list[tuple[socket.socket, Target]]) -> None:
        self._routes = routes
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="relay", daemon=True)
        self._started = threading.Event()
        # Each connection's task, held here: a task only its transport refers to can be
        # collected while it is still pending ("Task was destroyed but it is pending!").
        self._connections: set[asyncio.Task[None]] = set()

    def start(self) -> Relay:
        self._thread.start()
        self._started.wait()
        return self

    def stop(self) -> None:
        """Every connection cancelled and closed, then the loop ended."""
        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self._close_connections(), self._loop)
            self._thread.join(timeout=5)

    async def _close_connections(self) -> None:
        for task in self._connections:
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        self._loop.stop()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        servers = [
            self._loop.run_until_complete(
                asyncio.start_server(self._handler(target), sock=listener)
            )
            for listener, target in self._routes
        ]
        self._started.set()
        try:
            self._loop.run_forever()
        finally:
            for server in servers:
                server.close()
            self._loop.close()

    def _handler(
        self, target: Target
    ) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
        async def carry(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None  # a connection is served by a task of its own
            self._connections.add(task)
            try:
                try:
                    host, port = (
                        (LOOPBACK, target)
                        if isinstance(target, int)
                        else await asyncio.to_thread(target)
                    )
                    inner = await asyncio.open_connection(host, port)
                except (OSError, LookupError) as error:
                    if not isinstance(target, int):
                        LOG.warning("a forwarded connection closed: %s", error)
                    return
                await join((reader, writer), inner)
            except asyncio.CancelledError:
                pass  # the relay's stop; ending as cancelled would log an error per connection
            finally:
                writer.close()
                self._connections.discard(task)

        return carry
