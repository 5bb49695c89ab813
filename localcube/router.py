"""The Router: invocation routes that create or look up a session and proxy to its sandbox.

Bodies stream in both directions and upstream connections are pooled, so the proxy adds
little to a call. Every proxied answer carries `x-agentcube-session-id`; errors raised
here use upstream's status codes and bodies.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import zlib
from collections.abc import AsyncIterator

import aiohttp
import yarl
from aiohttp import hdrs, web
from multidict import CIMultiDict

from agentcube_contract.session import SESSION_HEADER as SESSION_HEADER_NAME
from localcube.bearer_auth import Handler, caller, owner_refusal
from localcube.content_sniff import SNIFF_LENGTH, detect_content_type, sniffed_by_go
from localcube.forwarding import (
    asks_for_gzip,
    escaped,
    invocation_path,
    request_headers,
    response_headers,
)
from localcube.manifests import AGENT_RUNTIME, CODE_INTERPRETER
from localcube.picod.gocompat import gin_json
from localcube.session_errors import CREATION_FAILURES, router_refusal, session_not_found
from localcube.signing import RequestSigner
from localcube.store import SandboxRecord, StoreError
from localcube.websocket_relay import asks_for_websocket, relay
from localcube.workload_manager import WorkloadManager

# As Go's net/http writes it (CanonicalMIMEHeaderKey); matched in any case.
SESSION_HEADER = "-".join(word.capitalize() for word in SESSION_HEADER_NAME.split("-"))
ADMIN_PREFIX = "/localcube/"
log = logging.getLogger("localcube.router")


PREFLIGHT_TIMEOUT = 0.2  # one dial, no retry (pkg/router/server.go:55-60, handlers.go:204-245)


@web.middleware
async def gin_no_route(request: web.Request, handler: Handler) -> web.StreamResponse:
    """A path or method no route serves, outside the admin API: Gin's plain 404, before any
    authentication (gin.New() has no method-not-allowed answer; pkg/router/server.go:154-181)."""
    if not request.path.startswith(ADMIN_PREFIX) and request.match_info.http_exception is not None:
        return web.Response(status=404, body=b"404 page not found", content_type="text/plain")
    return await handler(request)


async def no_server_header(_: web.Request, response: web.StreamResponse) -> None:
    """Gin (Go's net/http) names no Server; a proxied answer keeps the sandbox's own."""
    if not isinstance(response, ProxiedResponse):
        response.headers.popall(hdrs.SERVER, None)


def error(status: int, message: str, code: str | None = None) -> web.Response:
    """The Router's own answers: a gin.H map through c.JSON."""
    body = {"error": message} if code is None else {"error": message, "code": code}
    return gin_json(status, body)


class Router:
    def __init__(
        self,
        workloads: WorkloadManager,
        signer: RequestSigner,
        max_concurrent_requests: int,
        read_timeout: float = 30.0,
    ) -> None:
        self.workloads = workloads
        self.signer = signer
        self.max_concurrent_requests = max_concurrent_requests
        self.read_timeout = read_timeout
        self._active = 0
        self._upstream: aiohttp.ClientSession | None = None

    def routes(self) -> list[web.RouteDef]:
        agent = "/v1/namespaces/{namespace}/agent-runtimes/{name}/invocations{path:.*}"
        interpreter = "/v1/namespaces/{namespace}/code-interpreters/{name}/invocations{path:.*}"
        return [
            web.get("/health/live", self.live, allow_head=False),
            web.get("/health/ready", self.ready, allow_head=False),
            web.get(agent, self.invoke_agent, allow_head=False),
            web.post(agent, self.invoke_agent),
            web.get(interpreter, self.invoke_interpreter, allow_head=False),
            web.post(interpreter, self.invoke_interpreter),
        ]

    async def close(self) -> None:
        if self._upstream is not None:
            await self._upstream.close()

    async def live(self, _: web.Request) -> web.Response:
        return gin_json(200, {"status": "alive"})

    async def ready(self, _: web.Request) -> web.Response:
        return gin_json(200, {"status": "ready"})

    async def invoke_agent(self, request: web.Request) -> web.StreamResponse:
        return await self._invoke(request, AGENT_RUNTIME)

    async def invoke_interpreter(self, request: web.Request) -> web.StreamResponse:
        return await self._invoke(request, CODE_INTERPRETER)

    async def _invoke(self, request: web.Request, kind: str) -> web.StreamResponse:
        if self._active >= self.max_concurrent_requests:
            return error(429, "server overloaded, please try again later", "SERVER_OVERLOADED")
        self._active += 1
        try:
            return await self._serve(request, kind)
        finally:
            self._active -= 1

    async def _serve(self, request: web.Request, kind: str) -> web.StreamResponse:
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        session_id = request.headers.get(SESSION_HEADER, "")
        if session_id:
            try:
                sandbox = self.workloads.session(session_id)
            except StoreError as failure:
                return router_refusal(failure)
            if sandbox is None:
                return session_not_found(session_id)
            refusal = owner_refusal(request, sandbox.owner)
            if refusal is not None:
                return refusal
        else:
            try:
                sandbox = await self.workloads.create_session(
                    kind, namespace, name, owner=_subject(request), ttl=None
                )
            except CREATION_FAILURES as failure:
                return router_refusal(failure)
        if sandbox.lost_at is not None:  # its sandbox died: nothing to forward to
            return error(502, "sandbox unreachable")
        session = sandbox.session_id or ""
        self.workloads.request_started(session)
        try:
            return await self._forward(request, sandbox, invocation_path(request))
        finally:
            self.workloads.request_finished(session)

    async def _forward(
        self, request: web.Request, sandbox: SandboxRecord, path: str
    ) -> web.StreamResponse:
        """The call forwarded to its sandbox's port: relayed as a WebSocket when it asks for
        one, else sent plain and its answer streamed back."""
        session_id = sandbox.session_id or ""
        if not sandbox.endpoints:  # a record written before its sandbox was (its placeholder)
            return error(404, "no entry point found for sandbox")
        port = next(
            (port for prefix, port in sandbox.endpoints if path.startswith(prefix)),
            sandbox.endpoints[0][1],
        )
        url = _sandbox_url(port, path, request)
        headers = request_headers(request, self.signer.token_for(session_id, _subject(request)))
        websocket = asks_for_websocket(request)
        gzip_asked = not websocket and asks_for_gzip(request, headers)
        try:
            await _preflight(port)
        except OSError as failure:
            log.error("sandbox preflight failed (session %s): %r", session_id, failure)
            return self._failed(session_id, failure)
        try:
            if websocket:
                return await relay(
                    self._client(), request, url, headers, {SESSION_HEADER: session_id}
                )
            upstream = await self._send(request, url, headers)
        except (OSError, aiohttp.ClientError) as failure:
            log.error("proxy error (session %s): %r", session_id, failure)
            return self._failed(session_id, failure)
        async with upstream:
            return await _stream_answer(request, upstream, session_id, gzip_asked)

    async def _send(
        self, request: web.Request, url: yarl.URL, headers: CIMultiDict[str]
    ) -> aiohttp.ClientResponse:
        """The plain call sent on, its body streamed as it comes, within the read timeout."""
        body = request.content if request.body_exists else None
        deadline = None if body is None else _read_deadline(body, self.read_timeout)
        try:
            return await self._client().request(request.method, url, headers=headers, data=body)
        finally:
            if deadline is not None:
                deadline.cancel()

    def _failed(self, session_id: str, failure: BaseException) -> web.Response:
        """The answer to a call its sandbox did not serve. A session that ended meanwhile
        (its lifetime ran out, it was deleted) lost its sandbox on purpose: the caller
        learns that it ended, as its next call would."""
        try:
            ended = self.workloads.session(session_id) is None
        except StoreError:  # the store fails too: the sandbox's failure is the answer
            ended = False
        return session_not_found(session_id) if ended else _unavailable(failure)

    def _client(self) -> aiohttp.ClientSession:
        if self._upstream is None:
            self._upstream = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, keepalive_timeout=30),
                # No timeout once the dial succeeded: a call is waited for until its client
                # gives up, which cancels it (upstream's transport has none either).
                timeout=aiohttp.ClientTimeout(total=None),
                auto_decompress=False,
                skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
            )
        return self._upstream


