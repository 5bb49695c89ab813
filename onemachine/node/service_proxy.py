"""The node's Service proxy (kube-proxy's job, in user space) and the Service names in its
pods' /etc/hosts (the cluster DNS's job).

Every TCP port of every Service whose ClusterIP lies in the node's service CIDR gets a
listener at ClusterIP:port, in the proxy's own network namespace on the pod bridge
(`PodNetwork.attach_services`). Each connection accepted there is joined to one ready
endpoint, chosen when the connection comes:

- a Service with a selector: its namespace's pods that match it and are Ready, at their
  podIP and the targetPort (a number, or a container port's name), which is what the
  EndpointSlice controller puts in that Service's slices; read from the pods, so that it
  holds without that controller (the node's tests have none);
- a Service without a selector: the addresses of its EndpointSlices (label
  kubernetes.io/service-name) whose endpoints are not marked not ready, at the slice's port
  of the Service port's name: how Kubernetes models a backend outside the cluster (the
  launcher's Router and WorkloadManager, processes at the node's address).

Only endpoints in the pod network (198.18.0.0/16, the node's address included) are dialled:
the proxy never connects to the node's loopback, where the control plane listens. With no
endpoint the connection is reset at once (kube-proxy rejects it before it is accepted; here
the client sees its connection reset instead of refused). The listeners follow the Services
by a list every `SYNC_INTERVAL`: a new Service answers within that time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import socket
import struct
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network, ip_address

from urllib3.exceptions import HTTPError

from onemachine import netns
from onemachine.node.api import ApiError, NodeApi, Obj
from onemachine.node.pod_network import POD_NETWORK, PodNetwork
from onemachine.splice import join

_LOG = logging.getLogger("onemachine.node.services")
SYNC_INTERVAL = 0.5
CLUSTER_DOMAIN = "cluster.local"  # the kubelet's default --cluster-domain


@dataclass(frozen=True)
class ServicePort:
    """One TCP port of one Service, as the proxy serves it."""

    namespace: str
    name: str
    port_name: str
    target: int | str  # the targetPort: a number or a container port's name
    selector: tuple[tuple[str, str], ...]  # empty: the Service has none


def service_ports(services: Iterable[Obj], cidr: IPv4Network) -> dict[tuple[str, int], ServicePort]:
    """(ClusterIP, port) of every TCP port of every Service with a ClusterIP in `cidr`."""
    found: dict[tuple[str, int], ServicePort] = {}
    for service in services:
        address = _cluster_ip(service, cidr)
        if address is None:
            continue
        metadata, spec = service["metadata"], service["spec"]
        selector = tuple(sorted((spec.get("selector") or {}).items()))
        for port in spec.get("ports") or []:
            if port.get("protocol", "TCP") == "TCP":
                found[(address, port["port"])] = ServicePort(
                    metadata["namespace"],
                    metadata["name"],
                    port.get("name") or "",
                    port.get("targetPort", port["port"]),
                    selector,
                )
    return found


def hosts_lines(services: Iterable[Obj], namespace: str, cidr: IPv4Network) -> str:
    """/etc/hosts lines for a pod of `namespace`: each Service's ClusterIP with the names the
    cluster DNS would answer for it (NAME.NS.svc.cluster.local, NAME.NS.svc, NAME.NS through
    the pod's search path, and NAME in the pod's own namespace)."""
    lines = []
    for service in services:
        address = _cluster_ip(service, cidr)
        if address is not None:
            name, its = service["metadata"]["name"], service["metadata"]["namespace"]
            names = [f"{name}.{its}.svc.{CLUSTER_DOMAIN}", f"{name}.{its}.svc", f"{name}.{its}"]
            if its == namespace:
                names.append(name)
            lines.append(f"{address}\t{' '.join(names)}\n")
    return "".join(lines)


def _cluster_ip(service: Obj, cidr: IPv4Network) -> str | None:
    address = (service.get("spec") or {}).get("clusterIP")
    try:
        return address if isinstance(address, str) and ip_address(address) in cidr else None
    except ValueError:  # "None" (headless)
        return None


def ready_endpoints(api: NodeApi, port: ServicePort) -> list[tuple[str, int]]:
    """The addresses a connection to `port` may go to now (see the module's docstring)."""
    if port.selector:
        selector = ",".join(f"{key}={value}" for key, value in port.selector)
        found = [
            (pod["status"]["podIP"], number)
            for pod in api.list_namespaced_pods(port.namespace, selector)
            if _ready(pod) and (number := _target_port(pod, port.target)) is not None
        ]
    else:
        found = [
            (address, number)
            for piece in api.list_endpoint_slices(port.namespace, port.name)
            if piece.get("addressType") == "IPv4"
            and (number := _slice_port(piece, port.port_name)) is not None
            for endpoint in piece.get("endpoints") or []
            if (endpoint.get("conditions") or {}).get("ready") is not False
            for address in endpoint.get("addresses") or []
        ]
    return [(address, number) for address, number in found if _in_pod_network(address)]


def _ready(pod: Obj) -> bool:
    status = pod.get("status") or {}
    conditions = status.get("conditions") or []
    return (
        not pod["metadata"].get("deletionTimestamp")
        and bool(status.get("podIP"))
        and any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
    )


def _target_port(pod: Obj, target: int | str) -> int | None:
    if isinstance(target, int) or target.isdigit():
        return int(target)
    for container in pod["spec"].get("containers") or []:
        for declared in container.get("ports") or []:
            if declared.get("name") == target:
                return declared["containerPort"]
    return None


def _slice_port(piece: Obj, name: str) -> int | None:
    for port in piece.get("ports") or []:
        if (port.get("name") or "") == name and port.get("protocol", "TCP") == "TCP":
            return port.get("port")
    return None


def _in_pod_network(address: str) -> bool:
    try:
        return IPv4Address(address) in POD_NETWORK
    except ValueError:
        return False


class ServiceProxy:
    """The listeners and their connections, on one thread with one event loop; `hosts()`
    for the pods' /etc/hosts."""

    def __init__(self, api: NodeApi, network: PodNetwork, interval: float = SYNC_INTERVAL) -> None:
        if network.service_cidr is None:
            raise ValueError("a Service proxy needs a pod network with a service CIDR")
        self._api = api
        self._network = network
        self._cidr = network.service_cidr
        self._interval = interval
        self._namespace: int | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="service-proxy", daemon=True)
        self._servers: dict[tuple[str, int], tuple[asyncio.Server | _Opening, ServicePort]] = {}
        self._connections: set[asyncio.Task[None]] = (
            set()
        )  # held, or a pending task may be collected

    def start(self) -> ServiceProxy:
        """Its namespace made and attached to the bridge, then its thread started."""
        self._namespace = netns.new_network_namespace()
        try:
            self._network.attach_services(self._namespace)
        except BaseException:
            os.close(self._namespace)
            raise
        self._thread.start()
        return self

    def stop(self) -> None:
        """Every listener and connection closed; its namespace goes with its last socket."""
        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self._close(), self._loop)
            self._thread.join(timeout=5)
        if self._namespace is not None:
            os.close(self._namespace)
            self._namespace = None

    def hosts(self, namespace: str) -> str:
        """The Service lines of a new pod's /etc/hosts: the Services that exist now."""
        try:
            return hosts_lines(self._api.list_services(), namespace, self._cidr)
        except (ApiError, HTTPError, OSError) as error:
            _LOG.warning("no Service names for a pod of %s: %s", namespace, error)
            return ""

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._syncing = self._loop.create_task(self._sync_forever())
        try:
            self._loop.run_forever()
        finally:
            self._loop.close()

    async def _close(self) -> None:
        self._syncing.cancel()
        for server, _ in self._servers.values():
            server.close()
        for task in self._connections:
            task.cancel()
        await asyncio.gather(self._syncing, *self._connections, return_exceptions=True)
        self._loop.stop()

    async def _sync_forever(self) -> None:
        while True:
            try:
                self._sync(
                    service_ports(await asyncio.to_thread(self._api.list_services), self._cidr)
                )
            except (ApiError, HTTPError, OSError) as error:
                _LOG.warning("Services not listed: %s", error)
            await asyncio.sleep(self._interval)

    def _sync(self, wanted: dict[tuple[str, int], ServicePort]) -> None:
        for key in [key for key in self._servers if key not in wanted]:
            self._servers.pop(key)[0].close()
            _LOG.info("service %s:%d closed", *key)
        for key, port in wanted.items():
            if key in self._servers:
                self._servers[key] = (self._servers[key][0], port)
            else:
                self._loop.create_task(self._open(key, port))
                self._servers[key] = (_Opening(), port)

    async def _open(self, key: tuple[str, int], port: ServicePort) -> None:
        try:
            with netns.entered(self._namespace):  # type: ignore[arg-type]
                listener = socket.create_server(key, backlog=128)  # no await in here
        except OSError as error:
            _LOG.warning("service %s/%s at %s:%d: %s", port.namespace, port.name, *key, error)
            self._servers.pop(key, None)
            return
        server = await asyncio.start_server(lambda r, w: self._carry(key, r, w), sock=listener)
        if key in self._servers:
            self._servers[key] = (server, self._servers[key][1])
            _LOG.info("service %s/%s at %s:%d", port.namespace, port.name, *key)
        else:  # its Service went meanwhile
            server.close()

    async def _carry(
        self, key: tuple[str, int], reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        self._connections.add(task)  # type: ignore[arg-type]
        port = self._servers[key][1]
        try:
            try:
                choices = await asyncio.to_thread(ready_endpoints, self._api, port)
            except (ApiError, HTTPError, OSError) as error:
                _LOG.warning(
                    "service %s/%s: endpoints not read: %s", port.namespace, port.name, error
                )
                choices = []
            if not choices:
                _LOG.info(
                    "service %s/%s port %d: no ready endpoint", port.namespace, port.name, key[1]
                )
                _reset(writer)
                return
            host, number = random.choice(choices)
            try:
                inner = await asyncio.open_connection(host, number)
            except OSError as error:
                _LOG.info(
                    "service %s/%s: endpoint %s:%d: %s",
                    port.namespace,
                    port.name,
                    host,
                    number,
                    error,
                )
                _reset(writer)
                return
            await join((reader, writer), inner)
        except asyncio.CancelledError:
            pass  # the proxy's stop
        finally:
            writer.close()
            self._connections.discard(task)


class _Opening:
    """The place of a listener being opened."""

    def close(self) -> None:
        pass


def _reset(writer: asyncio.StreamWriter) -> None:
    """The connection ended with a reset (SO_LINGER 0), not an orderly close."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()
