"""Connecting: the kubeconfig and context as set, and one clear line for each way it fails."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from acceptance.core.settings import ConfigError
from acceptance.platforms.kubernetes.cluster import Cluster
from acceptance.platforms.kubernetes.connection import ClusterUnreachable
from acceptance.platforms.kubernetes.settings import KubernetesSettings
from tests.kubernetes.conftest import NS, write_kubeconfig
from tests.kubernetes.fake_api import TOKEN, FakeKubernetes


def connect(settings: KubernetesSettings, environ: dict[str, str] | None = None) -> Cluster:
    return Cluster(settings, environ or {}, namespace=NS, poll_interval=0.01)


def test_uses_the_configured_context_and_probes_the_groups_agentcube_needs(
    settings: KubernetesSettings, fake: FakeKubernetes
) -> None:
    """agent-sandbox's groups are asked for v1beta1 first; the stand-in serves v1alpha1, as
    agent-sandbox v0.4.6 does."""
    connect(settings).close()
    assert fake.lines() == [
        "GET /apis/runtime.agentcube.volcano.sh/v1alpha1",
        "GET /apis/agents.x-k8s.io/v1beta1",
        "GET /apis/agents.x-k8s.io/v1alpha1",
        "GET /apis/extensions.agents.x-k8s.io/v1beta1",
        "GET /apis/extensions.agents.x-k8s.io/v1alpha1",
    ]
    assert {r.headers["Authorization"] for r in fake.requests} == {f"Bearer {TOKEN}"}


def test_kubeconfig_from_the_environment_when_the_setting_is_unset(
    kubeconfig: Path, fake: FakeKubernetes
) -> None:
    connect(KubernetesSettings(kube_context="fake"), {"KUBECONFIG": str(kubeconfig)}).close()
    assert len(fake.requests) == 5


def unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_an_unreachable_cluster_is_one_line_naming_the_settings(tmp_path: Path) -> None:
    server = f"http://127.0.0.1:{unused_port()}"
    path = write_kubeconfig(tmp_path / "kubeconfig", server)
    with pytest.raises(ClusterUnreachable) as raised:
        connect(KubernetesSettings(kubeconfig=path, kube_context="fake"))
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"the Kubernetes API at {server} (kubeconfig {path}, context fake)")
    assert "is unreachable" in message
    assert "kubeconfig / AGENTCUBE_KUBECONFIG" in message
    assert "kube_context / AGENTCUBE_KUBE_CONTEXT" in message
    assert TOKEN not in message


def test_rejected_credentials(tmp_path: Path, fake: FakeKubernetes) -> None:
    path = write_kubeconfig(tmp_path / "kubeconfig", fake.url, token="expired-token-77")
    with pytest.raises(ConfigError, match="rejected the credentials \\(401\\)") as raised:
        connect(KubernetesSettings(kubeconfig=path, kube_context="fake"))
    assert "expired-token-77" not in str(raised.value)


def test_a_cluster_without_agent_sandbox_names_the_versions_looked_for(
    settings: KubernetesSettings, fake: FakeKubernetes
) -> None:
    fake.groups.discard("agents.x-k8s.io/v1alpha1")
    with pytest.raises(ConfigError) as raised:
        connect(settings)
    assert str(raised.value) == (
        f"the Kubernetes API at {fake.url} (kubeconfig {settings.kubeconfig}, context fake) "
        "serves none of agents.x-k8s.io/v1beta1, agents.x-k8s.io/v1alpha1, agents.x-k8s.io/v1: "
        "install agent-sandbox (its manifest.yaml)"
    )


def test_a_cluster_without_agentcube_says_what_to_install(
    settings: KubernetesSettings, fake: FakeKubernetes
) -> None:
    fake.groups.discard("runtime.agentcube.volcano.sh/v1alpha1")
    with pytest.raises(
        ConfigError,
        match=r"serves none of runtime\.agentcube\.volcano\.sh/v1alpha1: install AgentCube's",
    ):
        connect(settings)


def test_a_missing_kubeconfig_names_the_setting(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(ConfigError, match=f"cannot use kubeconfig {missing}.*AGENTCUBE_KUBECONFIG"):
        connect(KubernetesSettings(kubeconfig=missing))


def test_an_unknown_context_names_the_setting(kubeconfig: Path) -> None:
    with pytest.raises(ConfigError, match=r"context kind-nope.*kube_context / AGENTCUBE_KUBE"):
        connect(KubernetesSettings(kubeconfig=kubeconfig, kube_context="kind-nope"))


def test_the_cluster_shows_no_credentials(settings: KubernetesSettings) -> None:
    cluster = connect(settings)
    try:
        assert TOKEN not in repr(cluster)
        assert TOKEN not in repr(cluster.settings)
    finally:
        cluster.close()
