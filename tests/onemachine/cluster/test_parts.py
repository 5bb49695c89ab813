"""Each part's command line and environment, built without any binary, against the flags
upstream's programs read (cited in onemachine/cluster/parts.py)."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from dataclasses import replace
from pathlib import Path

import jwt
import pytest
import requests

from acceptance.core.forgeries import published_public_key_pem
from onemachine.cluster import parts
from onemachine.cluster.binaries import BINARIES
from onemachine.cluster.layout import StateDir
from onemachine.cluster.pki import Pki
from tests.oidc_issuer.realm_clients import write_clients_file

BIN = Path("/opt/bin")
STATE = StateDir(Path("/state"))
CLUSTER = parts.Cluster(
    binaries={**{b.name: BIN / b.name for b in BINARIES}, "redis-server": Path("/usr/bin/redis")},
    state=STATE,
    pki=Pki(STATE.pki),
    images=("python:3.12*=/usr/bin/python3.12",),
)
ALL = (
    parts.etcd,
    parts.api_server,
    parts.controller_manager,
    parts.redis,
    parts.agent_sandbox,
    parts.workload_manager,
    parts.oidc_issuer,
    parts.router,
    parts.node,
)


def flags(part: parts.Part) -> dict[str, str]:
    return dict(
        a.removeprefix("--").split("=", 1) for a in part.argv if a.startswith("--") and "=" in a
    )


def test_etcd_listens_on_loopback_only_and_keeps_its_data_in_the_state_dir() -> None:
    given = flags(parts.etcd(CLUSTER))
    assert given["listen-client-urls"] == "http://127.0.0.1:2379"
    assert given["listen-peer-urls"] == "http://127.0.0.1:2380"
    assert given["data-dir"] == "/state/etcd"
    assert str(parts.etcd(CLUSTER).ready) == "GET http://127.0.0.1:2379/health answering 200"


def test_the_api_server_uses_static_tokens_rbac_and_the_service_account_keys() -> None:
    part = parts.api_server(CLUSTER)
    assert part.argv[0] == "/opt/bin/kube-apiserver"
    given = flags(part)
    assert given["etcd-servers"] == "http://127.0.0.1:2379"
    assert given["bind-address"] == "127.0.0.1"
    assert given["secure-port"] == "6443"
    assert given["token-auth-file"] == "/state/pki/tokens.csv"
    assert given["authorization-mode"] == "RBAC"
    assert given["client-ca-file"] == "/state/pki/ca.crt"
    assert given["tls-cert-file"] == "/state/pki/apiserver.crt"
    assert given["service-account-issuer"] == "https://kubernetes.default.svc"
    assert given["service-account-key-file"] == "/state/pki/service-account.pub"
    assert given["service-account-signing-key-file"] == "/state/pki/service-account.key"
    assert given["service-cluster-ip-range"].startswith("198.19.")
    assert given["kubelet-preferred-address-types"] == "InternalIP"
    assert given["kubelet-client-certificate"] == "/state/pki/apiserver-kubelet-client.crt"
    assert given["kubelet-client-key"] == "/state/pki/apiserver-kubelet-client.key"
    assert given["kubelet-certificate-authority"] == "/state/pki/ca.crt"
    assert str(part.ready) == "GET https://127.0.0.1:6443/readyz answering 200"


def test_the_controller_manager_runs_without_node_lifecycle_and_ipam_and_signs_tokens() -> None:
    given = flags(parts.controller_manager(CLUSTER))
    assert given["controllers"] == "*,-nodelifecycle,-nodeipam"
    assert given["use-service-account-credentials"] == "true"
    assert given["service-account-private-key-file"] == "/state/pki/service-account.key"
    assert given["root-ca-file"] == "/state/pki/ca.crt"
    assert given["kubeconfig"] == "/state/kubeconfigs/kube-controller-manager.yaml"
    assert given["bind-address"] == "127.0.0.1"


def test_redis_has_no_persistence_and_listens_on_loopback() -> None:
    part = parts.redis(CLUSTER)
    assert part.argv[:5] == ("/usr/bin/redis", "--bind", "127.0.0.1", "--port", "6379")
    assert str(part.ready) == "PING to 127.0.0.1:6379 answered PONG"


def test_agent_sandbox_runs_its_extensions_without_election_as_the_admin() -> None:
    part = parts.agent_sandbox(CLUSTER)
    assert part.argv[1:] == (
        "--extensions",
        "--leader-elect=false",
        "--metrics-bind-address=0",
        "--health-probe-bind-address=127.0.0.1:8081",
    )
    assert part.env == {"KUBECONFIG": "/state/kubeconfigs/admin.yaml"}


def test_the_workload_manager_runs_as_the_chart_runs_it_with_its_service_account() -> None:
    part = parts.workload_manager(CLUSTER)
    assert part.argv == ("/opt/bin/workloadmanager", "--port=8090", "--runtime-class-name=")
    assert part.env == {
        "AGENTCUBE_NAMESPACE": "agentcube",
        "REDIS_ADDR": "127.0.0.1:6379",
        "REDIS_PASSWORD_REQUIRED": "false",
        "JWT_KEY_SECRET_NAMESPACE": "agentcube",
        "KUBECONFIG": "/state/kubeconfigs/workloadmanager.yaml",
    }


def test_the_router_gets_its_in_cluster_files_from_a_private_mount_namespace() -> None:
    part = parts.router(CLUSTER)
    assert part.argv[:5] == ("unshare", "--mount", "--propagation", "private", "--")
    script = part.argv[7]
    assert "mount -t tmpfs tmpfs /run" in script
    assert 'mount --bind "$1" /run/secrets/kubernetes.io/serviceaccount' in script
    assert part.argv[9:] == (
        "/state/router-serviceaccount",
        "/opt/bin/agentcube-router",
        "--port=8080",
        "--debug",
        "--max-concurrent-requests=20",
        "--jwt-issuer-url=http://127.0.0.1:8070/realms/agentcube",
        "--jwt-audience=agentcube-api",
        "--jwt-role-claim=realm_access.roles",
        "--jwt-required-role=sandbox:invoke",
    )
    assert part.env["WORKLOAD_MANAGER_URL"] == "http://127.0.0.1:8090"
    assert part.env["KUBERNETES_SERVICE_HOST"] == "127.0.0.1"
    assert part.env["KUBERNETES_SERVICE_PORT"] == "6443"


def test_a_router_without_oidc_is_the_chart_s_without_router_jwt() -> None:
    """`--router-auth none`: no --jwt-* flag, the chart's args when router.jwt.issuerUrl is
    empty (agentcube-router.yaml:99-104), as upstream's e2e runs without Keycloak."""
    argv = parts.router(replace(CLUSTER, router_oidc=False)).argv
    assert argv[-3:] == ("--port=8080", "--debug", "--max-concurrent-requests=20")
    assert not [flag for flag in argv if flag.startswith("--jwt-")]


