"""The Router's calls to the Kubernetes API, as client-go sent them at 939abb5, replayed
against localcube's identity endpoint (`--router-identity`).

The program recorded is the Router; the answers are a stand-in API server's. Where the
Router went on (`router_outcome.router_listening`), localcube's answer must carry what the
recorded one carried: its status and its object, decoded from protobuf or JSON, after the
README's normalisation; localcube answers in JSON, as in `k8s-json409-*`, where the Router
went on too. Where
the Router exited (the Secret gone between the 409 and the GET; localcube's former 400), the
recording is the counter-example: localcube must answer as the API server answers when the
Secret exists, the answers the Router went on with in `k8s-exists-*`.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from cryptography.hazmat.primitives import serialization

from localcube import embedded
from localcube.upstream_router import kube_protobuf
from localcube.upstream_router.identity import JSON, SECRET_NAME, accepts_json
from tests.localcube.support import FIXTURES
from tests.recordings.recorded import Exchange, Message, judge, load, params

FILE = "k8s-api.jsonl"
WENT_ON_WITH = {"POST": "k8s-exists-1-post", "GET": "k8s-exists-2-get"}
# The recordings' placeholders for what differs at every start (README, "Normalisation").
PEM_PLACEHOLDERS = {
    "private.pem": "<ROUTER_PRIVATE_KEY_PEM>",
    "public.pem": "<ROUTER_PUBLIC_KEY_PEM>",
}
VOLATILE_METADATA = ("uid", "resourceVersion", "creationTimestamp")
SENT_AS_RECORDED = ("Content-Type", "Accept", "User-Agent", "Accept-Encoding")


@dataclass(frozen=True)
class Identity:
    """localcube's identity endpoint, called as the Router's in-cluster client calls it."""

    url: str
    token: str
    ca_file: Path
    private_pem: bytes

    def call(self, request: Message, path: str | None = None) -> requests.Response:
        """The recorded request, its placeholders replaced by this endpoint's own values."""
        headers = {name: request.header(name) for name in SENT_AS_RECORDED if request.header(name)}
        headers["Authorization"] = f"Bearer {self.token}"
        return requests.request(
            request.fields["method"],
            self.url + (path or request.fields["path"]),
            headers=headers,
            data=request.body or None,
            verify=str(self.ca_file),
            timeout=30,
        )


@pytest.fixture(scope="module")
def identity(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Identity]:
    base = tmp_path_factory.mktemp("identity")
    directory, state = base / "serviceaccount", base / "state"
    cube = embedded.start(
        [FIXTURES],
        base / "localcube.log",
        state_dir=state,
        extra_arguments=["--router-identity", str(directory)],
    )
    environ = dict(
        line.split("=", 1) for line in (directory / "kubernetes.env").read_text().split()
    )
    url = f"https://{environ['KUBERNETES_SERVICE_HOST']}:{environ['KUBERNETES_SERVICE_PORT']}"
    token = (directory / "token").read_text()
    private_pem = (state / "router-private.pem").read_bytes()
    yield Identity(url, token, directory / "ca.crt", private_pem)
    cube.stop()


def decoded(content_type: str | None, body: bytes) -> dict[str, Any]:
    """The object an answer holds, in whichever of the two encodings it declares."""
    media_type = (content_type or "").split(";")[0].strip()
    if media_type == kube_protobuf.MEDIA_TYPE:
        return kube_protobuf.decode(body)
    assert media_type == "application/json", f"an answer client-go cannot decode: {content_type!r}"
    return json.loads(body)


def normalised(obj: dict[str, Any]) -> dict[str, Any]:
    """The object with the README's placeholders for what changes at every start, and with
    unset fields left out (JSON writes `"metadata": {}` where protobuf decodes to nothing)."""
    obj = copy.deepcopy(obj)
    metadata = obj.get("metadata") or {}
    for name in VOLATILE_METADATA:
        if metadata.get(name):
            metadata[name] = f"<{name}>"
    data = obj.get("data") or {}
    for key in data:
        data[key] = PEM_PLACEHOLDERS.get(key, data[key])
    return _set_fields(obj)


def _set_fields(value: Any) -> Any:
    if isinstance(value, dict):
        kept = {key: _set_fields(item) for key, item in value.items()}
        return {key: item for key, item in kept.items() if item not in ({}, "", None, [])}
    return value


def reference(exchange: Exchange) -> Exchange:
    """The recorded exchange whose answer localcube's is compared with."""
    if exchange.line["router_outcome"]["router_listening"]:
        return exchange
    wanted = WENT_ON_WITH[exchange.request.fields["method"]]
    return next(other for other in load(FILE) if other.id == wanted)


def mismatches_with(recorded: Message, answer: requests.Response) -> list[str]:
    expected = decoded(recorded.header("Content-Type"), recorded.body)
    got = decoded(answer.headers.get("Content-Type"), answer.content)
    found = []
    if answer.status_code != recorded.fields["status"]:
        found.append(f"status {answer.status_code}, recorded {recorded.fields['status']}")
    if normalised(got) != normalised(expected):
        found.append(f"object {normalised(got)}, recorded {normalised(expected)}")
    return found


