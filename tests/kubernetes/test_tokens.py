"""Tokens as AgentCube users get them: TokenRequest for a service account, OIDC client
credentials (directly or through a port forward to an in-cluster Keycloak). Never shown."""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from email.message import Message
from pathlib import Path

import pytest

from acceptance.core.evidence import redact
from acceptance.core.settings import ConfigError
from acceptance.platforms.kubernetes.cluster import Cluster
from acceptance.platforms.kubernetes.tokens import TOKEN_LIFETIME_SECONDS
from tests.kubernetes.conftest import (
    NS,
    PODS,
    SERVICE_ACCOUNTS,
    SERVICES,
    JsonServer,
    MakeCluster,
    meta,
    pod,
    read_cluster_settings,
)
from tests.kubernetes.fake_api import FakeKubernetes

SECRET = "app-secret-5b2e"
ACCESS_TOKEN = "eyJhbGciOiJSUzI1NiJ9.access.token-4411"
TOKEN_PATH = "/realms/agentcube/protocol/openid-connect/token"


class TokenEndpoint(JsonServer):
    """An OIDC token endpoint: client credentials for one client, every request recorded."""

    def __init__(self) -> None:
        self.seen: list[tuple[dict[str, str], str]] = []
        super().__init__(self.respond)

    def respond(self, method: str, path: str, headers: Message, body: bytes) -> tuple[int, dict]:
        form = dict(urllib.parse.parse_qsl(body.decode()))
        self.seen.append((form, headers["Host"]))
        if form.get("client_secret") == SECRET and form["client_id"] == "agentcube-app":
            return 200, {"access_token": ACCESS_TOKEN, "token_type": "Bearer"}
        return 401, {
            "error": "unauthorized_client",
            "got": form,
        }  # echoes, as a careless server might


@pytest.fixture
def endpoint() -> Iterator[TokenEndpoint]:
    started = TokenEndpoint()
    yield started
    started.close()


def oidc_cluster(
    kubeconfig: Path, token_url: str, *, secret: str = SECRET, port_forward: bool = False
) -> Cluster:
    settings = read_cluster_settings(
        {
            "kubeconfig": str(kubeconfig),
            "kube_context": "fake",
            "token_source": "oidc",
            "oidc_token_url": token_url,
            "oidc_client_id": "agentcube-app",
            "port_forward": str(port_forward).lower(),
        },
        {"AGENTCUBE_OIDC_CLIENT_SECRET": secret},
    )
    return Cluster(settings, {}, namespace=NS, poll_interval=0.02)


def test_a_static_token_is_used_as_given(make_cluster: MakeCluster, fake: FakeKubernetes) -> None:
    assert make_cluster().token("static-token", timeout=5) == "static-token"
    assert make_cluster().token(None, timeout=5) is None
    assert fake.requests == []


def test_a_service_account_token_from_the_token_request_api(
    make_cluster: MakeCluster, fake: FakeKubernetes
) -> None:
    fake.put(SERVICE_ACCOUNTS, {"kind": "ServiceAccount", "metadata": meta("e2e-test")})
    token = make_cluster(token_source="service-account").token(None, timeout=5)
    assert token == "minted-token-1"
    [request] = fake.requests
    assert request.line == f"POST {SERVICE_ACCOUNTS}/e2e-test/token"
    assert request.body["spec"] == {"audiences": [], "expirationSeconds": TOKEN_LIFETIME_SECONDS}
    assert redact(f"Authorization failed for {token}") == "Authorization failed for <redacted>"


@pytest.mark.parametrize(
    ("status", "hint"),
    [
        (404, "kubectl create serviceaccount e2e-test -n agentcube"),
        (403, "grant the kubeconfig user create on serviceaccounts/token"),
    ],
)
def test_a_refused_token_request_says_what_to_do(
    make_cluster: MakeCluster, fake: FakeKubernetes, status: int, hint: str
) -> None:
    fake.fail("POST", f"{SERVICE_ACCOUNTS}/e2e-test/token", status, "refused")
    with pytest.raises(ConfigError, match="setting token_source=service-account") as raised:
        make_cluster(token_source="service-account").token(None, timeout=5)
    assert hint in str(raised.value)


def test_a_token_source_and_a_static_token_are_exclusive(make_cluster: MakeCluster) -> None:
    with pytest.raises(ConfigError, match="api_token is set and token_source=service-account"):
        make_cluster(token_source="service-account").token("static-token", timeout=5)


def test_oidc_client_credentials(kubeconfig: Path, endpoint: TokenEndpoint) -> None:
    cluster = oidc_cluster(kubeconfig, f"http://127.0.0.1:{endpoint.port}{TOKEN_PATH}")
    try:
        assert cluster.token(None, timeout=5) == ACCESS_TOKEN
    finally:
        cluster.close()
    [(form, host)] = endpoint.seen
    assert form == {
        "grant_type": "client_credentials",
        "client_id": "agentcube-app",
        "client_secret": SECRET,
    }
    assert host == f"127.0.0.1:{endpoint.port}"
    assert redact(f"Bearer-less {ACCESS_TOKEN}") == "Bearer-less <redacted>"


def test_an_in_cluster_token_url_is_reached_through_a_port_forward(
    kubeconfig: Path, endpoint: TokenEndpoint, fake: FakeKubernetes
) -> None:
    fake.put(
        SERVICES,
        {
            "kind": "Service",
            "metadata": meta("keycloak"),
            "spec": {"selector": {"app": "keycloak"}, "ports": [{"port": 8080}]},
        },
    )
    fake.put(PODS, pod("keycloak-0", labels={"app": "keycloak"}))
    fake.pod_backends[(NS, "keycloak-0")] = endpoint.port
    in_cluster = f"http://keycloak.{NS}.svc.cluster.local:8080{TOKEN_PATH}"
    cluster = oidc_cluster(kubeconfig, in_cluster, port_forward=True)
    try:
        assert cluster.token(None, timeout=5) == ACCESS_TOKEN
    finally:
        assert cluster.close().problems == []
    [(_, host)] = endpoint.seen
    assert host == f"keycloak.{NS}.svc.cluster.local:8080"  # Keycloak names the issuer after it
    assert f"GET {PODS}/keycloak-0/portforward?ports=8080" in fake.lines()


def test_a_refused_client_never_shows_its_secret(kubeconfig: Path, endpoint: TokenEndpoint) -> None:
    cluster = oidc_cluster(
        kubeconfig, f"http://127.0.0.1:{endpoint.port}{TOKEN_PATH}", secret="wrong-secret-0a"
    )
    try:
        with pytest.raises(ConfigError) as raised:
            cluster.token(None, timeout=5)
    finally:
        cluster.close()
    message = str(raised.value)
    assert message.startswith(f"setting oidc_token_url: 401 from http://127.0.0.1:{endpoint.port}")
    assert "unauthorized_client" in message
    assert "wrong-secret-0a" not in message


def test_an_unreachable_token_url_names_the_setting(kubeconfig: Path) -> None:
    cluster = oidc_cluster(kubeconfig, f"http://127.0.0.1:9{TOKEN_PATH}")
    try:
        with pytest.raises(ConfigError, match="setting oidc_token_url: no answer from"):
            cluster.token(None, timeout=5)
    finally:
        cluster.close()
