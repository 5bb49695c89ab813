"""`--router-identity DIR`: the Router's identity Secret over HTTPS on loopback, called with a
real Kubernetes client configured as the Router's in-cluster client is."""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass
from pathlib import Path

import jwt
import pytest
import requests
from cryptography.hazmat.primitives import serialization
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException
from kubernetes.config.incluster_config import InClusterConfigLoader

from localcube.router_identity import SECRET_NAME
from tests.localcube.picod_process import SigningKey
from tests.localcube.support import FIXTURES, Client
from tests.localcube.test_cli import run_cli

SECRET = {"metadata": {"name": SECRET_NAME}, "type": "Opaque", "data": {}}


@dataclass
class IdentityCube:
    client: Client
    state_dir: Path
    directory: Path

    def kubernetes(self, token_file: Path | None = None) -> k8s.CoreV1Api:
        """A CoreV1 client loaded as rest.InClusterConfig loads the Router's: the two
        variables, the token file and the CA file."""
        environ = dict(
            line.split("=", 1) for line in (self.directory / "kubernetes.env").read_text().split()
        )
        configuration = k8s.Configuration()
        InClusterConfigLoader(
            token_filename=str(token_file or self.directory / "token"),
            cert_filename=str(self.directory / "ca.crt"),
            environ=environ,
        ).load_and_set(configuration)
        return k8s.CoreV1Api(k8s.ApiClient(configuration))


@pytest.fixture
def identity_cube(tmp_path: Path, start_localcube) -> IdentityCube:
    state, directory = tmp_path / "state", tmp_path / "serviceaccount"
    cube = start_localcube(state_dir=state, extra_arguments=["--router-identity", str(directory)])
    return IdentityCube(Client(cube.url), state, directory)


def test_the_service_account_files_are_written_private(identity_cube: IdentityCube) -> None:
    directory = identity_cube.directory
    assert directory.stat().st_mode & 0o777 == 0o700
    assert (directory / "token").stat().st_mode & 0o777 == 0o600
    assert (directory / "ca.crt").read_text().startswith("-----BEGIN CERTIFICATE-----")
    assert (directory / "namespace").read_text() == "default"
    host, port = (directory / "kubernetes.env").read_text().split()
    assert host == "KUBERNETES_SERVICE_HOST=127.0.0.1"
    assert port.startswith("KUBERNETES_SERVICE_PORT=") and int(port.split("=")[1]) > 0


def test_the_router_creates_then_reads_back_localcubes_signing_key(
    identity_cube: IdentityCube,
) -> None:
    """Upstream: pkg/router/jwt.go:177-222"""
    api = identity_cube.kubernetes()
    with pytest.raises(ApiException) as refused:
        api.create_namespaced_secret("default", SECRET)
    assert refused.value.status == 409
    assert '"reason":"AlreadyExists"' in refused.value.body.replace(" ", "")
    secret = api.read_namespaced_secret(SECRET_NAME, "default")
    private_pem = secret.data["private.pem"]
    pem = base64.b64decode(private_pem)
    assert pem.startswith(b"-----BEGIN RSA PRIVATE KEY-----"), "PKCS#1, as x509.ParsePKCS1"
    served = serialization.load_pem_private_key(pem, password=None)
    own = serialization.load_pem_private_key(
        (identity_cube.state_dir / "router-private.pem").read_bytes(), password=None
    )
    assert served.private_numbers() == own.private_numbers()


def test_a_sandbox_accepts_a_jwt_signed_with_the_served_key(identity_cube: IdentityCube) -> None:
    """Upstream: pkg/router/handlers.go:277-307"""
    secret = identity_cube.kubernetes().read_namespaced_secret(SECRET_NAME, "default")
    key = serialization.load_pem_private_key(
        base64.b64decode(secret.data["private.pem"]), password=None
    )
    client = identity_cube.client
    session = client.create_session("code-interpreter", "python-interpreter").json()["sessionId"]
    endpoint = client.sandbox_of(session)["endpoint"]
    now = int(time.time())
    claims = {"iss": "agentcube-router", "session_id": session, "iat": now, "exp": now + 300}

    def execute(token: str) -> requests.Response:
        return requests.post(
            f"http://{endpoint}/api/execute",
            json={"command": ["echo", "signed"]},
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )

    accepted = execute(jwt.encode(claims, key, algorithm="RS256"))
    assert accepted.status_code == 200, accepted.text
    assert accepted.json()["stdout"] == "signed\n"
    assert execute(SigningKey().token(session_id=session)).status_code == 401


def test_callers_without_the_service_account_token_are_refused(
    identity_cube: IdentityCube, tmp_path: Path
) -> None:
    wrong = tmp_path / "wrong-token"
    wrong.write_text("not-the-token")
    with pytest.raises(ApiException) as refused:
        identity_cube.kubernetes(wrong).read_namespaced_secret(SECRET_NAME, "default")
    assert refused.value.status == 401


def test_only_the_identity_secret_is_served(identity_cube: IdentityCube) -> None:
    api = identity_cube.kubernetes()
    with pytest.raises(ApiException) as missing:
        api.read_namespaced_secret("other", "default")
    assert missing.value.status == 404
    with pytest.raises(ApiException) as forbidden:
        api.create_namespaced_secret("default", {"metadata": {"name": "other"}})
    assert forbidden.value.status == 403


def test_with_tokens_on_the_service_account_token_may_open_sessions(
    tmp_path: Path, start_localcube
) -> None:
    """Upstream: pkg/router/session_manager.go:186-188"""
    tokens = tmp_path / "tokens"
    tokens.write_text("alice=alice-token-0123456789\n")
    directory = tmp_path / "serviceaccount"
    cube = start_localcube(
        extra_arguments=["--token-file", str(tokens), "--router-identity", str(directory)]
    )
    router = Client(cube.url, (directory / "token").read_text())
    assert router.create_session("agent-runtime", "echo-agent").status_code == 200
    assert Client(cube.url, "nobody").create_session("agent-runtime", "echo-agent").status_code == (
        401
    )


def test_an_identity_directory_that_cannot_be_made_is_refused(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    wanted = blocker / "serviceaccount"
    result = run_cli("serve", "--manifests", str(FIXTURES), "--router-identity", str(wanted))
    assert result.returncode == 2
    assert result.stderr.startswith("localcube: ") and str(wanted) in result.stderr
