"""The adapter's settings: defaults, sources, validation, cluster defaults, the table rows."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from acceptance.core.evidence import redact
from acceptance.core.settings import ConfigError
from acceptance.platforms.kubernetes import ADAPTER
from acceptance.platforms.kubernetes.settings import (
    CLUSTER_DEFAULTS,
    KUBERNETES_SETTINGS,
    KubernetesSettings,
    ServiceRef,
)
from acceptance.platforms.target import read_settings
from docgen.configuration_table import adapter_settings_rows
from tests.kubernetes.conftest import read_cluster_settings

ROOT = Path(__file__).resolve().parents[2]
SECRET = "client-secret-3c1d"


def test_defaults_fit_upstreams_kind_setup() -> None:
    settings = read_cluster_settings({}, {})
    assert settings == KubernetesSettings()
    assert settings.system_namespace == "agentcube"
    assert settings.router_service == ServiceRef("agentcube-router")
    assert settings.workload_manager_service == ServiceRef("workloadmanager")
    assert settings.token_source == "static"
    assert settings.port_forward is False
    assert settings.cluster_timeout == 300


def test_userdata_wins_over_the_environment() -> None:
    settings = read_cluster_settings(
        {"kube_context": "kind-agentcube-e2e", "port_forward": "true"},
        {
            "AGENTCUBE_KUBE_CONTEXT": "other",
            "AGENTCUBE_KUBECONFIG": "~/configs/kind",
            "AGENTCUBE_ROUTER_SERVICE": "router:8081",
            "AGENTCUBE_INTERPRETER_IMAGE": "registry.example/picod:v1",
        },
    )
    assert settings.kube_context == "kind-agentcube-e2e"
    assert settings.port_forward is True
    assert settings.kubeconfig == Path("~/configs/kind").expanduser()
    assert settings.router_service == ServiceRef("router", 8081)
    assert settings.interpreter_image == "registry.example/picod:v1"


@pytest.mark.parametrize(
    ("userdata", "named"),
    [
        ({"port_forward": "maybe"}, "setting port_forward (-D port_forward): 'maybe' must be"),
        ({"router_service": "router:70000"}, "setting router_service"),
        ({"router_service": "Router"}, "setting router_service"),
        ({"token_source": "kerberos"}, "setting token_source"),
        ({"system_namespace": "Agent_Cube"}, "setting system_namespace"),
        ({"cluster_timeout": "soon"}, "setting cluster_timeout"),
        ({"api_timeout": "0s"}, "setting api_timeout"),
        ({"oidc_token_url": "keycloak:8080"}, "setting oidc_token_url"),
    ],
)
def test_a_bad_value_names_its_setting(userdata: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError, match=r"^" + named.replace("(", r"\(").replace(")", r"\)")):
        read_cluster_settings(userdata, {})


def test_the_client_secret_comes_from_the_environment_only() -> None:
    with pytest.raises(ConfigError, match="AGENTCUBE_OIDC_CLIENT_SECRET only") as raised:
        read_cluster_settings({"oidc_client_secret": SECRET}, {})
    assert SECRET not in str(raised.value)


def test_oidc_names_every_missing_setting() -> None:
    with pytest.raises(ConfigError) as raised:
        read_cluster_settings({"token_source": "oidc", "oidc_client_id": "app"}, {})
    message = str(raised.value)
    assert "oidc_token_url (AGENTCUBE_OIDC_TOKEN_URL)" in message
    assert "oidc_client_secret (AGENTCUBE_OIDC_CLIENT_SECRET)" in message
    assert "oidc_client_id" not in message


def test_the_client_secret_is_never_shown() -> None:
    settings = read_cluster_settings(
        {"token_source": "oidc", "oidc_client_id": "app", "oidc_token_url": "http://kc:8080/t"},
        {"AGENTCUBE_OIDC_CLIENT_SECRET": SECRET},
    )
    assert settings.oidc_client_secret == SECRET
    assert SECRET not in repr(settings)
    assert redact(f"body echoed {SECRET}") == "body echoed <redacted>"


def test_cluster_defaults_apply_only_to_kubernetes_and_only_where_unset() -> None:
    userdata = {"platform": "kubernetes", "ttl_grace": "2m"}
    environ = {"AGENTCUBE_NAMESPACE": "workloads"}
    run = read_settings(userdata, environ)
    assert run.adapter is not None and run.adapter.name == "kubernetes"
    settings = run.suite
    assert settings.namespace == "workloads"
    assert settings.ttl_grace == 120
    assert settings.request_timeout == 130
    assert settings.short_session_timeout == 30
    assert CLUSTER_DEFAULTS["short_session_timeout"][0] == "30s"
    assert read_settings({"platform": "localcube"}, {}).suite.namespace == "default"
    on_cluster = read_settings({}, {"AGENTCUBE_PLATFORM": "kubernetes"})
    assert on_cluster.suite.namespace == "agentcube"
    assert on_cluster.adapter_settings == KubernetesSettings()


def test_rows_cover_every_setting_in_the_readme_columns() -> None:
    rows = adapter_settings_rows(ADAPTER)
    assert len(rows) == len(KUBERNETES_SETTINGS)
    assert all(row.startswith("| ") and row.count(" | ") == 3 for row in rows)
    assert "| — | `AGENTCUBE_OIDC_CLIENT_SECRET` |" in "\n".join(rows)


def test_reading_the_settings_loads_no_kubernetes_client() -> None:
    """A localcube run reads these settings too; it must not pay for the client."""
    code = (
        "import sys, acceptance.platforms.kubernetes.settings; print('kubernetes' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


@pytest.mark.parametrize(("timeout", "expected"), [(2.0, (2.0, 2.0)), (90.0, (5.0, 90.0))])
def test_the_api_timeout_reaches_every_api_call(
    timeout: float, expected: tuple[float, float]
) -> None:
    """Each Kubernetes call is made with the api_timeout setting as its read timeout, and a
    connect timeout of at most 5 s."""
    from kubernetes import client

    from acceptance.platforms.kubernetes.api import KubeApi, Resource

    api = KubeApi(client.Configuration(), timeout=timeout)
    seen: list[object] = []

    def read_pod(*_: object, **kwargs: object) -> None:
        seen.append(kwargs["_request_timeout"])

    api._core.read_namespaced_pod = read_pod  # type: ignore[method-assign]
    try:
        api.get(Resource.POD, "default", "a-pod")
    finally:
        api.close()
    assert seen == [expected]
