"""The Router streams as upstream's does: Go's httputil.ReverseProxy behind
pkg/router/handlers.go:383-398 flushes an event stream and an answer of unknown length as
they come (reverseproxy.go, flushInterval: -1 for text/event-stream and for an unknown
length), passes a WebSocket upgrade through, and its server's ReadTimeout
(pkg/router/server.go:196) bounds the reading of a call, not a switched conversation
(net/http/server.go, hijackLocked clears the deadlines)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
import socket
import time
from collections.abc import Iterator

import aiohttp
import pytest

from localcube import embedded
from tests.localcube.support import (
    FIXTURES,
    NAMESPACE,
    SESSION_HEADER,
    Client,
    agent_running,
)
from tests.waiting import wait_until

READ_TIMEOUT = 1.0
TOKEN = "streaming-caller-Hq4Lm9"


@pytest.fixture(scope="module")
def cube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[embedded.RunningLocalCube]:
    work = tmp_path_factory.mktemp("streams")
    (work / "tokens").write_text(f"caller={TOKEN}\n")
    started = embedded.start(
        [FIXTURES],
        work / "localcube.log",
        gc_interval="100ms",
        extra_arguments=[
            "--read-timeout",
            f"{READ_TIMEOUT}s",
            "--token-file",
            str(work / "tokens"),
        ],
    )
    yield started
    started.stop()


@pytest.fixture
def session(cube: embedded.RunningLocalCube) -> str:
    answer = Client(cube.url, TOKEN).agent("echo-agent", json={"input": "open"})
    assert answer.status_code == 200
    return answer.headers[SESSION_HEADER]


def _url(cube: embedded.RunningLocalCube, path: str) -> str:
    return f"{cube.url}/v1/namespaces/{NAMESPACE}/agent-runtimes/echo-agent/invocations{path}"


def _headers(session: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN}", SESSION_HEADER: session}


async def _arrivals(
    url: str, session: str
) -> tuple[aiohttp.ClientResponse, list[tuple[bytes, float]]]:
    async with (
        aiohttp.ClientSession() as client,
        client.get(url, headers=_headers(session)) as answer,
    ):
        parts = [(chunk, time.time()) async for chunk in answer.content.iter_any()]
        return answer, parts


def test_events_are_passed_on_as_the_agent_sends_them(cube, session) -> None:
    url = _url(cube, "/echo/events?count=4&spacing=0.3&tag=t")
    answer, parts = asyncio.run(_arrivals(url, session))
    assert answer.status == 200 and answer.headers["Content-Type"] == "text/event-stream"
    events = [
        (json.loads(line[5:]), arrived)
        for chunk, arrived in parts
        for line in chunk.split(b"\n")
        if line.startswith(b"data:")
    ]
    assert [event["number"] for event, _ in events] == [0, 1, 2, 3]
    first_arrived, last_sent = events[0][1], events[-1][0]["sent_at"]
    assert first_arrived < last_sent - 0.5  # one clock: localcube's sandboxes are local


def test_an_answer_of_unknown_length_passes_through_in_its_chunks(cube, session) -> None:
    url = _url(cube, "/echo/chunks?count=3&spacing=0.3&tag=t")
    answer, parts = asyncio.run(_arrivals(url, session))
    assert "Content-Length" not in answer.headers
    assert answer.headers["Transfer-Encoding"] == "chunked"
    assert b"".join(chunk for chunk, _ in parts) == b"".join(
        f"chunk {number} of 3: t\n".encode() for number in range(3)
    )
    assert parts[-1][1] - parts[0][1] > 0.4  # each chunk left as the agent wrote it


async def _converse(url: str, session: str, hold: float) -> dict:
    async with (
        aiohttp.ClientSession() as client,
        client.ws_connect(url, headers=_headers(session)) as ws,
    ):
        switched = dict(ws._response.headers)  # the 101's, which aiohttp keeps only there
        greeting = json.loads(await ws.receive_str())
        await ws.send_str("hello")
        text = await ws.receive()
        await asyncio.sleep(hold)
        await ws.send_bytes(b"\x00\xff")
        binary = await ws.receive()
        await ws.close(code=4001, message=b"bye")
        return {
            "headers": switched,
            "greeting": greeting,
            "replies": [(text.type, text.data), (binary.type, binary.data)],
            "close_code": ws.close_code,
        }


def test_a_websocket_is_switched_in_the_session_and_relayed_both_ways(cube, session) -> None:
    result = asyncio.run(_converse(_url(cube, "/echo/ws"), session, 0))
    assert result["headers"]["Upgrade"].lower() == "websocket"
    assert result["headers"][SESSION_HEADER.title()] == session
    assert result["replies"] == [
        (aiohttp.WSMsgType.TEXT, "echo: hello"),
        (aiohttp.WSMsgType.BINARY, b"\x00\xff"),
    ]
    assert result["close_code"] == 4001  # the caller's close, answered by the agent
    sandbox = result["greeting"]["sandbox"]
    assert sandbox["pid"] == Client(cube.url, TOKEN).sandbox_of(session)["pid"]
    # The Router signs its own request: the caller's token stops there.
    assert sandbox["authorization_sha256"] != hashlib.sha256(f"Bearer {TOKEN}".encode()).hexdigest()
    assert hashlib.sha256(TOKEN.encode()).hexdigest() not in sandbox["header_word_sha256s"]


def test_a_websocket_outlives_the_read_timeout_and_counts_as_a_call_in_flight(
    cube, session
) -> None:
    client = Client(cube.url, TOKEN)

    async def with_a_look_meanwhile() -> tuple[dict, int]:
        conversation = asyncio.create_task(
            _converse(_url(cube, "/echo/ws"), session, READ_TIMEOUT + 0.5)
        )
        await asyncio.sleep(READ_TIMEOUT)
        in_flight = await asyncio.to_thread(lambda: client.sandbox_of(session)["callsInFlight"])
        return await conversation, in_flight

    result, in_flight = asyncio.run(with_a_look_meanwhile())
    assert in_flight == 1
    assert result["replies"][1] == (aiohttp.WSMsgType.BINARY, b"\x00\xff")
    assert result["close_code"] == 4001


def test_a_sandbox_that_does_not_switch_has_its_status_passed_on(cube, session) -> None:
    async def upgrade_a_plain_path() -> int:
        async with aiohttp.ClientSession() as client:
            try:
                await client.ws_connect(_url(cube, "/echo/missing"), headers=_headers(session))
            except aiohttp.WSServerHandshakeError as refusal:
                return refusal.status
        raise AssertionError("the Router switched a call its sandbox did not switch")

    assert asyncio.run(upgrade_a_plain_path()) == 404


def test_a_body_slower_than_the_read_timeout_is_answered_as_a_timeout(cube, session) -> None:
    """Go's server reads a request within its ReadTimeout; the ReverseProxy's failed body
    read reaches upstream's error handler as a timeout: 504 (pkg/router/handlers.go:247-257)."""
    body = b'{"input": "slow"}'
    with _connection(cube) as caller:
        caller.sendall(
            _echo_agent_head(
                cube,
                "POST",
                "echo",
                session,
                "Content-Type: application/json",
                f"Content-Length: {len(body)}",
            )
            + body[:5]
        )
        caller.settimeout(READ_TIMEOUT + 10)
        answer = caller.recv(4096).decode()
    assert answer.startswith("HTTP/1.1 504 ")
    assert answer.endswith('{"error":"sandbox timeout"}')


