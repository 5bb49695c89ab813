"""What the node agent's tests share: the stand-in API server and a node agent on the pod
runtime of tests/onemachine/node/conftest.py, both inside the test's private network namespace (the
stand-in listens on that namespace's loopback, as the launcher's API server does), and pods
to run in it."""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config

from onemachine.node.agent import NodeAgent, Timing
from onemachine.node.api import NodeApi
from onemachine.node.images import ImageMap
from onemachine.node.kubelet_server import KubeletServer, KubeletTls
from onemachine.node.pod_network import GATEWAY
from onemachine.node.pod_runtime import PodRuntime
from onemachine.node.pod_worker import Backoff, NodeContext
from plumbing.certificates import CertificateAuthority, write_file
from tests.kubernetes.conftest import write_kubeconfig
from tests.kubernetes.fake_api import FakeKubernetes, KubeletClient
from tests.processes import alive
from tests.waiting import satisfying, wait_until

NODE = "test-node"
NS = "agentcube"
PODS = f"/api/v1/namespaces/{NS}/pods"
PYTHON_IMAGE = "python:3.12-slim"
# The pods' python: the interpreter running the tests, as `--image 'python:*=python3'` maps it.
IMAGES = (f"python:*={sys.executable}",)
FAST = Timing(heartbeat=0.2, resync=30)
FAST_BACKOFF = Backoff(initial=0.2, maximum=0.8)

# A container serving, on $PORT, its environment and hostname as JSON (a plain TCPServer:
# http.server.HTTPServer would look its own name up in DNS, which a pod cannot reach).
ENV_SERVER = """
import http.server, json, os, socket, socketserver
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"env": dict(os.environ), "hostname": socket.gethostname()}).encode()
        self.send_response(200)
        self.end_headers()
        self.wfile.write(body)
socketserver.TCPServer(("", int(os.environ["PORT"])), Handler).serve_forever()
"""


@dataclass(frozen=True)
class KubeletPki:
    """A cluster CA's files for the kubelet API: the node's serving certificate (for
    198.18.0.1), the API server's client certificate, and one of a foreign CA."""

    directory: Path

    def path(self, name: str) -> Path:
        return self.directory / name

    @property
    def tls(self) -> KubeletTls:
        return KubeletTls(self.path("kubelet.crt"), self.path("kubelet.key"), self.path("ca.crt"))

    @property
    def api_server(self) -> KubeletClient:
        return KubeletClient(self.path("client.crt"), self.path("client.key"), self.path("ca.crt"))


def kubelet_pki(directory: Path) -> KubeletPki:
    directory.mkdir(parents=True, exist_ok=True)
    ca, foreign = CertificateAuthority.new("cluster-ca"), CertificateAuthority.new("foreign-ca")
    files = {
        "ca.crt": ca.cert_pem,
        **dict(zip(("kubelet.crt", "kubelet.key"), ca.serving(NODE, [str(GATEWAY)]), strict=True)),
        **dict(zip(("client.crt", "client.key"), ca.client("kube-apiserver"), strict=True)),
        **dict(zip(("foreign.crt", "foreign.key"), foreign.client("kube-apiserver"), strict=True)),
    }
    for name, data in files.items():
        write_file(directory / name, data, 0o600)
    return KubeletPki(directory)


def node_kubeconfig(path: Path, server: str) -> Path:
    """The adapter tests' kubeconfig (tests/kubernetes/conftest.py), its `fake` context made
    the current one: the node, as a kubelet, uses the current context."""
    kubeconfig = yaml.safe_load(write_kubeconfig(path, server).read_text(encoding="utf-8"))
    path.write_text(yaml.safe_dump({**kubeconfig, "current-context": "fake"}), encoding="utf-8")
    return path


