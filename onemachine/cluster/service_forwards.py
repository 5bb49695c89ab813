"""`--forward-service NAMESPACE/NAME:PORT`: a host port for a Service of the cluster, where
upstream's e2e runs `kubectl port-forward svc/NAME` (test/e2e/run_e2e.sh:686; the node serves
no port-forward).

The launcher listens on a free 127.0.0.1 port of the host before it enters its namespace, as
for the parts (relay.py), and relays each connection to the Service's ClusterIP and port,
which the node's Service proxy serves. The Service is read when the connection comes, so one
created after the launch (run_e2e.sh applies the MCP Deployment and Service later) works. A
connection to a Service that is not there, or has no such port, is closed at once (the
launcher's log says why). The mapping is written to STATE/service-forwards.json.
"""

from __future__ import annotations

import argparse
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kubernetes import client as kube
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from onemachine.cluster.credentials import write_private
from onemachine.cluster.layout import LOOPBACK

_FORM = re.compile(
    r"^(?P<namespace>[a-z0-9][-a-z0-9]*)/(?P<name>[a-z0-9][-a-z0-9]*):(?P<port>\d+)$"
)
_EXAMPLE = "agentcube/agentcube-code-interpreter-mcp:8000"


@dataclass(frozen=True)
class ServiceForward:
    namespace: str
    name: str
    port: int

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}:{self.port}"


def parse(value: str) -> ServiceForward:
    """An argparse type: NAMESPACE/NAME:PORT, a Service's port (1-65535)."""
    match = _FORM.match(value)
    if match is None or not 0 < int(match["port"]) < 65536:
        raise argparse.ArgumentTypeError(
            f"{value!r}: expected NAMESPACE/NAME:PORT, the Service's name and one of its "
            f"ports (e.g. {_EXAMPLE})"
        )
    return ServiceForward(match["namespace"], match["name"], int(match["port"]))


def resolver(
    connect: Callable[[], kube.ApiClient], forward: ServiceForward
) -> Callable[[], tuple[str, int]]:
    """The relay's target for `forward`: the Service's ClusterIP and port as they are now
    (LookupError saying why not). `connect` makes the API client on first use (the API
    server is not up when the relay starts)."""
    clients: list[kube.CoreV1Api] = []
    lock = threading.Lock()

    def target() -> tuple[str, int]:
        with lock:
            if not clients:
                clients.append(kube.CoreV1Api(connect()))
        try:
            service = clients[0].read_namespaced_service(forward.name, forward.namespace)
        except (ApiException, HTTPError) as error:
            reason = getattr(error, "reason", None) or error
            raise LookupError(f"--forward-service {forward}: the Service: {reason}") from None
        address = service.spec.cluster_ip
        if not address or address == "None":
            raise LookupError(f"--forward-service {forward}: the Service has no ClusterIP")
        if forward.port not in [port.port for port in service.spec.ports or []]:
            raise LookupError(
                f"--forward-service {forward}: the Service has no port {forward.port}"
            )
        return address, forward.port

    return target


def write(path: Path, ports: dict[ServiceForward, int]) -> None:
    """{"NAMESPACE/NAME:PORT": "127.0.0.1:HOSTPORT"}, as the e2e runner reads it."""
    mapping = {str(forward): f"{LOOPBACK}:{port}" for forward, port in ports.items()}
    write_private(path, json.dumps(mapping, indent=2) + "\n")
