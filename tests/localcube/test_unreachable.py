"""A sandbox the Router cannot reach: dial first, classify as upstream, wait for the rest."""

from __future__ import annotations

import asyncio
import socket
import time
from contextlib import ExitStack
from pathlib import Path

import pytest
import requests

from localcube.router import _preflight
from tests.localcube.support import SESSION_HEADER, Client, agent_running, stopped
from tests.waiting import wait_until

# Accepts every connection and closes it at once: reachable, but never answers.
HANGS_UP = (
    "import os, socket\n"
    "server = socket.create_server((os.environ['HOST'], int(os.environ['PORT'])))\n"
    "while True:\n"
    "    server.accept()[0].close()\n"
)


def fill_backlog(port: int, stack: ExitStack) -> None:
    """Connect until the listener's accept queue (128 for the echo agent) is full and a dial
    no longer completes."""
    for _ in range(512):
        probe = stack.enter_context(socket.socket())
        probe.settimeout(0.3)
        try:
            probe.connect(("127.0.0.1", port))
        except TimeoutError:
            return
    raise AssertionError(f"the backlog of port {port} never filled")


def sandbox_port(client: Client, session: str) -> int:
    return int(client.sandbox_of(session)["endpoint"].rsplit(":", 1)[1])


def test_a_dial_that_does_not_complete_in_200ms_answers_504(client: Client) -> None:
    """Upstream: pkg/router/handlers.go:204-257"""
    session = client.agent("echo-agent", json={}).headers[SESSION_HEADER]
    sandbox = client.sandbox_of(session)
    with stopped(sandbox["pid"]), ExitStack() as connections:
        fill_backlog(sandbox_port(client, session), connections)
        # the Router's own answer, before the client gives up: its dial timed out
        answer = client.agent("echo-agent", json={}, session=session, timeout=30)
    assert answer.status_code == 504
    assert answer.json() == {"error": "sandbox timeout"}
    # Resumed, the sandbox first drains the connections that filled its queue; until then a
    # dial may still time out, as upstream's would. The session serves again once it has.
    wait_until(
        lambda: client.agent("echo-agent", json={}, session=session).status_code == 200,
        "the resumed sandbox to serve the session again",
        timeout=5,
    )


def test_an_error_after_connecting_answers_503(tmp_path: Path, start_localcube) -> None:
    """Upstream: pkg/router/handlers.go:346-352"""
    client = Client(start_localcube([agent_running(tmp_path, "hangs-up", HANGS_UP)]).url)
    answer = client.agent("hangs-up", json={})
    assert answer.status_code == 503
    assert answer.json() == {"error": "sandbox unreachable"}
    assert answer.headers.get(SESSION_HEADER) is None, "the error is the Router's own"


@pytest.mark.slow
def test_a_silent_sandbox_is_waited_for_until_the_client_gives_up(start_localcube) -> None:
    """Upstream: pkg/router/handlers.go:398-399, pkg/router/server.go:129-150"""
    client = Client(start_localcube(extra_arguments=["--max-concurrent-requests", "2"]).url)
    hung = client.agent("echo-agent", json={}).headers[SESSION_HEADER]
    healthy = client.agent("echo-agent", json={}).headers[SESSION_HEADER]
    with stopped(client.sandbox_of(hung)["pid"]):
        for _ in range(3):  # more calls than slots: each slot is freed when its client leaves
            with pytest.raises(requests.ReadTimeout):
                client.agent("echo-agent", json={}, session=hung, timeout=1.5)
        wait_until(
            lambda: client.sandbox_of(hung)["callsInFlight"] == 0,
            "the slots to be freed",
            timeout=5,
        )
        served = client.agent("echo-agent", json={}, session=healthy, timeout=10)
    assert served.status_code == 200, served.text


def test_a_dial_the_kernel_completed_is_no_timeout_however_late_the_loop_looks() -> None:
    """On a loaded machine localcube's event loop may get round to a completed dial after
    the 200 ms have passed; the socket, not the loop, decides (a false 504 otherwise)."""

    async def dial_while_the_loop_is_blocked(port: int) -> None:
        dialing = asyncio.create_task(_preflight(port))
        await asyncio.sleep(0)  # the dial starts
        time.sleep(0.4)  # the loop is busy past the dial's deadline
        await dialing

    with socket.create_server(("127.0.0.1", 0)) as listener:
        asyncio.run(dial_while_the_loop_is_blocked(listener.getsockname()[1]))