def assert_lets_the_router_go_on(identity: Identity, request: Message, answer: requests.Response):
    """What TryStoreOrLoadJWTKeySecret needs: the create answered 201 or AlreadyExists (never
    a 400), the read answered with a Secret holding localcube's key in PKCS#1."""
    accept = request.header("Accept") or ""
    assert accepts_json(accept) and answer.headers.get("Content-Type") == JSON, (
        f"expected the answer in JSON, which {accept!r} accepts, got "
        f"{answer.headers.get('Content-Type')!r}"
    )
    obj = decoded(answer.headers.get("Content-Type"), answer.content)
    if request.fields["method"] == "POST":
        assert answer.status_code == 201 or obj.get("reason") == "AlreadyExists", (
            f"expected the create to be answered 201 or 409 AlreadyExists, got "
            f"{answer.status_code} {obj}"
        )
        return
    assert answer.status_code == 200 and obj.get("kind") == "Secret", (
        f"expected the Secret, got {answer.status_code} {obj}"
    )
    pem = base64.b64decode(obj["data"]["private.pem"])
    assert pem.startswith(b"-----BEGIN RSA PRIVATE KEY-----"), f"expected PKCS#1, got {pem[:40]!r}"
    served = serialization.load_pem_private_key(pem, password=None)
    own = serialization.load_pem_private_key(identity.private_pem, password=None)
    assert served.private_numbers() == own.private_numbers(), "the Secret holds another key"


@pytest.mark.parametrize("exchange", params(FILE))
def test_each_recorded_call_is_answered_as_the_router_needs(
    identity: Identity, exchange: Exchange
) -> None:
    """Upstream: pkg/router/jwt.go:177-205 (client-go v0.35.4: protobuf for core types)"""
    answer = identity.call(exchange.request)
    assert_lets_the_router_go_on(identity, exchange.request, answer)
    judge(FILE, exchange, mismatches_with(reference(exchange).response, answer))


@pytest.mark.parametrize("exchange", params(FILE, only=["k8s-exists-1-post", "k8s-gone-1-post"]))
def test_the_router_reads_back_the_secret_the_409_names(
    identity: Identity, exchange: Exchange
) -> None:
    """Upstream: pkg/router/jwt.go:177-190: on AlreadyExists, the Secret is read by name."""
    recorded = load(FILE)
    following = recorded[recorded.index(exchange) + 1]
    named = decoded(exchange.response.header("Content-Type"), exchange.response.body)
    path = f"/api/v1/namespaces/default/secrets/{named['details']['name']}"
    assert (following.request.fields["method"], following.request.fields["path"]) == ("GET", path)
    answer = identity.call(exchange.request)
    status = decoded(answer.headers.get("Content-Type"), answer.content)
    assert answer.status_code == 409 and status.get("reason") == "AlreadyExists", status
    assert status["details"]["name"] == SECRET_NAME, f"the 409 names {status['details']}"
    assert_lets_the_router_go_on(identity, following.request, identity.call(following.request))


@pytest.mark.parametrize("exchange", params(FILE, only=["k8s-gone-2-get"]))
def test_a_secret_not_served_is_the_api_servers_not_found_status(
    identity: Identity, exchange: Exchange
) -> None:
    """The recorded 404 Status, for a name localcube does not serve, field for field."""
    other = "another-secret"
    answer = identity.call(exchange.request, path=f"/api/v1/namespaces/default/secrets/{other}")
    expected = kube_protobuf.decode(exchange.response.body)
    expected["message"] = expected["message"].replace(SECRET_NAME, other)
    expected["details"]["name"] = other
    assert answer.status_code == 404, answer.content
    got = normalised(answer.json())
    assert got == normalised(expected), f"expected {normalised(expected)}, got {got}"


@pytest.mark.parametrize("exchange", params(FILE))
def test_the_decoder_reads_every_recorded_protobuf_body(exchange: Exchange) -> None:
    """client-go's create as the Secret it sends; the API server's answers as the Secret or
    the Status of the recorded code."""
    request, response = exchange.request, exchange.response
    if request.header("Content-Type") == kube_protobuf.MEDIA_TYPE:
        secret = kube_protobuf.decode(request.body)
        assert (secret["kind"], secret["metadata"]["name"]) == ("Secret", SECRET_NAME), secret
        assert secret["metadata"]["labels"] == {"app": "agentcube", "component": "router"}
        assert set(secret["data"]) == set(PEM_PLACEHOLDERS), secret["data"]
    if response.header("Content-Type") == kube_protobuf.MEDIA_TYPE:
        answered = kube_protobuf.decode(response.body)
        if answered["kind"] == "Status":
            assert answered["code"] == response.fields["status"], answered
        else:
            assert (answered["kind"], response.fields["status"]) in (
                ("Secret", 200),
                ("Secret", 201),
            )
