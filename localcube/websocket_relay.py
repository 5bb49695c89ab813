"""A call that asks to switch to WebSocket, as upstream's Router passes it on.

Go's httputil.ReverseProxy (pkg/router/handlers.go:383-398; Go 1.26's
net/http/httputil/reverseproxy.go, cited by line below) sends an `Upgrade` request to the
sandbox with `Connection: Upgrade` and its `Upgrade` kept (reverseproxy.go:477-498); when
the sandbox answers 101 (reverseproxy.go:574-580, its ModifyResponse first: the session
header, pkg/router/handlers.go:354-358) in the protocol asked for, it hijacks the caller's
connection, which clears the server's read and write deadlines (net/http/server.go:317-325),
writes the sandbox's 101 and copies bytes both ways until either side ends
(reverseproxy.go:820-886). Any other answer of the sandbox goes back as an ordinary answer.
The Router's handler, and so its concurrency slot and the call's activity, lasts as long as
the conversation.

localcube relays messages, not bytes (aiohttp speaks WebSocket on both sides): each side's
handshake, pings and compression are its own; the messages, their order and kind, and the
close code and reason reach the other side as sent.
"""

from __future__ import annotations

import asyncio
import enum
import logging

import aiohttp
import yarl
from aiohttp import WSMsgType, web
from multidict import CIMultiDict

log = logging.getLogger("localcube.router")

# The handshake headers each side writes for itself.
_HANDSHAKE = ("Sec-WebSocket-Key", "Sec-WebSocket-Version", "Sec-WebSocket-Extensions")
_PROTOCOL = "Sec-WebSocket-Protocol"


def asks_for_websocket(request: web.Request) -> bool:
    """Whether the call asks to switch to WebSocket: `Connection` names `upgrade` and
    `Upgrade` names `websocket` (Go's upgradeType, net/http/httputil/reverseproxy.go)."""
    connection = {
        token.strip().lower() for token in request.headers.get("Connection", "").split(",")
    }
    return "upgrade" in connection and request.headers.get("Upgrade", "").lower() == "websocket"


async def relay(
    client: aiohttp.ClientSession,
    request: web.Request,
    url: yarl.URL,
    headers: CIMultiDict[str],
    extra_answer_headers: dict[str, str],
) -> web.StreamResponse:
    """Open the WebSocket at the sandbox with the call's forwarded `headers`, then accept
    the caller's (answering with `extra_answer_headers` too) and relay until either side
    closes. A sandbox that does not switch gets its status passed on; one that switches
    other than as asked raises aiohttp.WSServerHandshakeError."""
    for name in (*_HANDSHAKE, _PROTOCOL):
        headers.popall(name, None)
    protocols = [
        token.strip()
        for value in request.headers.getall(_PROTOCOL, [])
        for token in value.split(",")
        if token.strip()
    ]
    try:
        sandbox = await client.ws_connect(
            url,
            headers=headers,
            protocols=protocols,
            autoclose=False,
            autoping=True,
            max_msg_size=0,
        )
    except aiohttp.WSServerHandshakeError as refusal:
        if refusal.status == 101:  # switched, but not as asked: the proxy's error handler
            raise  # (reverseproxy.go:820-832), the Router's 503 (pkg/router/handlers.go:247-257)
        # The sandbox answered without switching: its status, as upstream passes it on.
        return web.Response(status=refusal.status, headers=extra_answer_headers)
    async with sandbox:
        caller = web.WebSocketResponse(
            protocols=[sandbox.protocol] if sandbox.protocol else (),
            autoclose=False,
            autoping=True,
            max_msg_size=0,
        )
        caller.headers.update(extra_answer_headers)
        await caller.prepare(request)
        await _both_ways(caller, sandbox)
    return caller


async def _both_ways(
    caller: web.WebSocketResponse, sandbox: aiohttp.ClientWebSocketResponse
) -> None:
    """Relay each way until the conversation ends. A close from one side is passed to the
    other, whose answering close comes back; a side that broke off leaves the other to be
    told it is going away."""
    upward = asyncio.create_task(_pass_on(caller, sandbox))
    downward = asyncio.create_task(_pass_on(sandbox, caller))
    try:
        done, pending = await asyncio.wait({upward, downward}, return_when=asyncio.FIRST_COMPLETED)
        if any(task.result() is _Ending.BROKEN for task in done):
            for task in pending:
                task.cancel()
            for side in (caller, sandbox):
                await side.close(code=aiohttp.WSCloseCode.GOING_AWAY)
        await asyncio.gather(*pending, return_exceptions=True)
    finally:
        for task in (upward, downward):
            task.cancel()
    # The close each side answered with goes back to the side that closed first.
    await caller.close(code=sandbox.close_code or aiohttp.WSCloseCode.OK)
    await sandbox.close(code=caller.close_code or aiohttp.WSCloseCode.OK)


class _Ending(enum.Enum):
    CLOSED = "the source closed, and its close was passed on"
    CLOSING = "the source is being closed by the other way"
    BROKEN = "the source broke off"


async def _pass_on(
    source: web.WebSocketResponse | aiohttp.ClientWebSocketResponse,
    sink: web.WebSocketResponse | aiohttp.ClientWebSocketResponse,
) -> _Ending:
    """Each message of `source` to `sink` until `source` ends."""
    while True:
        message = await source.receive()
        if message.type is WSMsgType.TEXT:
            await sink.send_str(message.data)
        elif message.type is WSMsgType.BINARY:
            await sink.send_bytes(message.data)
        elif message.type is WSMsgType.CLOSE:
            await sink.close(code=message.data, message=(message.extra or "").encode())
            return _Ending.CLOSED
        elif message.type is WSMsgType.CLOSING:
            return _Ending.CLOSING
        elif message.type in (WSMsgType.CLOSED, WSMsgType.ERROR):
            log.warning("a WebSocket relay broke off: %r", source.exception())
            return _Ending.BROKEN