# Answers every call 101 to another protocol than the WebSocket asked for.
_WRONG_SWITCH = """
import os, socketserver
class Switch(socketserver.StreamRequestHandler):
    def handle(self):
        while self.rfile.readline() not in (b"\\r\\n", b""):
            pass
        self.wfile.write(b"HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: h2c\\r\\n"
                         b"Connection: Upgrade\\r\\n\\r\\n")
address = (os.environ["HOST"], int(os.environ["PORT"]))
socketserver.ThreadingTCPServer(address, Switch).serve_forever()
"""


def test_a_sandbox_that_switches_to_another_protocol_is_answered_503(
    start_localcube, tmp_path
) -> None:
    """Go's ReverseProxy refuses a 101 in another protocol than asked (reverseproxy.go's
    handleUpgradeResponse) through the error handler: upstream's 503 `sandbox unreachable`
    (Upstream: pkg/router/handlers.go:247-257)."""
    cube = start_localcube([agent_running(tmp_path, "wrong-switch", _WRONG_SWITCH)])
    url = f"{cube.url}/v1/namespaces/{NAMESPACE}/agent-runtimes/wrong-switch/invocations/ws"

    async def upgrade() -> tuple[int, str]:
        async with aiohttp.ClientSession() as client:
            try:
                await client.ws_connect(url)
            except aiohttp.WSServerHandshakeError as refusal:
                return refusal.status, refusal.message
        raise AssertionError("the Router switched to a protocol the caller did not ask for")

    status, _ = asyncio.run(upgrade())
    assert status == 503


