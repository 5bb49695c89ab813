"""Fixtures of the adapter tests: a stand-in Kubernetes API (fake_api.py), a kubeconfig that
points at it, a connected Cluster, and builders of the objects a cluster would hold."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from acceptance import evidence
from acceptance.kubernetes.cluster import Cluster
from acceptance.kubernetes.settings import KubernetesSettings
from tests.kubernetes.fake_api import TOKEN, FakeKubernetes

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


@pytest.fixture(autouse=True)
def no_registered_secrets(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Secrets are process-wide; each test starts without any."""
    monkeypatch.setattr(evidence, "_secrets", set())
    yield


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


@pytest.fixture
def settings(kubeconfig: Path) -> KubernetesSettings:
    return KubernetesSettings(kubeconfig=kubeconfig, kube_context="fake", cluster_timeout=3.0)


MakeCluster = Callable[..., Cluster]


@pytest.fixture
def make_cluster(settings: KubernetesSettings, fake: FakeKubernetes) -> Iterator[MakeCluster]:
    """Connect with the test settings, changed as asked; closed at the end of the test."""
    made: list[Cluster] = []

    def make(**changes: Any) -> Cluster:
        connected = Cluster.connect(
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
) -> dict[str, Any]:
    metadata = meta(name, labels=labels or {}, ownerReferences=owners or [])
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"containers": [{"name": "main", "image": "img", "ports": container_ports}]},
        "status": {
            "phase": "Running" if ready else "Pending",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def custom(kind: str, name: str, **metadata: Any) -> dict[str, Any]:
    return {"apiVersion": "v1alpha1", "kind": kind, "metadata": meta(name, **metadata), "spec": {}}