@dataclass
class Cluster:
    """The stand-in API server with one node agent, and what the tests ask of them."""

    fake: FakeKubernetes
    agent: NodeAgent
    kubeconfig: Path

    def create(self, name: str, *containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
        """A pod as a client creates one: on no node, for the node to bind."""
        pod = {
            "metadata": {"name": name, "namespace": NS},
            "spec": {"containers": list(containers), **spec},
        }
        return self.fake.put(PODS, pod)

    def pod(self, name: str) -> dict[str, Any] | None:
        with self.fake._lock:
            stored = self.fake.get(PODS, name)
            return json.loads(json.dumps(stored)) if stored is not None else None

    def wait_pod(
        self, name: str, what: str, check: Callable[[dict[str, Any]], bool], timeout: float = 30
    ) -> dict[str, Any]:
        """The pod once `check` holds of it; fails naming `what` and the pod as last seen."""
        return wait_until(
            lambda: self.pod(name),
            f"pod {name} {what}",
            matching=satisfying(lambda pod: pod is not None and check(pod), what),
            timeout=timeout,
            poll=0.05,
        )

    def wait_gone(self, name: str, timeout: float = 30) -> None:
        """Once the pod has left the API; fails after `timeout` seconds."""
        wait_until(lambda: self.pod(name) is None, f"pod {name} gone", timeout=timeout, poll=0.05)

    def running(self, name: str, timeout: float = 30) -> dict[str, Any]:
        return self.wait_pod(name, "Running", lambda p: phase(p) == "Running", timeout)

    def ready(self, name: str, timeout: float = 30) -> dict[str, Any]:
        return self.wait_pod(name, "Ready", lambda p: condition(p, "Ready") == "True", timeout)

    def delete(self, name: str, grace: int | None = None) -> dict[str, Any]:
        """A client's delete (kubectl delete, the controllers'): the pod as answered."""
        api = client.CoreV1Api(config.new_client_from_config(config_file=str(self.kubeconfig)))
        try:
            answer = api.delete_namespaced_pod(
                name, NS, grace_period_seconds=grace, _preload_content=False
            )
            return json.loads(answer.data)
        finally:
            api.api_client.close()


def phase(pod: dict[str, Any]) -> str | None:
    return (pod.get("status") or {}).get("phase")


def container_status(pod: dict[str, Any], index: int = 0) -> dict[str, Any]:
    statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
    return statuses[index] if index < len(statuses) else {}


def condition(pod: dict[str, Any], kind: str) -> str | None:
    for found in (pod.get("status") or {}).get("conditions") or []:
        if found["type"] == kind:
            return found["status"]
    return None


def python(name: str, code: str, **extra: Any) -> dict[str, Any]:
    """A container of the python image running `code`."""
    return {"name": name, "image": PYTHON_IMAGE, "command": ["python3", "-c", code], **extra}


def serving(address: str, port: int) -> bool:
    """Whether something accepts connections at the pod's address and port."""
    try:
        socket.create_connection((address, port), timeout=0.5).close()
    except OSError:
        return False
    return True


def processes_with(marker: str) -> list[int]:
    """The pids of live processes whose environment holds `marker` (a pod's, set in its env)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                if marker.encode() in (proc / "environ").read_bytes() and alive(int(proc.name)):
                    found.append(int(proc.name))
    return found


def get_json(url: str, timeout: float = 2) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        return json.load(answer)


@contextlib.contextmanager
def cluster(
    tmp_path: Path,
    runtime: PodRuntime,
    *,
    images: tuple[str, ...] = IMAGES,
    backoff: Backoff = FAST_BACKOFF,
    timing: Timing = FAST,
    fake: FakeKubernetes | None = None,
    kubelet_api: KubeletTls | None = None,
) -> Iterator[Cluster]:
    """The stand-in started in the calling thread's (the test's private) network namespace,
    and a node agent on `runtime` registered to it, serving the kubelet API on 198.18.0.1
    with `kubelet_api`; all stopped after."""
    fake = fake or FakeKubernetes()
    fake.start()
    kubeconfig = node_kubeconfig(tmp_path / "node.kubeconfig", fake.url)
    api = NodeApi(config.new_client_from_config(config_file=str(kubeconfig)))
    context = NodeContext(api, runtime, ImageMap.parse(images), NODE, str(GATEWAY), backoff)
    agent = NodeAgent(context, timing)
    server = KubeletServer(agent.pod, kubelet_api.context(), str(GATEWAY)) if kubelet_api else None
    try:
        if server is not None:
            server.start()
        agent.start()
        yield Cluster(fake, agent, kubeconfig)
    finally:
        if server is not None:
            server.stop()
        agent.stop()
        api.close()
        fake.stop()
