"""Port forwards through the pods/portforward subresource: the endpoints the suite uses, a
ready pod per connection (so a restart is survived), and clear failures."""

from __future__ import annotations

import re
import socket
import threading
from pathlib import Path

import pytest
import requests
from kubernetes.client.exceptions import ApiException
from websocket import WebSocketBadStatusException, WebSocketConnectionClosedException

from acceptance.core.settings import ConfigError, load_settings
from acceptance.platforms.kubernetes.api import handshake_refusal
from acceptance.platforms.kubernetes.cluster import ClusterTarget
from acceptance.platforms.kubernetes.port_forward import in_cluster_service
from acceptance.platforms.kubernetes.settings import ServiceRef
from acceptance.platforms.target import read_settings
from tests.kubernetes.conftest import (
    NS,
    PODS,
    SERVICE_ACCOUNTS,
    SERVICES,
    JsonServer,
    MakeCluster,
    add_pod,
    meta,
    read_cluster_settings,
    service,
)
from tests.kubernetes.fake_api import FakeKubernetes

ROUTER_PODS = "labelSelector=app=agentcube-router"


def served_by(url: str) -> str:
    response = requests.get(f"{url}/health/ready", timeout=5)
    assert response.status_code == 200
    assert response.json()["path"] == "/health/ready"
    return response.json()["pod"]


@pytest.mark.usefixtures("services")
def test_forwards_to_a_ready_pod_of_each_service(
    make_cluster: MakeCluster, fake: FakeKubernetes
) -> None:
    cluster = make_cluster(port_forward=True)
    router_url, wm_url = cluster.endpoints(None, None)
    assert router_url.startswith("http://127.0.0.1:")
    assert served_by(router_url) == "router-a"
    assert served_by(wm_url) == "wm-a"
    assert fake.lines("GET")[:3] == [
        f"GET {SERVICES}/agentcube-router",
        f"GET {PODS}?{ROUTER_PODS}",
        f"GET {PODS}/router-a/portforward?ports=8080",
    ]
    assert f"GET {PODS}/wm-a/portforward?ports=8080" in fake.lines()  # named targetPort


@pytest.mark.usefixtures("services")
def test_a_restart_of_the_pods_behind_the_service_is_survived(
    make_cluster: MakeCluster, fake: FakeKubernetes, backends: dict[str, JsonServer]
) -> None:
    cluster = make_cluster(port_forward=True)
    router_url, _ = cluster.endpoints(None, None)
    assert served_by(router_url) == "router-a"
    fake.get(PODS, "router-a")["metadata"]["deletionTimestamp"] = "2026-01-03T00:00:00Z"
    add_pod(fake, backends, "router-c", "agentcube-router", created="2026-01-03T00:00:00Z")
    assert served_by(router_url) == "router-c"


@pytest.mark.usefixtures("services")
def test_closing_ends_the_forwards(make_cluster: MakeCluster) -> None:
    cluster = make_cluster(port_forward=True)
    router_url, _ = cluster.endpoints(None, None)
    port = int(router_url.rsplit(":", 1)[1])
    assert cluster.close().problems == []
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port)):
        pass


@pytest.mark.usefixtures("services")
def test_connections_that_find_no_pod_are_reported_at_the_end(
    make_cluster: MakeCluster, fake: FakeKubernetes
) -> None:
    cluster = make_cluster(port_forward=True)
    router_url, _ = cluster.endpoints(None, None)
    fake.remove(PODS, "router-a")
    with pytest.raises(requests.ConnectionError):
        requests.get(router_url, timeout=5)
    assert cluster.close().problems == [
        f"port forward to svc/agentcube-router in {NS}: no ready pod matches app=agentcube-router"
    ]


def test_a_service_without_ready_pods_stops_the_run_at_its_start(
    make_cluster: MakeCluster, fake: FakeKubernetes
) -> None:
    fake.put(SERVICES, service("agentcube-router", "agentcube-router"))
    with pytest.raises(ConfigError, match="no ready pod matches app=agentcube-router"):
        make_cluster(port_forward=True).endpoints(None, None)


def test_a_missing_service_names_the_settings_that_name_it(make_cluster: MakeCluster) -> None:
    with pytest.raises(ConfigError) as raised:
        make_cluster(port_forward=True).endpoints(None, None)
    assert str(raised.value) == (
        f"port forward to svc/agentcube-router in {NS}: there is no Service agentcube-router "
        f"in namespace {NS}: check router_service / AGENTCUBE_ROUTER_SERVICE and "
        'system_namespace / AGENTCUBE_SYSTEM_NAMESPACE (services "agentcube-router" not found)'
    )


@pytest.mark.usefixtures("services")
def test_a_forbidden_port_forward_stops_the_run_at_its_start(
    make_cluster: MakeCluster, fake: FakeKubernetes
) -> None:
    fake.fail("GET", f"{PODS}/router-a/portforward", 403, "pods/portforward is forbidden")
    with pytest.raises(ConfigError) as raised:
        make_cluster(port_forward=True).endpoints(None, None)
    message = str(raised.value)
    assert message.startswith(
        f"port forward to svc/agentcube-router in {NS}: the Kubernetes API answered 403 to "
        f"port-forward to Pod {NS}/router-a port 8080"
    )
    # The API's own error, not the whole handshake, and the way around the suite's forward.
    assert "port 8080: pods/portforward is forbidden. To forward without the suite" in message
    assert "-+-+-" not in message and "Content-Type" not in message
    assert re.search(
        rf"kubectl -n {NS} port-forward svc/agentcube-router (\d+):8080, then run with "
        r"-D port_forward=false -D router_url=http://127.0.0.1:\1 ",
        message,
    ), message