def _sandbox_url(port: int, path: str, request: web.Request) -> yarl.URL:
    """The sandbox's URL for the call; `encoded`, as yarl would resolve ".." segments, which
    must reach the sandbox."""
    return yarl.URL.build(
        scheme="http",
        host="127.0.0.1",
        port=port,
        path=escaped(path),
        query_string=request.rel_url.raw_query_string,
        encoded=True,
    )


async def _stream_answer(
    request: web.Request, upstream: aiohttp.ClientResponse, session_id: str, gzip_asked: bool
) -> web.StreamResponse:
    """The sandbox's answer streamed back as upstream's Router passes it on: gunzipped where
    the client did not ask for gzip, its type sniffed where Go's server names one, its
    length kept when known; an answer broken off midway ends the response there."""
    kept = response_headers(upstream.headers.items())
    gunzip = None
    if gzip_asked and kept.get("Content-Encoding", "").lower() == "gzip":
        gunzip = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        kept.popall("Content-Encoding")
        kept.popall("Content-Length", None)
    sized = upstream.content_length is not None and gunzip is None
    chunks = _decoded(upstream.content.iter_any(), gunzip)
    opening: bytes = b""
    broken: BaseException | None = None
    if sniffed_by_go(upstream.status, kept):  # Go's server names a type, as sniffed
        opening, broken = await _opening(chunks, SNIFF_LENGTH if sized else 1)
        if opening:
            kept["Content-Type"] = detect_content_type(opening)
    answer = _SizedResponse if sized else ProxiedResponse
    response = answer(status=upstream.status, reason=upstream.reason)
    response.headers.extend(kept)
    response.headers[SESSION_HEADER] = session_id
    await response.prepare(request)
    try:
        if opening:
            await response.write(opening)
        if broken is not None:
            raise broken
        async for chunk in chunks:
            await response.write(chunk)
    except (aiohttp.ClientError, zlib.error) as failure:
        log.warning("sandbox of session %s broke off its answer: %s", session_id, failure)
        return response
    await response.write_eof()
    return response


