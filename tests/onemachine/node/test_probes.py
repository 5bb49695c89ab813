"""Readiness probes: their thresholds, delays and handlers against local servers, and in
real pods on the stand-in API server, httpGet, tcpSocket and exec flipping the pod's Ready."""

from __future__ import annotations

import http.server
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from onemachine.node.pod_runtime import PodRuntime
from onemachine.node.probes import ProbeError, ReadinessProbe
from tests.onemachine.node.agent_fixtures import cluster, condition, python

CONTAINER = {"name": "c", "ports": [{"name": "http", "containerPort": 8080}]}


class _Answers(http.server.BaseHTTPRequestHandler):
    status = 200
    seen: ClassVar[list[dict[str, str]]] = []

    def do_GET(self) -> None:
        _Answers.seen.append(dict(self.headers))
        self.send_response(_Answers.status)
        self.end_headers()

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def local_server() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Answers.status, _Answers.seen = 200, []
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def http_probe(port: int, **spec: object) -> ReadinessProbe:
    action = {"port": port, "path": "/healthz", "httpHeaders": [{"name": "X-Probe", "value": "1"}]}
    return ReadinessProbe({"httpGet": action, **spec}, CONTAINER, "127.0.0.1", _no_exec)


def _no_exec(argv: object, timeout: float) -> int | None:
    raise AssertionError("no exec probe here")


def test_an_http_probe_is_ready_on_2xx_and_3xx_and_sends_its_headers(local_server: int) -> None:
    probe = http_probe(local_server)
    assert probe.run(0.0) and probe.ready
    assert _Answers.seen[-1]["X-Probe"] == "1"
    assert _Answers.seen[-1]["User-Agent"].startswith("kube-probe/")
    _Answers.status = 302
    assert not probe.run(1.0) and probe.ready


def test_failure_threshold_failures_in_a_row_make_a_container_unready(local_server: int) -> None:
    probe = http_probe(local_server, failureThreshold=2)
    probe.run(0.0)
    _Answers.status = 503
    assert not probe.run(1.0) and probe.ready  # one failure of two
    assert probe.run(2.0) and not probe.ready


def test_success_threshold_successes_in_a_row_make_it_ready(local_server: int) -> None:
    probe = http_probe(local_server, successThreshold=2)
    assert not probe.run(0.0) and not probe.ready
    assert probe.run(1.0) and probe.ready


def test_the_first_attempt_waits_the_initial_delay_then_each_the_period(local_server: int) -> None:
    probe = http_probe(local_server, initialDelaySeconds=5, periodSeconds=2)
    probe.started(100.0)
    assert probe.next_at == 105.0
    probe.run(105.0)
    assert probe.next_at == 107.0


def test_a_tcp_probe_is_ready_when_the_port_accepts() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    probe = ReadinessProbe({"tcpSocket": {"port": port}}, CONTAINER, "127.0.0.1", _no_exec)
    assert not probe.run(0.0)  # bound, not listening: refused
    listener.listen()
    assert probe.run(1.0) and probe.ready
    listener.close()


def test_an_exec_probe_is_ready_on_exit_zero_and_not_on_a_timeout() -> None:
    answers = iter([1, None, 0])
    calls: list[tuple[object, float]] = []

    def run(argv: object, timeout: float) -> int | None:
        calls.append((argv, timeout))
        return next(answers)

    probe = ReadinessProbe(
        {"exec": {"command": ["check"]}, "timeoutSeconds": 3}, CONTAINER, "127.0.0.1", run
    )
    assert not probe.run(0.0)
    assert not probe.run(1.0)
    assert probe.run(2.0) and probe.ready
    assert calls[0] == (["check"], 3.0)


def test_a_probe_names_a_port_the_container_does_not_have() -> None:
    with pytest.raises(ProbeError, match="'metrics' is no port name of container c"):
        ReadinessProbe({"tcpSocket": {"port": "metrics"}}, CONTAINER, "127.0.0.1", _no_exec)