def test_the_issuer_serves_the_router_s_issuer_url_and_writes_the_suite_s_tokens() -> None:
    """The Router's --jwt-issuer-url is the issuer's own URL to the character (go-oidc
    compares them), and its audience, role claim and required role are the Router's."""
    part = parts.oidc_issuer(CLUSTER)
    argv = list(part.argv)
    assert argv[1:3] == ["-m", "oidc_issuer"]
    given = dict(zip(argv[3::2], argv[4::2], strict=True))
    assert given == {
        "--port": "8070",
        "--token-dir": "/state/oidc-tokens",
        "--audience": "agentcube-api",
        "--role-claim": "realm_access.roles",
        "--required-role": "sandbox:invoke",
        "--realm": "agentcube",
    }
    assert flags(parts.router(CLUSTER))["jwt-issuer-url"] == CLUSTER.ports.oidc_issuer_url
    assert CLUSTER.ports.oidc_issuer_url == "http://127.0.0.1:8070/realms/agentcube"
    assert str(part.ready).startswith(
        "GET http://127.0.0.1:8070/realms/agentcube/.well-known/openid-configuration answering 200"
    )


def test_the_cluster_s_clients_file_is_passed_to_the_issuer_by_its_path() -> None:
    cluster = replace(CLUSTER, oidc_clients=Path("/secrets/clients.json"))
    argv = list(parts.oidc_issuer(cluster).argv)
    assert argv[argv.index("--clients-file") + 1] == "/secrets/clients.json"
    assert argv.count("--clients-file") == 1


