"""A deliberately broken AgentCube: a real HTTP proxy in front of localcube that breaks one
promise of the contract, so the tests can prove the suite notices.

It runs its own event loop in a thread on a free loopback port.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from dataclasses import dataclass, field

import aiohttp
from aiohttp import web

SESSION_HEADER = "x-agentcube-session-id"
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "host", "content-length"}


@dataclass(frozen=True)
class Fault:
    """One broken promise: a header dropped on the way in or out, or statuses rewritten."""

    request_header_dropped: str | None = None
    response_header_dropped: str | None = None
    status_rewrites: dict[int, int] = field(default_factory=dict)


FAULTS = {
    "drop-session-header": Fault(response_header_dropped=SESSION_HEADER),
    "ignore-session-id": Fault(request_header_dropped=SESSION_HEADER),
    "not-found-as-ok": Fault(status_rewrites={404: 200}),
}


class FaultProxy:
    def __init__(self, upstream: str, fault: str) -> None:
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; known: {', '.join(FAULTS)}")
        self.upstream = upstream.rstrip("/")
        self.fault = FAULTS[fault]
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stopped: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("fault proxy did not start")
        return self

    def __exit__(self, *_: object) -> None:
        self._loop.call_soon_threadsafe(self._stopped.set)
        self._thread.join(10)

    def _run(self) -> None:
        self._loop.run_until_complete(self._serve())

    async def _serve(self) -> None:
        self._stopped = asyncio.Event()
        async with aiohttp.ClientSession(auto_decompress=False) as client:
            app = web.Application(client_max_size=64 << 20)
            app.router.add_route("*", "/{tail:.*}", lambda request: self._forward(client, request))
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", self.port).start()
            self._ready.set()
            await self._stopped.wait()
            await runner.cleanup()

    async def _forward(self, client: aiohttp.ClientSession, request: web.Request) -> web.Response:
        dropped = {*_HOP_BY_HOP, self.fault.request_header_dropped}
        headers = {k: v for k, v in request.headers.items() if k.lower() not in dropped}
        async with client.request(
            request.method,
            self.upstream + request.rel_url.path_qs,
            headers=headers,
            data=await request.read(),
        ) as answer:
            dropped = {*_HOP_BY_HOP, self.fault.response_header_dropped}
            return web.Response(
                status=self.fault.status_rewrites.get(answer.status, answer.status),
                body=await answer.read(),
                headers={k: v for k, v in answer.headers.items() if k.lower() not in dropped},
            )
