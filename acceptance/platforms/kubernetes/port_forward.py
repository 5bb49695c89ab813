"""Port forwards through the Kubernetes API (pods/portforward, as kubectl does it): the
client's ``portforward`` streams one connection; what kubectl adds, a local listener, is
here. Each connection goes to a ready pod behind the Service chosen as it arrives: unlike
``kubectl port-forward svc/...``, which binds one pod for good, it survives the rollout
restart of the ``@disruptive`` Router-restart scenario."""

from __future__ import annotations

import contextlib
import re
import select
import socket
import threading
from urllib.parse import urlsplit, urlunsplit

from acceptance.core.settings import ConfigError
from acceptance.platforms.kubernetes.api import JSON, KubeApi, KubeError, Resource
from acceptance.platforms.kubernetes.objects import label_selector, pod_ready
from acceptance.platforms.kubernetes.settings import ServiceRef

BUFFER = 64 * 1024
_IN_CLUSTER_HOST = re.compile(
    r"^(?P<service>[a-z0-9]([-a-z0-9]*[a-z0-9])?)\.(?P<namespace>[a-z0-9]([-a-z0-9]*[a-z0-9])?)"
    r"\.svc(\.cluster\.local)?$"
)


class ServiceForward:
    """A port on 127.0.0.1 (``url``) forwarding to a Service's pods; `named_by`: the settings
    that name the Service."""

    def __init__(self, api: KubeApi, namespace: str, service: ServiceRef, *, named_by: str) -> None:
        self._api = api
        self._namespace = namespace
        self._service = service
        try:
            spec = api.service(namespace, service.name)["spec"]
        except KubeError as error:
            if error.status != 404:
                raise
            raise ConfigError(
                f"{self}: there is no Service {service.name} in namespace {namespace}: check "
                f"{named_by} ({error.detail})"
            ) from None
        if not spec.get("selector"):
            raise ConfigError(f"{self}: the Service has no selector, so no pod to forward to")
        self._selector = label_selector(spec["selector"])
        port = _service_port(spec, service)
        self._target = port.get("targetPort") or port["port"]
        self.problems: list[str] = []
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        self._listener = socket.create_server(("127.0.0.1", 0))
        local_port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{local_port}"
        # The same forward, from kubectl, for a person once this one is closed.
        self.kubectl = (
            f"kubectl -n {namespace} port-forward svc/{service.name} {local_port}:{port['port']}"
        )
        self._acceptor = threading.Thread(target=self._accept, name=f"accept {self}", daemon=True)
        self._acceptor.start()

    def __str__(self) -> str:
        return f"port forward to {self._service} in {self._namespace}"

    def check(self, setting: str) -> None:
        """Open and close one stream now, so that a Service without a ready pod or a
        forbidden port-forward stops the run at its start, not in its first scenario;
        `setting` names the URL setting a person would give instead."""
        pod, port = self._pick_pod()
        try:
            self._api.open_port_forward(self._namespace, pod, port).close()
        except KubeError as error:  # the API's error, and how to forward without the suite
            raise ConfigError(
                f"{self}: {error}. To forward without the suite: {self.kubectl}, then run "
                f"with -D port_forward=false -D {setting}={self.url} (docs/kubernetes.md)"
            ) from None

    def close(self) -> None:
        _shut(self._listener)  # shutdown wakes the acceptor; close alone would not
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            _shut(connection)
        self._acceptor.join(timeout=5)

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:  # the listener was closed
                return
            with self._lock:
                self._connections.add(connection)
            threading.Thread(
                target=self._serve, args=(connection,), name=f"{self} connection", daemon=True
            ).start()

    def _serve(self, connection: socket.socket) -> None:
        try:
            pod, port = self._pick_pod()
            stream = self._api.open_port_forward(self._namespace, pod, port)
            try:
                _pump(connection, stream.socket(port))
            finally:
                stream.close()
        except (KubeError, ConfigError) as error:  # the client sees the connection close
            self.problems.append(str(error))
        finally:
            _shut(connection)
            with self._lock:
                self._connections.discard(connection)

    def _pick_pod(self) -> tuple[str, int]:
        pods = self._api.objects(Resource.POD, self._namespace, self._selector)
        ready = [pod for pod in pods if pod_ready(pod)]
        if not ready:
            raise ConfigError(f"{self}: no ready pod matches {self._selector}")
        newest = max(ready, key=lambda pod: str(pod["metadata"].get("creationTimestamp") or ""))
        return newest["metadata"]["name"], _container_port(newest, self._target)


def in_cluster_service(url: str) -> tuple[ServiceRef, str] | None:
    """The Service and namespace of an in-cluster URL http://NAME.NS.svc[.cluster.local]:PORT,
    or None for any other (an https one would fail TLS verification through 127.0.0.1)."""
    parts = urlsplit(url)
    match = _IN_CLUSTER_HOST.match(parts.hostname or "")
    if match is None or parts.scheme != "http":
        return None
    return ServiceRef(match["service"], parts.port or 80), match["namespace"]


def local_url(url: str, forward: ServiceForward) -> str:
    parts = urlsplit(url)
    return urlunsplit((*urlsplit(forward.url)[:2], parts.path, parts.query, parts.fragment))


def _service_port(spec: JSON, service: ServiceRef) -> JSON:
    """The Service's port entry to forward to: the one given as NAME:PORT, else the first."""
    ports = spec.get("ports") or []
    chosen: JSON | None = next((p for p in ports if service.port in (None, p.get("port"))), None)
    if chosen is None:
        raise ConfigError(f"svc/{service.name} has no port {service.port or ''}".rstrip())
    return chosen


def _container_port(pod: JSON, target: int | str) -> int:
    """A named target port is looked up in the pod."""
    if isinstance(target, int) or str(target).isdigit():
        return int(target)
    for container in pod["spec"]["containers"]:
        for port in container.get("ports") or ():
            if port.get("name") == target:
                return int(port["containerPort"])
    raise ConfigError(f"pod {pod['metadata']['name']} has no container port named {target}")


def _pump(local: socket.socket, remote: socket.socket) -> None:
    while True:
        try:
            readable, _, _ = select.select([local, remote], [], [])
            for source in readable:
                data = source.recv(BUFFER)
                if not data:
                    return
                (remote if source is local else local).sendall(data)
        except (OSError, ValueError):  # a side was shut or closed under us
            return


def _shut(connection: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already shut by the peer
        connection.shutdown(socket.SHUT_RDWR)
    connection.close()