def test_the_node_maps_the_user_s_images_first_then_picod_and_python() -> None:
    part = parts.node(CLUSTER)
    argv = list(part.argv)
    assert argv[1:4] == ["-m", "onemachine", "node"]
    images = [argv[i + 1] for i, arg in enumerate(argv) if arg == "--image"]
    assert images == [
        "python:3.12*=/usr/bin/python3.12",
        "picod:*=/opt/bin/picod",
        "python:*=python3",
    ]
    assert argv[argv.index("--kubeconfig") + 1] == "/state/kubeconfigs/admin.yaml"
    # its Service proxy serves the API server's service range
    assert argv[argv.index("--service-cidr") + 1] == "198.19.0.0/24"
    assert "--service-cluster-ip-range=198.19.0.0/24" in parts.api_server(CLUSTER).argv
    given = flags(part)
    assert given["tls-cert-file"] == "/state/pki/kubelet.crt"
    assert given["tls-private-key-file"] == "/state/pki/kubelet.key"
    assert given["client-ca-file"] == "/state/pki/ca.crt"
    assert str(part.ready) == (
        "GET https://127.0.0.1:6443/api/v1/nodes/onemachine-node answering 200 as expected"
    )


@pytest.mark.parametrize("build", ALL, ids=lambda build: build.__name__)
def test_no_part_gets_a_token_or_a_secret_in_its_arguments(build) -> None:
    part = build(CLUSTER)
    assert not any("token=" in arg.lower() or "password" in arg.lower() for arg in part.argv)


def test_each_part_has_its_own_name() -> None:
    names = [build(CLUSTER).name for build in ALL]
    assert len(set(names)) == len(names)


def test_the_issuer_part_runs_as_given_ready_by_its_probe_with_the_suite_s_tokens(
    tmp_path: Path,
) -> None:
    """The part's own command line and probe, run for real on a free port (outside any
    namespace: it listens on 127.0.0.1 only): its tokens and those of its token endpoint
    name its realm's URL as their issuer, and the suite finds its key from a token's `iss`
    as it does to forge (acceptance/core/forgeries.py)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    state = StateDir(tmp_path / "state")
    state.make()
    cluster = parts.Cluster(
        CLUSTER.binaries,
        state,
        Pki(state.pki),
        parts.Ports(oidc_issuer=port),
        oidc_clients=write_clients_file(tmp_path / "clients.json"),
    )
    part = parts.oidc_issuer(cluster)
    process = subprocess.Popen(
        part.argv, env={**os.environ, **part.env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 30
        while not part.ready() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert part.ready(), process.stderr.read1().decode() if process.poll() is not None else ""
        token = (state.oidc_tokens / "api_token").read_text().strip()
        claims = jwt.decode(token, options={"verify_signature": False})
        assert claims["iss"] == cluster.ports.oidc_issuer_url
        assert claims["realm_access"]["roles"] == ["sandbox:invoke"]
        public_key = published_public_key_pem(
            token, lambda url: requests.get(url, timeout=5).json()
        )
        answer = requests.post(
            cluster.ports.oidc_issuer_url + "/protocol/openid-connect/token",
            data={
                "grant_type": "client_credentials",
                "client_id": "agentcube-admin",
                "client_secret": "e2e-admin-secret",
            },
            timeout=5,
        )
        assert answer.status_code == 200, answer.text
        granted = jwt.decode(
            answer.json()["access_token"],
            public_key,
            algorithms=["RS256"],
            audience="agentcube-api",
        )
        assert granted["iss"] == cluster.ports.oidc_issuer_url
        assert "admin" in granted["realm_access"]["roles"]
    finally:
        process.terminate()
        process.wait(10)
    assert process.returncode == 0
