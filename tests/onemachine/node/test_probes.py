"""Readiness probes: their thresholds, delays and handlers against local servers, and in
real pods on the stand-in API server, httpGet, tcpSocket and exec flipping the pod's Ready."""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hamcrest import equal_to

from onemachine.node.pod_runtime import PodRuntime
from onemachine.node.probes import ProbeError, ReadinessProbe
from tests.onemachine.node.agent_fixtures import cluster, condition, python
from tests.waiting import holds_for, wait_until

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


# In pods: each handler flips the pod's Ready. What a container's probe sees changes when the
# test says so, not after a time: each connection to the container's control port moves it
# to its next step, so the pod's Ready follows the test's steps, whatever the machine's load.
CONTROL_PORT = 9090
STEPS = f"""
import socket
control = socket.socket()
control.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
control.bind(("", {CONTROL_PORT}))
control.listen()
def next_step():
    control.accept()[0].close()
"""
FLIPPING_SERVER = (
    STEPS
    + """
import http.server, socketserver, threading, time
answer = [503]
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(answer[0])
        self.end_headers()
server = socketserver.TCPServer(("", 8080), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
next_step()
answer[0] = 200
next_step()
answer[0] = 503
time.sleep(60)
"""
)
LATE_LISTENER = (
    STEPS
    + """
import time
next_step()
server = socket.socket()
server.bind(("", 8080))
server.listen()
time.sleep(60)
"""
)
LATE_FILE = (
    STEPS
    + """
import pathlib, time
next_step()
pathlib.Path("/tmp/ready").touch()
time.sleep(60)
"""
)
FILE_CHECK = ["python3", "-c", "import os, sys; sys.exit(not os.path.exists('/tmp/ready'))"]


def next_step(pod: dict[str, Any]) -> None:
    """Move the pod's container to its next step (once its control port listens)."""
    address = pod["status"]["podIP"]
    wait_until(
        lambda: socket.create_connection((address, CONTROL_PORT), timeout=5).close() or True,
        f"the container's control port {address}:{CONTROL_PORT}",
        ignoring=(OSError,),
    )


def wait_ready(running: Any, name: str, state: str) -> None:
    running.wait_pod(name, f"Ready {state}", lambda pod: condition(pod, "Ready") == state)


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
        pod = running.running("flipping")
        assert condition(running.pod("flipping"), "Ready") == "False"  # answering 503
        next_step(pod)  # 200 from now on
        wait_ready(running, "flipping", "True")
        next_step(pod)  # 503 again
        wait_ready(running, "flipping", "False")


def test_a_tcp_socket_probe_makes_the_pod_ready_once_it_listens(
    tmp_path: Path, runtime: PodRuntime
) -> None:
    probe = {"tcpSocket": {"port": 8080}, "periodSeconds": 1}
    with cluster(tmp_path, runtime) as running:
        running.create("late", python("c", LATE_LISTENER, readinessProbe=probe))
        pod = running.running("late")
        assert condition(running.pod("late"), "Ready") == "False"
        next_step(pod)  # listens from now on
        running.ready("late")


def test_an_exec_probe_runs_inside_the_pod(tmp_path: Path, runtime: PodRuntime) -> None:
    probe = {"exec": {"command": FILE_CHECK}, "periodSeconds": 1}
    with cluster(tmp_path, runtime) as running:
        running.create("file", python("c", LATE_FILE, readinessProbe=probe))
        pod = running.running("file")
        assert condition(running.pod("file"), "Ready") == "False"
        next_step(pod)  # the file is there from now on
        running.ready("file")


def test_a_probe_that_cannot_run_keeps_the_pod_unready(tmp_path: Path, runtime: PodRuntime) -> None:
    probe = {"httpGet": {"port": "missing"}, "periodSeconds": 1}
    with cluster(tmp_path, runtime) as running:
        running.create("unprobed", python("c", "import time; time.sleep(60)", readinessProbe=probe))
        pod = running.running("unprobed")
        holds_for(
            lambda: condition(running.pod("unprobed"), "Ready"),
            equal_to("False"),
            "the pod stays unready",
            seconds=1.5,
        )
        assert pod["status"]["containerStatuses"][0]["started"] is True


def test_liveness_and_startup_probes_are_not_run_and_the_log_says_so(
    tmp_path: Path, runtime: PodRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    failing = {"exec": {"command": ["false"]}, "periodSeconds": 1, "failureThreshold": 1}
    container = python("c", "import time; time.sleep(60)", livenessProbe=failing)
    with cluster(tmp_path, runtime) as running:
        running.create("unwatched", container)
        running.ready("unwatched")
        holds_for(  # a liveness probe run would fail at once, and restart the container
            lambda: running.pod("unwatched")["status"]["containerStatuses"][0]["restartCount"],
            equal_to(0),
            "the container is not restarted",
            seconds=1.5,
        )
    assert "pod agentcube/unwatched: container c: its livenessProbe is not run" in caplog.text
