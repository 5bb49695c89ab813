"""`--router-identity DIR`: the Router's identity Secret over HTTPS on loopback, called with a
real Kubernetes client configured as the Router's in-cluster client is."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import jwt
import pytest
import requests
from cryptography.hazmat.primitives import serialization
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException
from kubernetes.config.incluster_config import InClusterConfigLoader

from localcube import embedded
from localcube.upstream_router import kube_protobuf
from localcube.upstream_router.identity import SECRET_NAME, accepts_json
from tests.localcube.picod_process import SigningKey
from tests.localcube.support import FIXTURES, Client
from tests.localcube.test_cli import run_cli
from tests.recordings.recorded import Exchange, params

SECRET = {"metadata": {"name": SECRET_NAME}, "type": "Opaque", "data": {}}


@dataclass
class IdentityCube:
    client: Client
    state_dir: Path
    directory: Path

    def kubernetes(self, token_file: Path | None = None) -> k8s.CoreV1Api:
        """A CoreV1 client loaded as rest.InClusterConfig loads the Router's: the two
        variables, the token file and the CA file."""
        configuration = k8s.Configuration()
        InClusterConfigLoader(
            token_filename=str(token_file or self.directory / "token"),
            cert_filename=str(self.directory / "ca.crt"),
            environ=self.environ(),
        ).load_and_set(configuration)
        return k8s.CoreV1Api(k8s.ApiClient(configuration))

    def environ(self) -> dict[str, str]:
        """The two variables the in-cluster client reads."""
        lines = (self.directory / "kubernetes.env").read_text().split()
        return dict(line.split("=", 1) for line in lines)

    def assert_serves_localcubes_key(self, private_pem: str) -> None:
        pem = base64.b64decode(private_pem)
        assert pem.startswith(b"-----BEGIN RSA PRIVATE KEY-----"), "PKCS#1, as x509.ParsePKCS1"
        served = serialization.load_pem_private_key(pem, password=None)
        own = serialization.load_pem_private_key(
            (self.state_dir / "router-private.pem").read_bytes(), password=None
        )
        assert served.private_numbers() == own.private_numbers(), "another key than localcube's"


@pytest.fixture
def identity_cube(tmp_path: Path, start_localcube) -> IdentityCube:
    state, directory = tmp_path / "state", tmp_path / "serviceaccount"
    cube = start_localcube(state_dir=state, extra_arguments=["--router-identity", str(directory)])
    return IdentityCube(Client(cube.url), state, directory)


@pytest.fixture(scope="module")
def shared_identity(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IdentityCube]:
    """One identity endpoint for the tests that only read or are refused."""
    base = tmp_path_factory.mktemp("identity")
    state, directory = base / "state", base / "serviceaccount"
    arguments = ["--router-identity", str(directory)]
    cube = embedded.start(
        [FIXTURES], base / "localcube.log", state_dir=state, extra_arguments=arguments
    )
    yield IdentityCube(Client(cube.url), state, directory)
    cube.stop()


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
    identity_cube.assert_serves_localcubes_key(secret.data["private.pem"])


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


PROTOBUF = kube_protobuf.MEDIA_TYPE
JSON = "application/json"
CLIENT_GO_ACCEPT = f"{PROTOBUF},application/json"  # k8s.io/client-go rest/request.go:196-203


def call(
    cube: IdentityCube, method: str, name: str = "", body: bytes = b"", **headers: str
) -> requests.Response:
    """A request to the identity endpoint as the Router's client-go makes it."""
    port = cube.environ()["KUBERNETES_SERVICE_PORT"]
    url = f"https://127.0.0.1:{port}/api/v1/namespaces/default/"
    headers.setdefault("Authorization", f"Bearer {(cube.directory / 'token').read_text()}")
    return requests.request(
        method,
        url + ("secrets/" + name if name else "secrets"),
        data=body,
        headers=headers,
        verify=str(cube.directory / "ca.crt"),
        timeout=30,
    )


@pytest.mark.parametrize("exchange", params("k8s-api.jsonl", only=["k8s-exists-1-post"]))
def test_client_gos_protobuf_create_is_answered_already_exists_in_json(
    shared_identity: IdentityCube, exchange: Exchange
) -> None:
    """The create as the Router's client-go sent it (recorded), answered in JSON, which its
    Accept lists after protobuf.

    Upstream: pkg/router/jwt.go:177-190 (client-go: protobuf for core types)
    """
    answer = call(
        shared_identity,
        "POST",
        body=exchange.request.body,
        **{"Content-Type": PROTOBUF, "Accept": CLIENT_GO_ACCEPT},
    )
    assert (answer.status_code, answer.headers["Content-Type"]) == (409, JSON), answer.content
    status = answer.json()
    assert status["reason"] == "AlreadyExists" and status["details"]["name"] == SECRET_NAME
    read = call(shared_identity, "GET", SECRET_NAME, Accept=CLIENT_GO_ACCEPT)
    assert (read.status_code, read.headers["Content-Type"]) == (200, JSON)
    shared_identity.assert_serves_localcubes_key(read.json()["data"]["private.pem"])


