"""Fixtures of the adapter tests: a stand-in Kubernetes API (fake_api.py), a kubeconfig that
points at it, a connected Cluster, builders of the objects a cluster would hold, and HTTP
servers standing in for the pods behind the Router's and the WorkloadManager's Services."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable, Iterator
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from acceptance.platforms.kubernetes.cluster import Cluster
from acceptance.platforms.kubernetes.settings import KubernetesSettings
from acceptance.platforms.target import read_settings
from tests.kubernetes.fake_api import STAND_IN_NODE, TOKEN, FakeKubernetes, Recorded

NS = "agentcube"
RUNTIME_API = f"/apis/runtime.agentcube.volcano.sh/v1alpha1/namespaces/{NS}"
AGENT_RUNTIMES = f"{RUNTIME_API}/agentruntimes"
CODE_INTERPRETERS = f"{RUNTIME_API}/codeinterpreters"
SANDBOXES = f"/apis/agents.x-k8s.io/v1alpha1/namespaces/{NS}/sandboxes"
SANDBOX_CLAIMS = f"/apis/extensions.agents.x-k8s.io/v1alpha1/namespaces/{NS}/sandboxclaims"
PODS = f"/api/v1/namespaces/{NS}/pods"
EVENTS = f"/api/v1/namespaces/{NS}/events"
SERVICES = f"/api/v1/namespaces/{NS}/services"
SERVICE_ACCOUNTS = f"/api/v1/namespaces/{NS}/serviceaccounts"
DEPLOYMENTS = f"/apis/apps/v1/namespaces/{NS}/deployments"
SESSION_LABEL = "runtime.agentcube.io/session-id"


@pytest.fixture
def fake() -> Iterator[FakeKubernetes]:
    server = FakeKubernetes()
    server.start()
    yield server
    server.stop()


def write_kubeconfig(path: Path, server: str, token: str = TOKEN) -> Path:
    """A kubeconfig with one context, `fake`, and a decoy current context elsewhere."""
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "decoy",
                "clusters": [
                    {"name": "fake", "cluster": {"server": server}},
                    {"name": "decoy", "cluster": {"server": "http://127.0.0.1:9"}},
                ],
                "users": [{"name": "tester", "user": {"token": token}}],
                "contexts": [
                    {"name": "fake", "context": {"cluster": "fake", "user": "tester"}},
                    {"name": "decoy", "context": {"cluster": "decoy", "user": "tester"}},
                ],
            }
        ),
        encoding="utf-8",
    )
    return path


@pytest.fixture
def kubeconfig(tmp_path: Path, fake: FakeKubernetes) -> Path:
    return write_kubeconfig(tmp_path / "kubeconfig", fake.url)


def read_cluster_settings(
    userdata: dict[str, str], environ: dict[str, str] | None = None
) -> KubernetesSettings:
    """The adapter's settings as a run on a cluster reads them."""
    run = read_settings({"platform": "kubernetes", **userdata}, environ or {})
    settings: KubernetesSettings = run.adapter_settings
    return settings


@pytest.fixture
def settings(kubeconfig: Path) -> KubernetesSettings:
    return KubernetesSettings(kubeconfig=kubeconfig, kube_context="fake", cluster_timeout=3.0)


MakeCluster = Callable[..., Cluster]


@pytest.fixture
def make_cluster(settings: KubernetesSettings, fake: FakeKubernetes) -> Iterator[MakeCluster]:
    """Connect with the test settings, changed as asked; closed at the end of the test."""
    made: list[Cluster] = []

    def make(**changes: Any) -> Cluster:
        connected = Cluster(
            dataclasses.replace(settings, **changes), {}, namespace=NS, poll_interval=0.02
        )
        fake.requests.clear()  # the connection probe is tested on its own
        made.append(connected)
        return connected

    yield make
    for connected in made:
        connected.close()


@pytest.fixture
def cluster(make_cluster: MakeCluster) -> Cluster:
    return make_cluster()


def meta(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "namespace": NS, **extra}


def owner(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1alpha1",
        "kind": kind,
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
    }


