"""The relay: a 127.0.0.1 port on the host carries bytes both ways to a port that exists only
inside the launcher's private namespace. The namespace is entered by a child process, never
by the test's."""

from __future__ import annotations

import gc
import logging
import os
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest

from onemachine.cluster.relay import Relay, listen
from tests.onemachine.cluster.conftest import ROOT, needs_namespaces

CHILD = textwrap.dedent(
    """\
    import socket, sys, threading
    from onemachine.cluster.network import enter_private_network
    from onemachine.netns import interfaces
    from onemachine.cluster.relay import Relay, listen

    inner_port = int(sys.argv[1])
    host_side = listen()
    enter_private_network()
    assert interfaces() == ["lo"]
    server = socket.create_server(("127.0.0.1", inner_port))

    def echo():
        while True:
            connection, _ = server.accept()
            with connection:
                received = b""
                while chunk := connection.recv(65536):
                    received += chunk
                connection.sendall(b"echo:" + received)

    threading.Thread(target=echo, daemon=True).start()
    Relay([(host_side, inner_port)]).start()
    print(host_side.getsockname()[1], flush=True)
    sys.stdin.read()
    """
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def relay() -> Iterator[tuple[subprocess.Popen, int, int]]:
    inner_port = free_port()
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(inner_port)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    host_port = int(child.stdout.readline())
    yield child, host_port, inner_port
    child.stdin.close()
    child.wait(timeout=10)


def exchange(port: int, payload: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(payload)
        connection.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    return answer


@needs_namespaces
def test_bytes_cross_both_ways_into_the_namespace_and_back(relay) -> None:
    _child, host_port, _inner_port = relay
    payload = os.urandom(300_000)
    assert exchange(host_port, payload) == b"echo:" + payload
    assert exchange(host_port, b"again") == b"echo:again"


@needs_namespaces
def test_the_inner_port_exists_only_inside_the_namespace(relay) -> None:
    child, _host_port, inner_port = relay
    assert os.readlink(f"/proc/{child.pid}/ns/net") != os.readlink("/proc/self/ns/net")
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", inner_port), timeout=5)


def test_the_test_process_stays_in_its_namespace() -> None:
    before = os.readlink("/proc/self/ns/net")
    subprocess.run(
        [
            sys.executable,
            "-c",
            "from onemachine.cluster.network import enter_private_network;enter_private_network()",
        ],
        cwd=ROOT,
        check=False,
    )
    assert os.readlink("/proc/self/ns/net") == before


def test_a_stop_closes_the_connections_in_flight_and_leaves_no_task_pending(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Seen on the real stack: "Task was destroyed but it is pending!" for a connection's task.
    In the test's own namespace: the relay carries to whatever 127.0.0.1 port it is given."""
    target = socket.create_server(("127.0.0.1", 0))
    host_side = listen()
    relay = Relay([(host_side, target.getsockname()[1])]).start()
    client = socket.create_connection(host_side.getsockname(), timeout=10)
    held, _ = target.accept()  # the connection is carried through, and held open
    try:
        with caplog.at_level(logging.ERROR, logger="asyncio"):
            relay.stop()
            gc.collect()
        assert client.recv(1) == b"", "the client's connection must be closed by the stop"
        assert not [r.getMessage() for r in caplog.records], "asyncio reported a lost task"
    finally:
        for sock in (client, held, target, host_side):
            sock.close()