@pytest.mark.parametrize(
    ("content_type", "body", "reason"),
    [
        (PROTOBUF, b'{"metadata": {"name": "picod-router-identity"}}', "k8s\\0 magic"),
        (PROTOBUF, kube_protobuf.MAGIC + b"\x0a\x80", "varint is cut short"),
        ("application/json", b"\x6b\x38\x73\x00", "Expecting value"),
        ("application/json", b"[]", "it is a list"),
        ("application/json", b'{"kind": "ConfigMap"}', "it is a ConfigMap"),
        ("application/json", b'{"metadata": "x"}', "it has no metadata.name"),
    ],
)
@pytest.mark.parametrize("accept", [CLIENT_GO_ACCEPT, "application/json"])
def test_a_body_it_cannot_read_is_a_bad_request_status_naming_the_media_type(
    shared_identity: IdentityCube, content_type: str, body: bytes, reason: str, accept: str
) -> None:
    answer = call(
        shared_identity, "POST", body=body, **{"Content-Type": content_type, "Accept": accept}
    )
    assert (answer.status_code, answer.headers["Content-Type"]) == (400, JSON), answer.content
    status = answer.json()
    assert (status["kind"], status["reason"], status["code"]) == ("Status", "BadRequest", 400)
    assert status["message"].startswith(
        "the object provided is unrecognized (must be of type Secret)"
    )
    assert reason in status["message"] and f"(a body of {content_type})" in status["message"]


def test_a_body_in_a_media_type_it_does_not_read_is_unsupported(
    shared_identity: IdentityCube,
) -> None:
    answer = call(shared_identity, "POST", body=b"name: x", **{"Content-Type": "application/yaml"})
    assert answer.status_code == 415
    status = answer.json()
    assert status["reason"] == "UnsupportedMediaType"
    assert status["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        f"application/json, {PROTOBUF}"
    )


def test_an_accept_it_cannot_satisfy_is_not_acceptable_in_json(
    shared_identity: IdentityCube,
) -> None:
    answer = call(shared_identity, "GET", SECRET_NAME, Accept="application/yaml")
    assert (answer.status_code, answer.headers["Content-Type"]) == (406, "application/json")
    assert answer.json()["reason"] == "NotAcceptable"
    assert (
        answer.json()["message"] == "only the following media types are accepted: application/json"
    )


@pytest.mark.parametrize(
    ("method", "name", "code", "reason"),
    [
        ("GET", f"{SECRET_NAME}/status", 404, "NotFound"),
        ("GET", "", 405, "MethodNotAllowed"),
        ("DELETE", SECRET_NAME, 405, "MethodNotAllowed"),
    ],
)
def test_a_call_the_router_never_makes_is_a_status_too(
    shared_identity: IdentityCube, method: str, name: str, code: int, reason: str
) -> None:
    answer = call(shared_identity, method, name, Accept=CLIENT_GO_ACCEPT)
    assert (answer.status_code, answer.headers["Content-Type"]) == (code, JSON)
    assert answer.json()["reason"] == reason


def test_a_caller_without_the_token_is_refused_in_json(
    shared_identity: IdentityCube,
) -> None:
    answer = call(
        shared_identity, "GET", SECRET_NAME, Accept=CLIENT_GO_ACCEPT, Authorization="Bearer wrong"
    )
    assert (answer.status_code, answer.headers["Content-Type"]) == (401, JSON)
    assert answer.json()["reason"] == "Unauthorized"


@pytest.mark.parametrize(
    ("accept", "takes_json"),
    [
        (CLIENT_GO_ACCEPT, True),
        ("application/json", True),
        ("", True),
        ("*/*", True),
        ("application/*", True),
        (f"{PROTOBUF};q=0.5, application/json", True),
        (f"application/json;q=0, {PROTOBUF}", False),
        (PROTOBUF, False),
        ("application/yaml, text/html", False),
        ("application/json;q=zero", False),
    ],
)
def test_json_is_answered_whenever_accept_takes_it(accept: str, takes_json: bool) -> None:
    assert accepts_json(accept) == takes_json
