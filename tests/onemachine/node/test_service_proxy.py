"""The node's Service proxy, with real processes and network namespaces: a pod finds a Service
by name in its /etc/hosts and reaches a process endpoint (as the launcher's Router) through the
ClusterIP; a selector Service reaches its ready pod; the launcher's host forward reaches a
Service through it; no ready endpoint, or one off the pod network, resets the connection."""

from __future__ import annotations

import contextlib
import socket
import socketserver
import subprocess
import threading
from collections.abc import Iterator
from ipaddress import IPv4Network
from pathlib import Path

import pytest
from kubernetes import config

from onemachine import netns
from onemachine.cluster import service_forwards
from onemachine.cluster.relay import Relay, listen
from onemachine.node.api import NodeApi
from onemachine.node.pod_network import AddressPool, PodNetwork
from onemachine.node.pod_runtime import PodRuntime
from onemachine.node.service_proxy import ServiceProxy, hosts_lines
from tests.onemachine.node.agent_fixtures import NS, PODS, Cluster, cluster, python
from tests.onemachine.node.pod_support import wait_for_text
from tests.waiting import wait_until

CIDR = IPv4Network("198.19.0.0/24")
SERVICES = f"/api/v1/namespaces/{NS}/services"
SLICES = f"/apis/discovery.k8s.io/v1/namespaces/{NS}/endpointslices"


def service(name: str, address: str, port: int, **spec: object) -> dict:
    ports = [{"name": "http", "port": port, "protocol": "TCP", **spec.pop("port_extra", {})}]  # type: ignore[dict-item]
    return {
        "metadata": {"name": name, "namespace": NS},
        "spec": {"clusterIP": address, "ports": ports, **spec},
    }


def endpoint_slice(service_name: str, address: str, port: int, ready: bool = True) -> dict:
    return {
        "metadata": {
            "name": f"{service_name}-process",
            "namespace": NS,
            "labels": {"kubernetes.io/service-name": service_name},
        },
        "addressType": "IPv4",
        "endpoints": [{"addresses": [address], "conditions": {"ready": ready}}],
        "ports": [{"name": "http", "port": port, "protocol": "TCP"}],
    }