def test_given_urls_are_used_as_they_are(make_cluster: MakeCluster) -> None:
    cluster = make_cluster()
    assert cluster.endpoints("http://router:8081", "http://wm:8080") == (
        "http://router:8081",
        "http://wm:8080",
    )
    with pytest.raises(ConfigError, match="needs router_url and workload_manager_url"):
        cluster.endpoints("http://router:8081", None)
    with pytest.raises(ConfigError, match="leave router_url and workload_manager_url unset"):
        make_cluster(port_forward=True).endpoints("http://router:8081", None)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "http://keycloak.agentcube.svc.cluster.local:8080/realms/agentcube/token",
            (ServiceRef("keycloak", 8080), "agentcube"),
        ),
        ("http://idp.iam.svc/token", (ServiceRef("idp", 80), "iam")),
        ("https://idp.iam.svc/token", None),
        ("http://keycloak.example.com/token", None),
        ("http://127.0.0.1:8082/token", None),
    ],
)
def test_in_cluster_urls(url: str, expected: tuple[ServiceRef, str] | None) -> None:
    assert in_cluster_service(url) == expected


@pytest.mark.usefixtures("services")
def test_the_cluster_target_has_the_forwarded_urls_and_the_minted_token(
    kubeconfig: Path, fake: FakeKubernetes
) -> None:
    fake.put(SERVICE_ACCOUNTS, {"kind": "ServiceAccount", "metadata": meta("e2e-test")})
    userdata = {
        "platform": "kubernetes",
        "kubeconfig": str(kubeconfig),
        "kube_context": "fake",
        "port_forward": "true",
        "token_source": "service-account",
    }
    run = read_settings(userdata, {})
    target = ClusterTarget.open(run.suite, run.adapter_settings, {})
    try:
        assert served_by(target.router_url) == "router-a"
        assert served_by(target.workload_manager_url) == "wm-a"
        assert target.api_token == "minted-token-1"
        assert target.cluster is not None and target.cluster.observer.namespace == NS
    finally:
        assert target.close(keep=False).problems == []


@pytest.mark.usefixtures("services")
def test_a_failed_start_closes_the_forwards_it_opened(
    kubeconfig: Path, fake: FakeKubernetes
) -> None:
    userdata = {
        "kubeconfig": str(kubeconfig),
        "kube_context": "fake",
        "port_forward": "true",
        "token_source": "service-account",
    }
    with pytest.raises(ConfigError, match="api_token is set and token_source=service-account"):
        ClusterTarget.open(
            load_settings({}, {"AGENTCUBE_API_TOKEN": "static-token"}),
            read_cluster_settings(userdata, {}),
            {},
        )
    assert len([line for line in fake.lines() if line.endswith("/portforward?ports=8080")]) == 2
    acceptors = [t for t in threading.enumerate() if t.name.startswith("accept port forward")]
    assert acceptors == []


@pytest.mark.usefixtures("services")
def test_forwards_and_api_calls_run_side_by_side(
    make_cluster: MakeCluster, fake: FakeKubernetes
) -> None:
    """Opening a stream must not divert another thread's API call (the client's stream
    helper swaps its ApiClient's call_api while it connects)."""
    cluster = make_cluster(port_forward=True)
    router_url, _ = cluster.endpoints(None, None)
    failures: list[BaseException] = []

    def call_through_the_forward() -> None:
        try:
            for _ in range(25):
                response = requests.get(router_url, headers={"Connection": "close"}, timeout=5)
                assert response.json()["pod"] == "router-a"
        except BaseException as error:  # reported below
            failures.append(error)

    caller = threading.Thread(target=call_through_the_forward)
    caller.start()
    while caller.is_alive():
        assert cluster.observer.session_objects("s").pod is None
    caller.join()
    assert failures == []


@pytest.mark.parametrize(
    ("refused", "expected"),
    [
        (
            (
                400,
                "Bad Request",
                b'{"kind":"Status","message":"pod router-a does not have a '
                b'host assigned","code":400}',
            ),
            (400, "pod router-a does not have a host assigned"),
        ),
        ((502, "Bad Gateway", b"upstream went away"), (502, "upstream went away")),
        ((403, "Forbidden", None), (403, "Handshake status 403 Forbidden")),
        (None, (0, "Connection to remote host was lost.")),
    ],
    ids=["status", "plain body", "no body", "no handshake"],
)
def test_a_refused_handshake_is_told_by_the_apis_own_words(
    refused: tuple[int, str, bytes | None] | None, expected: tuple[int, str]
) -> None:
    """As the client raises it: status 0, the websocket's exception its context."""
    try:
        try:
            if refused is None:
                raise WebSocketConnectionClosedException("Connection to remote host was lost.")
            status, words, body = refused
            raise WebSocketBadStatusException(f"Handshake status {status}", status, words, {}, body)
        except Exception as error:
            raise ApiException(status=0, reason=str(error)) from error  # as kubernetes.stream
    except ApiException as error:
        assert handshake_refusal(error) == expected