def test_a_kept_alive_connection_is_closed_after_the_idle_timeout(start_localcube) -> None:
    """The server's IdleTimeout: a kept-alive connection waits that long for its next call
    (Upstream: pkg/router/server.go:197, 90 s), here given 1 s."""
    cube = start_localcube(extra_arguments=["--idle-timeout", "1s"])
    host, port = cube.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as connection:
        connection.sendall(f"GET /health/live HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        connection.settimeout(10)
        assert connection.recv(4096).startswith(b"HTTP/1.1 200 ")
        started = time.monotonic()
        assert connection.recv(4096) == b"", "the idle connection is closed"
        assert time.monotonic() - started >= 0.9, "not before the idle timeout"


def test_a_sandbox_that_dies_in_a_conversation_ends_it_as_going_away(cube) -> None:
    client = Client(cube.url, TOKEN)
    session = client.agent("echo-agent", json={"input": "open"}).headers[SESSION_HEADER]
    pid = client.sandbox_of(session)["pid"]

    async def converse_while_it_dies() -> tuple[aiohttp.WSMsgType, int | None]:
        async with (
            aiohttp.ClientSession() as http,
            http.ws_connect(_url(cube, "/echo/ws"), headers=_headers(session)) as ws,
        ):
            await ws.receive_str()  # the greeting
            os.kill(pid, signal.SIGKILL)
            message = await ws.receive(timeout=10)
            return message.type, ws.close_code

    kind, code = asyncio.run(converse_while_it_dies())
    assert kind is aiohttp.WSMsgType.CLOSE and code == aiohttp.WSCloseCode.GOING_AWAY
    assert client.agent("echo-agent", json={"input": "next"}).status_code == 200


def test_a_caller_that_goes_away_ends_its_conversation_and_frees_its_call(cube, session) -> None:
    client = Client(cube.url, TOKEN)
    with _connection(cube) as caller:
        caller.sendall(
            _echo_agent_head(
                cube,
                "GET",
                "echo/ws",
                session,
                "Connection: Upgrade",
                "Upgrade: websocket",
                "Sec-WebSocket-Version: 13",
                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
            )
        )
        caller.settimeout(10)
        assert caller.recv(4096).startswith(b"HTTP/1.1 101 ")
        assert client.sandbox_of(session)["callsInFlight"] == 1
    wait_until(
        lambda: client.sandbox_of(session)["callsInFlight"] == 0,
        "the conversation of a caller that went away to end",
    )


def _connection(cube: embedded.RunningLocalCube) -> socket.socket:
    host, port = cube.url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)))


def _echo_agent_head(
    cube: embedded.RunningLocalCube, method: str, path: str, session: str, *headers: str
) -> bytes:
    """A request's head to the echo agent in `session`, written by hand: what an HTTP
    client would not send (a body cut short, a caller gone mid-conversation)."""
    lines = [
        f"{method} /v1/namespaces/{NAMESPACE}/agent-runtimes/echo-agent/invocations/{path} "
        "HTTP/1.1",
        f"Host: {cube.url.removeprefix('http://').split(':')[0]}",
        f"Authorization: Bearer {TOKEN}",
        f"{SESSION_HEADER}: {session}",
        *headers,
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()
