"""Readiness probes as the kubelet runs them: httpGet, tcpSocket or exec, first after
initialDelaySeconds, then every periodSeconds, each attempt bounded by timeoutSeconds; the
container turns ready after successThreshold successes in a row and unready after
failureThreshold failures in a row (defaults 0, 10, 1, 1, 3; kubernetes
pkg/apis/core/v1/defaults.go SetDefaults_Probe). httpGet succeeds on a status from 200 to
399 (pkg/probe/http), tcpSocket when the connection opens (pkg/probe/tcp), exec on exit 0.

httpGet and tcpSocket go from the node to the pod's address (or httpGet's host); exec runs
the command inside the pod, through a callable the pod worker gives.
"""

from __future__ import annotations

import http.client
import socket
import ssl
from collections.abc import Callable, Sequence
from typing import Any

Obj = dict[str, Any]
# Runs argv in the container with a timeout: its exit code, or None if it timed out.
ExecRunner = Callable[[Sequence[str], float], int | None]


class ProbeError(ValueError):
    """A probe the node cannot run: no handler it knows, or a port name the container lacks."""


class ReadinessProbe:
    """One container's readiness probe and the readiness it has concluded so far."""

    def __init__(self, spec: Obj, container: Obj, pod_ip: str, run_exec: ExecRunner) -> None:
        self._attempt = _handler(spec, container, pod_ip, run_exec)
        self._delay = float(spec.get("initialDelaySeconds", 0))
        self._period = float(spec.get("periodSeconds", 10))
        self._timeout = float(spec.get("timeoutSeconds", 1))
        self._successes_needed = int(spec.get("successThreshold", 1))
        self._failures_needed = int(spec.get("failureThreshold", 3))
        self._successes = self._failures = 0
        self.ready = False
        self.next_at = 0.0

    def started(self, now: float) -> None:
        """The container (re)started: not ready, first attempt after the initial delay."""
        self.ready = False
        self._successes = self._failures = 0
        self.next_at = now + self._delay

    def run(self, now: float) -> bool:
        """One attempt; returns whether the readiness changed."""
        self.next_at = now + self._period
        if self._attempt(self._timeout):
            self._successes, self._failures = self._successes + 1, 0
            ready = self.ready or self._successes >= self._successes_needed
        else:
            self._successes, self._failures = 0, self._failures + 1
            ready = self.ready and self._failures < self._failures_needed
        changed, self.ready = ready != self.ready, ready
        return changed


def _handler(
    spec: Obj, container: Obj, pod_ip: str, run_exec: ExecRunner
) -> Callable[[float], bool]:
    if "httpGet" in spec:
        action = spec["httpGet"]
        port = _port(action["port"], container)
        return lambda timeout: _http_get(action, action.get("host") or pod_ip, port, timeout)
    if "tcpSocket" in spec:
        action = spec["tcpSocket"]
        port = _port(action["port"], container)
        return lambda timeout: _tcp(action.get("host") or pod_ip, port, timeout)
    if "exec" in spec:
        command = list(spec["exec"].get("command") or [])
        return lambda timeout: run_exec(command, timeout) == 0
    raise ProbeError(f"a probe of {sorted(spec)} is not supported by the onemachine node")


def _port(port: int | str, container: Obj) -> int:
    """A probe's port: a number, or the name of one of the container's ports."""
    if isinstance(port, int) or str(port).isdigit():
        return int(port)
    for declared in container.get("ports") or []:
        if declared.get("name") == port:
            return int(declared["containerPort"])
    raise ProbeError(f"the probe's port {port!r} is no port name of container {container['name']}")


def _http_get(action: Obj, host: str, port: int, timeout: float) -> bool:
    scheme = str(action.get("scheme", "HTTP")).upper()
    connection: http.client.HTTPConnection
    if scheme == "HTTPS":  # the kubelet does not verify a probed certificate
        context = ssl._create_unverified_context()
        connection = http.client.HTTPSConnection(host, port, timeout=timeout, context=context)
    else:
        connection = http.client.HTTPConnection(host, port, timeout=timeout)
    headers = {"User-Agent": "kube-probe/1.36", "Accept": "*/*"}
    headers.update({h["name"]: h["value"] for h in action.get("httpHeaders") or []})
    try:
        connection.request("GET", action.get("path") or "/", headers=headers)
        return 200 <= connection.getresponse().status < 400
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


def _tcp(host: str, port: int, timeout: float) -> bool:
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError:
        return False
    return True