@contextlib.contextmanager
def answering(host: str, port: int, text: bytes) -> Iterator[None]:
    """A process-like endpoint in the node's namespace: answers `text` to each connection."""

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            self.request.sendall(text)

    socketserver.TCPServer.allow_reuse_address = True
    server = socketserver.ThreadingTCPServer((host, port), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()


def answer(address: str, port: int) -> bytes:
    """What a client in the node's namespace (the launcher's) reads from address:port."""
    with socket.create_connection((address, port), timeout=5) as connection:
        return connection.recv(100)


@pytest.fixture
def proxied(tmp_path: Path, node_netns: int, pool: AddressPool) -> Iterator[Cluster]:
    """A node agent whose pod network carries CIDR, and its Service proxy, on the stand-in."""
    network = PodNetwork.open(pool, service_cidr=CIDR)
    proxies: list[ServiceProxy] = []
    runtime = PodRuntime(tmp_path / "node", network, lambda ns: proxies[0].hosts(ns))
    try:
        with cluster(tmp_path, runtime) as running:
            api = NodeApi(config.new_client_from_config(config_file=str(running.kubeconfig)))
            proxies.append(ServiceProxy(api, network, interval=0.05).start())
            try:
                yield running
            finally:
                proxies[0].stop()
                api.close()
    finally:
        runtime.close()


def log_of(tmp_path: Path, running: Cluster, pod: str, container: str) -> Path:
    """The container's first instance's log (PodRuntime.log_directory, container_logs)."""
    uid = running.pod(pod)["metadata"]["uid"]  # type: ignore[index]
    return tmp_path / "node" / "logs" / f"{NS}_{pod}_{uid}" / container / "0.log"


@pytest.mark.slow
def test_a_pod_reaches_a_process_endpoint_by_the_services_name(
    tmp_path: Path, proxied: Cluster
) -> None:
    """As the MCP pod reaches the WorkloadManager: a Service without selector, an
    EndpointSlice at the node's address, the process listening on every interface at the
    Service's own port (which is why the ClusterIPs live in a namespace of their own)."""
    proxied.fake.put(SERVICES, service("workloadmanager", "198.19.0.10", 8080))
    proxied.fake.put(SLICES, endpoint_slice("workloadmanager", "198.18.0.1", 8080))
    code = (
        "import socket, time\n"
        "for name in ('workloadmanager.agentcube.svc.cluster.local', 'workloadmanager'):\n"
        "    address = socket.gethostbyname(name)\n"
        "    with socket.create_connection((name, 8080), timeout=5) as c:\n"
        "        print(name, address, c.recv(100).decode(), flush=True)\n"
        "time.sleep(60)\n"
    )
    with answering("0.0.0.0", 8080, b"the process"):
        proxied.create("client", python("main", code))
        proxied.running("client")
        log = wait_for_text(log_of(tmp_path, proxied, "client", "main"), "workloadmanager 198")
    assert "workloadmanager.agentcube.svc.cluster.local 198.19.0.10 the process" in log
    assert "workloadmanager 198.19.0.10 the process" in log


@pytest.mark.slow
def test_a_selector_service_reaches_its_ready_pod_at_the_named_target_port(
    proxied: Cluster,
) -> None:
    backend = python(
        "server",
        "import socketserver\n"
        "class H(socketserver.BaseRequestHandler):\n"
        "    def handle(self): self.request.sendall(b'the pod')\n"
        "socketserver.TCPServer(('', 8000), H).serve_forever()\n",
        ports=[{"name": "mcp", "containerPort": 8000}],
        readinessProbe={"tcpSocket": {"port": 8000}, "periodSeconds": 1},
    )
    proxied.fake.put(
        PODS,
        {
            "metadata": {"name": "mcp", "namespace": NS, "labels": {"app": "mcp"}},
            "spec": {"containers": [backend]},
        },
    )
    proxied.fake.put(
        SERVICES,
        service(
            "mcp", "198.19.0.20", 80, selector={"app": "mcp"}, port_extra={"targetPort": "mcp"}
        ),
    )
    proxied.ready("mcp")
    assert wait_until(lambda: _answer_or_empty("198.19.0.20", 80), "the pod's answer") == b"the pod"


def _answer_or_empty(address: str, port: int) -> bytes:
    return _or_empty(lambda: answer(address, port))


@pytest.mark.slow
def test_no_ready_endpoint_resets_the_connection_and_a_ready_one_then_answers(
    proxied: Cluster,
) -> None:
    proxied.fake.put(SERVICES, service("router", "198.19.0.11", 8080))
    proxied.fake.put(SLICES, endpoint_slice("router", "198.18.0.1", 8081, ready=False))
    with answering("0.0.0.0", 8081, b"the router"):
        wait_until(lambda: _reset_by("198.19.0.11", 8080), "a reset from the proxy")
        proxied.fake.put(SLICES, endpoint_slice("router", "198.18.0.1", 8081, ready=True))
        assert answer("198.19.0.11", 8080) == b"the router"


@pytest.mark.slow
def test_an_endpoint_off_the_pod_network_is_never_dialled(proxied: Cluster) -> None:
    """The control plane listens on the node's loopback: an EndpointSlice naming 127.0.0.1
    does not lead there."""
    proxied.fake.put(SERVICES, service("sneaky", "198.19.0.12", 8080))
    proxied.fake.put(SLICES, endpoint_slice("sneaky", "127.0.0.1", 8082))
    with answering("127.0.0.1", 8082, b"the control plane"):
        wait_until(lambda: _reset_by("198.19.0.12", 8080), "a reset from the proxy")


def _reset_by(address: str, port: int) -> bool:
    """Whether a connection is accepted, then reset (the proxy's answer without endpoint);
    False while nothing listens (refused: the proxy has not opened the port yet)."""
    try:
        with socket.create_connection((address, port), timeout=5) as connection:
            connection.recv(100)
            return False  # an answer or an orderly close: not the proxy's reset
    except ConnectionResetError:
        return True
    except ConnectionRefusedError:
        return False


def test_hosts_lines_name_each_service_as_the_cluster_dns_would() -> None:
    services = [
        service("workloadmanager", "198.19.0.10", 8080),
        {"metadata": {"name": "mcp", "namespace": "other"}, "spec": {"clusterIP": "198.19.0.20"}},
        {"metadata": {"name": "headless", "namespace": NS}, "spec": {"clusterIP": "None"}},
        {"metadata": {"name": "outside", "namespace": NS}, "spec": {"clusterIP": "10.0.0.1"}},
    ]
    assert hosts_lines(services, NS, CIDR) == (
        "198.19.0.10\tworkloadmanager.agentcube.svc.cluster.local workloadmanager.agentcube.svc"
        " workloadmanager.agentcube workloadmanager\n"
        "198.19.0.20\tmcp.other.svc.cluster.local mcp.other.svc mcp.other\n"
    )


@pytest.mark.slow
def test_a_host_forward_reaches_a_service_created_after_it(
    proxied: Cluster, other_namespace: int
) -> None:
    """`--forward-service`: a listener in another namespace (the host's, in the launcher),
    relayed from the node's namespace to the Service, which is looked up per connection: before
    the Service exists the connection is closed, after it the Service answers."""
    forward = service_forwards.parse("agentcube/mcp:8000")
    with netns.entered(other_namespace):
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        listener = listen()
    port = listener.getsockname()[1]
    target = service_forwards.resolver(
        lambda: config.new_client_from_config(config_file=str(proxied.kubeconfig)), forward
    )
    relay = Relay([(listener, target)]).start()

    def from_the_host() -> bytes:
        with netns.entered(other_namespace):
            connection = socket.create_connection(("127.0.0.1", port), timeout=5)
        with connection:
            return connection.recv(100)

    try:
        with answering("0.0.0.0", 8001, b"the mcp server"):
            assert from_the_host() == b""  # no such Service yet: closed
            proxied.fake.put(SERVICES, service("mcp", "198.19.0.30", 8000))
            proxied.fake.put(SLICES, endpoint_slice("mcp", "198.18.0.1", 8001))
            assert wait_until(lambda: _or_empty(from_the_host), "the forward") == b"the mcp server"
    finally:
        relay.stop()


def _or_empty(call) -> bytes:
    try:
        return call()
    except OSError:
        return b""