async def _decoded(
    chunks: AsyncIterator[bytes], gunzip: zlib._Decompress | None
) -> AsyncIterator[bytes]:
    """The sandbox's body as the client gets it: gunzipped where the Router asked for gzip
    (Go's Transport decompresses what it asked for)."""
    async for chunk in chunks:
        yield chunk if gunzip is None else gunzip.decompress(chunk)
    if gunzip is not None:
        yield gunzip.flush()


async def _opening(chunks: AsyncIterator[bytes], wanted: int) -> tuple[bytes, BaseException | None]:
    """The body's first `wanted` bytes or more (fewer at its end), what Go's server sniffs:
    the first 512 of an answer of known length, which it buffers; the first part of one of
    unknown length, which the ReverseProxy flushes as it comes. With the failure, if the
    sandbox broke off before."""
    opening = b""
    try:
        async for chunk in chunks:
            opening += chunk
            if len(opening) >= wanted:
                break
    except (aiohttp.ClientError, zlib.error) as failure:
        return opening, failure
    return opening, None


class ProxiedResponse(web.StreamResponse):
    """A sandbox's answer with the sandbox's headers only, as Go's ReverseProxy copies
    them: none of the defaults aiohttp adds where they are missing (a `Content-Type` of
    `application/octet-stream`, its own `Server`)."""

    async def _prepare_headers(self) -> None:
        given = {name.lower() for name in self.headers}
        await super()._prepare_headers()
        for name in (hdrs.CONTENT_TYPE, hdrs.SERVER):
            if name.lower() not in given:
                self.headers.popall(name, None)


class _SizedResponse(ProxiedResponse):
    """An answer of known length: its headers leave with the first part of its body, in one
    write, as Go's ReverseProxy sends them (it flushes at once only an answer of unknown
    length). Sent apart, they cost a second write and, on loopback, the time the kernel
    spends delivering it: a fifth of what the Router adds to a small call."""

    _send_headers_immediately = False  # aiohttp's own switch, which web.Response sets too


async def _preflight(port: int) -> None:
    """Dial the sandbox once, as upstream does before proxying; raise OSError (TimeoutError
    for a dial that did not complete in time). The socket, not this event loop, says whether
    it completed: a loop that got round to it late must not turn a done dial into a 504."""
    loop = asyncio.get_running_loop()
    with socket.socket() as dial:
        dial.setblocking(False)
        try:
            await asyncio.wait_for(loop.sock_connect(dial, ("127.0.0.1", port)), PREFLIGHT_TIMEOUT)
        except TimeoutError as failure:
            if not _connected(dial):
                raise TimeoutError(f"dial 127.0.0.1:{port}: i/o timeout") from failure


def _read_deadline(body: aiohttp.StreamReader, read_timeout: float) -> asyncio.TimerHandle:
    """Fail the reading of a call's body that has not all arrived within the read timeout,
    as Go's server does past its ReadTimeout (pkg/router/server.go:196: the deadline it sets
    as it starts reading a request, Go 1.26's net/http/server.go:984 and :1041). Counted here
    from the start of the handler, once the headers are read."""

    def expire() -> None:
        if not body.at_eof():
            body.set_exception(TimeoutError("read request body: i/o timeout"))

    return asyncio.get_running_loop().call_later(read_timeout, expire)


def _connected(dial: socket.socket) -> bool:
    try:
        dial.getpeername()
    except OSError:  # ENOTCONN: the handshake has not completed
        return False
    return dial.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0


def _unavailable(failure: BaseException) -> web.Response:
    """Upstream's answer for a sandbox it cannot reach (pkg/router/handlers.go:247-257):
    refused 502, timed out 504, any other error (reset, EOF) 503."""
    cause = getattr(failure, "os_error", failure)  # aiohttp wraps the connector's OSError
    if isinstance(cause, ConnectionRefusedError):
        return error(502, "sandbox unreachable")
    if isinstance(cause, TimeoutError | aiohttp.ServerTimeoutError):
        return error(504, "sandbox timeout")
    return error(503, "sandbox unreachable")


def _subject(request: web.Request) -> str | None:
    who = caller(request)
    return None if who is None else who.subject