def test_a_probe_of_an_unknown_kind_is_refused() -> None:
    with pytest.raises(ProbeError, match="grpc"):
        ReadinessProbe({"grpc": {"port": 9000}}, CONTAINER, "127.0.0.1", _no_exec)


# In pods: each handler flips the pod's Ready.

FLIPPING_SERVER = """
import http.server, os, socketserver, time
start = time.monotonic()
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if 1.5 <= time.monotonic() - start < 3.5 else 503)
        self.end_headers()
socketserver.TCPServer(("", 8080), Handler).serve_forever()
"""
LATE_LISTENER = """
import socket, time
time.sleep(1)
server = socket.socket()
server.bind(("", 8080))
server.listen()
time.sleep(60)
"""
LATE_FILE = """
import pathlib, time
time.sleep(1)
pathlib.Path("/tmp/ready").touch()
time.sleep(60)
"""
FILE_CHECK = ["python3", "-c", "import os, sys; sys.exit(not os.path.exists('/tmp/ready'))"]


def ready_history(running: Any, name: str, seconds: float) -> list[str]:
    """The pod's Ready condition as it changed over `seconds`."""
    seen: list[str] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pod = running.pod(name)
        state = condition(pod, "Ready") if pod else None
        if state and (not seen or seen[-1] != state):
            seen.append(state)
        time.sleep(0.05)
    return seen


def test_an_http_get_probe_flips_ready_on_and_off(tmp_path: Path, runtime: PodRuntime) -> None:
    probe = {"httpGet": {"port": "http", "path": "/"}, "periodSeconds": 1, "failureThreshold": 1}
    container = python(
        "web",
        FLIPPING_SERVER,
        ports=[{"name": "http", "containerPort": 8080}],
        readinessProbe=probe,
    )
    with cluster(tmp_path, runtime) as running:
        running.create("flipping", container)
        running.running("flipping")
        assert ready_history(running, "flipping", 5.5) == ["False", "True", "False"]


def test_a_tcp_socket_probe_makes_the_pod_ready_once_it_listens(
    tmp_path: Path, runtime: PodRuntime
) -> None:
    probe = {"tcpSocket": {"port": 8080}, "periodSeconds": 1}
    with cluster(tmp_path, runtime) as running:
        running.create("late", python("c", LATE_LISTENER, readinessProbe=probe))
        running.running("late")
        assert condition(running.pod("late"), "Ready") == "False"
        running.ready("late", timeout=5)


def test_an_exec_probe_runs_inside_the_pod(tmp_path: Path, runtime: PodRuntime) -> None:
    probe = {"exec": {"command": FILE_CHECK}, "periodSeconds": 1}
    with cluster(tmp_path, runtime) as running:
        running.create("file", python("c", LATE_FILE, readinessProbe=probe))
        running.running("file")
        assert condition(running.pod("file"), "Ready") == "False"
        running.ready("file", timeout=5)


def test_a_probe_that_cannot_run_keeps_the_pod_unready(tmp_path: Path, runtime: PodRuntime) -> None:
    probe = {"httpGet": {"port": "missing"}, "periodSeconds": 1}
    with cluster(tmp_path, runtime) as running:
        running.create("unprobed", python("c", "import time; time.sleep(60)", readinessProbe=probe))
        pod = running.running("unprobed")
        assert ready_history(running, "unprobed", 1.5) == ["False"]
        assert pod["status"]["containerStatuses"][0]["started"] is True


def test_liveness_and_startup_probes_are_not_run_and_the_log_says_so(
    tmp_path: Path, runtime: PodRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    failing = {"exec": {"command": ["false"]}, "periodSeconds": 1, "failureThreshold": 1}
    container = python("c", "import time; time.sleep(60)", livenessProbe=failing)
    with cluster(tmp_path, runtime) as running:
        running.create("unwatched", container)
        running.ready("unwatched")
        time.sleep(1.5)
        assert running.pod("unwatched")["status"]["containerStatuses"][0]["restartCount"] == 0
    assert "pod agentcube/unwatched: container c: its livenessProbe is not run" in caplog.text