def pod(
    name: str,
    *,
    labels: dict[str, str] | None = None,
    owners: list[dict[str, Any]] | None = None,
    ready: bool = True,
    deleting: bool = False,
    container_ports: list[dict[str, Any]] | None = None,
    node: str | None = STAND_IN_NODE,
) -> dict[str, Any]:
    """A pod bound to the stand-in's node unless another node (or None, unscheduled) is
    given."""
    metadata = meta(name, labels=labels or {}, ownerReferences=owners or [])
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "nodeName": node,
            "containers": [{"name": "main", "image": "img", "ports": container_ports}],
        },
        "status": {
            "phase": "Running" if ready else "Pending",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def custom(kind: str, name: str, **metadata: Any) -> dict[str, Any]:
    return {"apiVersion": "v1alpha1", "kind": kind, "metadata": meta(name, **metadata), "spec": {}}


def ready_on_create(fake: FakeKubernetes, request: Recorded) -> None:
    """What the WorkloadManager's controller does: mark a new CodeInterpreter ready and,
    for a warm pool, start its sandboxes and pods."""
    name = request.body["metadata"]["name"]
    interpreter = fake.get(CODE_INTERPRETERS, name)
    assert interpreter is not None
    interpreter["status"] = {"ready": True}
    for index in range(int(interpreter["spec"].get("warmPoolSize") or 0)):
        sandbox = fake.put(
            SANDBOXES,
            custom(
                "Sandbox",
                f"{name}-{index}",
                ownerReferences=[{"kind": "SandboxWarmPool", "name": name, "uid": "pool"}],
            ),
        )
        fake.put(PODS, pod(f"{name}-{index}", owners=[owner("Sandbox", sandbox)]))


# What the Router and the WorkloadManager answer on their health paths.
HEALTH = {"/health/ready": "ready", "/health": "healthy"}


Respond = Callable[[str, str, Message, bytes], tuple[int, dict]]


class JsonServer:
    """A loopback HTTP server that answers with the JSON `respond(method, path, headers,
    body)` gives."""

    def __init__(self, respond: Respond) -> None:
        class Handler(BaseHTTPRequestHandler):
            def answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                status, body = respond(
                    self.command, self.path, self.headers, self.rfile.read(length)
                )
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = answer

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def pod_backend(name: str, *, checks_tokens: bool = True) -> JsonServer:
    """A pod's HTTP server: answers every GET with the pod's name, and on the health paths
    with the status a Router or WorkloadManager gives; with `checks_tokens`, a /v1 call
    without a token is refused, as by a Router that authenticates (the preflight tells it
    from one that ignores tokens)."""

    def respond(method: str, path: str, headers: Message, body: bytes) -> tuple[int, dict]:
        if checks_tokens and path.startswith("/v1/") and not headers.get("Authorization"):
            return 401, {"message": "missing authorization header"}
        return 200, {"pod": name, "path": path, "status": HEALTH.get(path)}

    return JsonServer(respond)


@pytest.fixture
def backends() -> Iterator[dict[str, JsonServer]]:
    started: dict[str, JsonServer] = {}
    yield started
    for backend in started.values():
        backend.close()


def service(name: str, app: str, target: int | str = 8080) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta(name),
        "spec": {"selector": {"app": app}, "ports": [{"port": 8080, "targetPort": target}]},
    }


def add_pod(
    fake: FakeKubernetes,
    backends: dict[str, JsonServer],
    name: str,
    app: str,
    *,
    created: str,
    ready: bool = True,
    checks_tokens: bool = True,
) -> None:
    backends[name] = pod_backend(name, checks_tokens=checks_tokens)
    fake.pod_backends[(NS, name)] = backends[name].port
    obj = pod(
        name,
        labels={"app": app},
        ready=ready,
        container_ports=[{"name": "http", "containerPort": 8080}],
    )
    obj["metadata"]["creationTimestamp"] = created
    fake.put(PODS, obj)


@pytest.fixture
def checks_tokens() -> bool:
    """Whether the services' pods refuse a call without a token (a test parametrizes it)."""
    return True


@pytest.fixture
def services(fake: FakeKubernetes, backends: dict[str, JsonServer], checks_tokens: bool) -> None:
    """The Router's and the WorkloadManager's Services, with a ready pod behind each (and a
    Router pod that is not ready)."""
    fake.put(SERVICES, service("agentcube-router", "agentcube-router"))
    fake.put(SERVICES, service("workloadmanager", "workloadmanager", target="http"))
    auth = {"checks_tokens": checks_tokens}
    add_pod(fake, backends, "router-a", "agentcube-router", created="2026-01-01T00:00:00Z", **auth)
    add_pod(
        fake,
        backends,
        "router-b",
        "agentcube-router",
        created="2026-01-02T00:00:00Z",
        ready=False,
        **auth,
    )
    add_pod(fake, backends, "wm-a", "workloadmanager", created="2026-01-01T00:00:00Z", **auth)
