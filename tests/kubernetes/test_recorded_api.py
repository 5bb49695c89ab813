"""The stand-in API server (fake_api.py) answers the adapter's calls as a real kube-apiserver
v1.36.2 did: each exchange recorded in apiserver-recordings/v1.36.2 (a copy of
../shared/kube-apiserver-recordings, with its README) is sent
again, through the adapter's own KubeApi and connection.connect (or the plain client call
the recording names, for the few the adapter does not make), to a stand-in staged as the
recording's README describes, and the answers are compared as that README says: the status,
the Content-Type, and the body's shape.

Each exchange is a test of its own, named by its recording id. The exchanges before it in
its file are replayed first, unchecked, since they made the state it was recorded in.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import urllib3
import websocket._core
import yaml
from kubernetes import client, config
from websocket import WebSocketBadStatusException

from acceptance.core.settings import ConfigError
from acceptance.platforms.kubernetes import connection
from acceptance.platforms.kubernetes.api import KubeApi, KubeError, ObjectRef, Resource
from acceptance.platforms.kubernetes.cluster import Cluster
from acceptance.platforms.kubernetes.settings import KubernetesSettings
from tests.kubernetes.conftest import (
    NS,
    PODS,
    SANDBOXES,
    custom,
    owner,
    pod,
    write_kubeconfig,
)
from tests.kubernetes.fake_api import TOKEN, FakeKubernetes, Identity
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
RECORDINGS = Path(__file__).with_name("apiserver-recordings") / "v1.36.2"
RBAC = ROOT / "docs" / "examples" / "rbac.yaml"
EXCEPTED = {
    "list-codeinterpreters-rv-notolderthan": "recorded on etcd 3.4.23, which has no progress "
    "notifications: the watch cache never learned of a revision that touched no cached "
    "resource, so the server answered 504 'Too large resource version' where etcd 3.5 or "
    "later answers 200 (the recordings' README)",
}
# What rbac.yaml granted when the recordings were made and no longer does: no call of the
# adapter lists runtimes (tests/kubernetes/test_rbac.py).
REMOVED_SINCE_RECORDED = (
    {
        "apiGroups": ["runtime.agentcube.volcano.sh"],
        "resources": ["agentruntimes", "codeinterpreters"],
        "verbs": ["list"],
    },
)
# The recordings' non-matching precondition uid, which they keep as it was sent.
KEPT_UID = "00000000-0000-4000-8000-000000000000"
ACCEPTANCE_TOKEN = "acceptance-token-5c4b3a"
GET_ONLY_TOKEN = "portforward-get-only-token-1f2e"
UNKNOWN_TOKEN = "a-token-nobody-issued"
# Exchanges the recording made with KubeApi where no call of KubeApi can: objects() takes a
# Resource, and no Resource has a singular plural.
PLAIN_CALLS = {"not-found-unknown-resource"}
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
STAGED_AT = "2026-12-01T10:00:00Z"
_KUBECTL_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"


def load_recordings() -> list[dict[str, Any]]:
    exchanges = []
    for path in sorted(RECORDINGS.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            exchanges.append({**json.loads(line), "file": path.name})
    return exchanges


def cases() -> list[Any]:
    return [
        pytest.param(
            exchange,
            id=exchange["id"],
            marks=[pytest.mark.skip(reason=EXCEPTED[exchange["id"]])]
            if exchange["id"] in EXCEPTED
            else [],
        )
        for exchange in load_recordings()
    ]


def decoded(encoded: str) -> bytes:
    return base64.b64decode(encoded or "")


def by_id(exchanges: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {exchange["id"]: exchange for exchange in exchanges}


# Staging: the objects the README's "Stage" names, taken from the answers that showed them,
# without what the server adds (the stand-in must add it).


def without_server_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """The object as staged, its timestamps real ones again (the typed client parses them)."""
    staged = json.loads(json.dumps(obj).replace("<TIME>", STAGED_AT))
    for key in ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields"):
        staged["metadata"].pop(key, None)
    return staged


def answered(exchange: dict[str, Any]) -> Any:
    return json.loads(decoded(exchange["response"]["body_b64"]))


def stage(fake: FakeKubernetes, recorded: dict[str, dict[str, Any]], file: str) -> None:
    core, custom = f"/api/v1/namespaces/{NS}", "/apis/{group}/v1alpha1/namespaces/" + NS
    listed = {
        f"{core}/pods": "list-pods-all",
        f"{core}/events": "list-events-pod",
        custom.format(group="agents.x-k8s.io") + "/sandboxes": "list-sandboxes-all",
        custom.format(group="extensions.agents.x-k8s.io") + "/sandboxclaims": (
            "list-sandboxclaims-session"
        ),
        custom.format(group="extensions.agents.x-k8s.io") + "/sandboxwarmpools": (
            "list-sandboxwarmpools-admin"
        ),
    }
    if file == "lists.jsonl":  # runtimes.jsonl creates it; the lists were recorded after
        listed[custom.format(group="runtime.agentcube.volcano.sh") + "/codeinterpreters"] = (
            "list-codeinterpreters-rv0"
        )
    for collection, exchange in listed.items():
        for item in answered(recorded[exchange])["items"]:
            fake.put(collection, without_server_fields(item))
    fake.put(f"{core}/services", without_server_fields(answered(recorded["get-service"])))
    fake.put(
        f"/apis/apps/v1/namespaces/{NS}/deployments",
        without_server_fields(answered(recorded["get-deployment"])),
    )
    for account in ("e2e-test", "portforward-get-only"):
        fake.put(f"{core}/serviceaccounts", {"metadata": {"name": account}})
    fake.put("/api/v1/nodes", {"metadata": {"name": "node-without-address"}, "status": {}})
    fake.put(
        "/api/v1/nodes",
        {
            "metadata": {"name": "node-loopback"},
            "status": {
                "addresses": [{"type": "InternalIP", "address": "127.0.0.2"}],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            },
        },
    )


def identities() -> dict[str, Identity]:
    """The recording's users: `acceptance` holding rbac.yaml as it was then in the namespace,
    and the service account granted pods/portforward `get` alone (admin is the stand-in's
    TOKEN)."""
    role = yaml.safe_load(RBAC.read_text(encoding="utf-8"))
    in_namespace = frozenset({NS})
    return {
        ACCEPTANCE_TOKEN: Identity(
            "acceptance", (*role["rules"], *REMOVED_SINCE_RECORDED), in_namespace
        ),
        GET_ONLY_TOKEN: Identity(
            f"system:serviceaccount:{NS}:portforward-get-only",
            (
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
                {"apiGroups": [""], "resources": ["pods/portforward"], "verbs": ["get"]},
            ),
            in_namespace,
        ),
    }


def token_of(exchange: dict[str, Any]) -> str:
    who = exchange["as"]
    for prefix, token in (
        ("acceptance", ACCEPTANCE_TOKEN),
        ("admin", TOKEN),
        ("an unknown bearer token", UNKNOWN_TOKEN),
        (f"service account {NS}/portforward-get-only", GET_ONLY_TOKEN),
    ):
        if who.startswith(prefix):
            return token
    raise AssertionError(f"{exchange['id']}: no identity of the stand-in for {who!r}")


# The wire: what the client sent and what came back, seen inside the client process as the
# recorder saw it (urllib3's PoolManager.urlopen, websocket-client's handshake).


@dataclass(frozen=True)
class Exchange:
    method: str
    path: str  # with its query, as sent
    status: int
    headers: dict[str, str]
    body: bytes

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers.items() if k.lower() == name.lower()), None)


@pytest.fixture
def wire(monkeypatch: pytest.MonkeyPatch) -> list[Exchange]:
    return captured(monkeypatch)


def captured(monkeypatch: pytest.MonkeyPatch) -> list[Exchange]:
    """Every exchange on the wire from now until monkeypatch undoes its patches."""
    seen: list[Exchange] = []
    urlopen = urllib3.PoolManager.urlopen
    handshake = websocket._core.handshake

    def recorded_urlopen(self: Any, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        response = urlopen(self, method, url, *args, **kwargs)
        parts = urlsplit(url)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        seen.append(Exchange(method, path, response.status, dict(response.headers), response.data))
        return response

    def recorded_handshake(sock: Any, url: str, host: str, port: int, path: str, **kw: Any) -> Any:
        try:
            answer = handshake(sock, url, host, port, path, **kw)
        except WebSocketBadStatusException as error:
            headers = dict(error.resp_headers or {})
            seen.append(Exchange("GET", path, error.status_code, headers, error.resp_body or b""))
            raise
        seen.append(Exchange("GET", path, answer.status, dict(answer.headers), b""))
        return answer

    monkeypatch.setattr(urllib3.PoolManager, "urlopen", recorded_urlopen)
    monkeypatch.setattr(websocket._core, "handshake", recorded_handshake)
    return seen


# Sending: the adapter's call for the recorded request.


def configuration_for(kubeconfig: Path) -> client.Configuration:
    configuration = client.Configuration()
    config.load_kube_config(
        config_file=str(kubeconfig),
        context="fake",
        client_configuration=configuration,
        persist_config=False,
    )
    return configuration


def resource_of(group: str, plural: str) -> Resource:
    return next(r for r in Resource if (r.group, r.plural) == (group, plural))


_OBJECT_PATH = re.compile(
    r"^/(?:api/v1|apis/(?P<group>[^/]+)/(?P<version>[^/]+))/namespaces/(?P<namespace>[^/]+)"
    r"/(?P<plural>[^/]+)(?:/(?P<name>[^/]+)(?:/(?P<sub>[^/]+))?)?$"
)


def send(
    exchange: dict[str, Any], fake: FakeKubernetes, kubeconfig: Path, last_version: str
) -> None:
    """Make the call that `what` names; an error the call raises is the answer's business,
    not this function's. `last_version` is the resourceVersion of the last list answered."""
    try:
        if exchange["what"].startswith("connection.connect"):
            connection.connect(KubernetesSettings(kubeconfig=kubeconfig, kube_context="fake"), {})
        elif exchange["what"].startswith("KubeApi.") and exchange["id"] not in PLAIN_CALLS:
            api = KubeApi(configuration_for(kubeconfig), timeout=10)
            try:
                adapter_call(api, exchange, fake)
            finally:
                api.close()
        else:
            plain_call(exchange, kubeconfig, last_version)
    except (KubeError, ConfigError):
        pass


def adapter_call(api: KubeApi, exchange: dict[str, Any], fake: FakeKubernetes) -> None:
    request = exchange["request"]
    parts = urlsplit(request["path"])
    query = {key: values[0] for key, values in parse_qs(parts.query).items()}
    body = json.loads(decoded(request["body_b64"]) or "null")
    method = request["method"]
    discovery = re.fullmatch(r"/apis/([^/]+)/([^/]+)", parts.path)
    if discovery:
        api.api_resources(discovery[1], discovery[2])
        return
    match = _OBJECT_PATH.match(parts.path)
    assert match is not None, f"{exchange['id']}: no adapter call sends {parts.path}"
    namespace, plural, name, sub = match["namespace"], match["plural"], match["name"], match["sub"]
    if sub == "log":
        api.pod_log(namespace, name, query["container"], int(query["tailLines"]))
    elif sub == "portforward":
        api.open_port_forward(namespace, name, int(query["ports"])).close()
    elif sub == "token":
        api.service_account_token(namespace, name, body["spec"]["expirationSeconds"])
    elif plural == "services":
        api.service(namespace, name)
    elif plural == "events":
        involved = dict(term.split("=", 1) for term in query["fieldSelector"].split(","))
        api.pod_events(namespace, involved["involvedObject.name"])
    elif plural == "deployments" and method == "PATCH":
        api.restart_deployment(namespace, name)
    elif plural == "deployments":
        api.deployment(namespace, name)
    else:
        resource = resource_of(match["group"] or "", plural)
        if method == "GET" and name:
            api.get(resource, namespace, name)
        elif method == "GET":
            api.objects(resource, namespace, query.get("labelSelector", ""))
        elif method == "POST":
            api.create(resource, namespace, body)
        elif method == "DELETE":
            uid = body["preconditions"]["uid"]
            if uid == "<UID>":  # the uid of the object there, as the recorder sent it
                stored = fake.get(parts.path.rsplit("/", 1)[0], name)
                uid = stored["metadata"]["uid"] if stored else str(uuid.uuid4())
            grace = body.get("gracePeriodSeconds")
            api.delete(ObjectRef(resource, namespace, name, uid), grace_seconds=grace)
        else:
            raise AssertionError(f"{exchange['id']}: no adapter call sends {method}")


def plain_call(exchange: dict[str, Any], kubeconfig: Path, last_version: str) -> None:
    """The plain client call the recorder made, headers and body as it sent them, and the
    resourceVersion its `what` names (0, or the last list's)."""
    version = "0" if "resourceVersion=0" in exchange["what"] else last_version
    request = exchange["request"]
    api_client = client.ApiClient(configuration_for(kubeconfig))
    try:
        headers = {
            key: value.replace("<TOKEN>", kubeconfig_token(kubeconfig))
            for key, value in request["headers"].items()
            if key != "User-Agent"
        }
        api_client.call_api(
            request["method"],
            api_client.configuration.host + request["path"].replace("<RV>", version),
            header_params=headers,
            body=json.loads(decoded(request["body_b64"]) or "null"),
        )
    finally:
        api_client.close()


def kubeconfig_token(kubeconfig: Path) -> str:
    return str(yaml.safe_load(kubeconfig.read_text(encoding="utf-8"))["users"][0]["user"]["token"])


# Comparing.


def normalised(text: str) -> str:
    text = _UUID.sub(lambda found: found[0] if found[0] == KEPT_UID else "<UID>", text)
    text = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:<PORT>", text)
    text = re.sub(r"resourceVersion=\d+", "resourceVersion=<RV>", text)
    return re.sub(r"dial tcp .*", "dial tcp <depends on the address>", text)


def normalised_values(value: Any) -> Any:
    if isinstance(value, str):
        return normalised(value)
    if isinstance(value, dict):
        return {key: normalised_values(item) for key, item in value.items()}
    if isinstance(value, list):
        return [normalised_values(item) for item in value]
    return value


def metadata_keys(metadata: dict[str, Any]) -> list[str]:
    """Which metadata fields an object has, leaving out what kubectl's staging put there."""
    annotations = {
        key: value
        for key, value in (metadata.get("annotations") or {}).items()
        if key != _KUBECTL_ANNOTATION
    }
    keys = set(metadata) - {"managedFields", "annotations"}
    return sorted(keys | ({"annotations"} if annotations else set()))


def shape(status: int, content_type: str | None, body: bytes) -> dict[str, Any]:
    """What of an answer is a server fact (the recordings' README, "Compare the answer")."""
    answer: dict[str, Any] = {"http status": status, "content type": content_type}
    if not body:
        return {**answer, "body": None}
    try:
        document = json.loads(body)
    except ValueError:
        return {**answer, "text": body.decode()}
    kinds = {"kind": document.get("kind"), "apiVersion": document.get("apiVersion")}
    if document.get("kind") == "Status":
        fields = ("status", "reason", "code", "message", "details")
        return {
            **answer,
            **kinds,
            **{key: normalised_values(document.get(key)) for key in fields},
        }
    if document.get("kind") == "APIResourceList":
        names = [resource["name"] for resource in document["resources"]]
        return {**answer, **kinds, "groupVersion": document["groupVersion"], "resources": names}
    if "items" in document:
        names = [item["metadata"]["name"] for item in document["items"]]
        return {**answer, **kinds, "list metadata": sorted(document["metadata"]), "items": names}
    metadata = document["metadata"]
    # A pod's grace period tells a force delete (0, gone) from a graceful one (Terminating).
    grace = (
        {"grace": metadata["deletionGracePeriodSeconds"]} if "deletionTimestamp" in metadata else {}
    )
    return {**answer, **kinds, "metadata": metadata_keys(metadata), **grace}


def recorded_shape(exchange: dict[str, Any]) -> dict[str, Any]:
    response = exchange["response"]
    content_type = next(
        (v for k, v in response["headers"].items() if k.lower() == "content-type"), None
    )
    return shape(response["status"], content_type, decoded(response["body_b64"]))


@pytest.fixture
def recorded() -> list[dict[str, Any]]:
    return load_recordings()


@pytest.mark.parametrize("exchange", cases())
def test_the_stand_in_answers_as_the_recorded_api_server(
    exchange: dict[str, Any], recorded: list[dict[str, Any]], wire: list[Exchange], tmp_path: Path
) -> None:
    fake = FakeKubernetes()
    fake.identities.update(identities())
    fake.start()
    try:
        stage(fake, by_id(recorded), exchange["file"])
        same_file = [earlier for earlier in recorded if earlier["file"] == exchange["file"]]
        earlier = same_file[: same_file.index(exchange)]
        for before in earlier:
            send(before, fake, kubeconfig_for(tmp_path, fake, before), last_list_version(wire))
        version = last_list_version(wire)
        wire.clear()
        send(exchange, fake, kubeconfig_for(tmp_path, fake, exchange), version)
    finally:
        fake.stop()
    sent = the_recorded_request(exchange, wire)
    got = shape(sent.status, sent.header("Content-Type"), sent.body)
    assert got == recorded_shape(exchange), (
        f"{exchange['id']} ({exchange['what']}): the stand-in's answer differs from the "
        f"recorded kube-apiserver's; the stand-in sent {sent.body[:600]!r}"
    )


def last_list_version(wire: list[Exchange]) -> str:
    for exchange in reversed(wire):
        with contextlib.suppress(ValueError, KeyError, TypeError):
            document = json.loads(exchange.body)
            if "items" in document:
                return str(document["metadata"]["resourceVersion"])
    return "0"


def kubeconfig_for(tmp_path: Path, fake: FakeKubernetes, exchange: dict[str, Any]) -> Path:
    return write_kubeconfig(tmp_path / f"{exchange['id']}.kubeconfig", fake.url, token_of(exchange))


def the_recorded_request(exchange: dict[str, Any], wire: list[Exchange]) -> Exchange:
    """The exchange on the wire that the recorded one is: the one request the call made,
    sent as the recording shows it (connect's probe makes several: the one with its path)."""
    request = exchange["request"]
    if not exchange["what"].startswith("connection.connect"):
        assert len(wire) == 1, f"{exchange['id']}: the call sent {[w.path for w in wire]}"
    same = [
        w for w in wire if (w.method, normalised(w.path)) == (request["method"], request["path"])
    ]
    assert same, (
        f"{exchange['id']}: the call sent {[(w.method, w.path) for w in wire]}, the recording "
        f"{request['method']} {request['path']}"
    )
    return same[0]


# What the recordings cannot show (no kubelet, no controller ran on request), through the
# adapter's calls all the same.


def test_a_gracefully_deleted_pod_stays_terminating_until_its_kubelet_finishes(
    cluster: Cluster, fake: FakeKubernetes
) -> None:
    uid = fake.put(PODS, pod("graceful"))["metadata"]["uid"]
    assert cluster.api.delete(ObjectRef(Resource.POD, NS, "graceful", uid))
    terminating = cluster.api.get(Resource.POD, NS, "graceful")
    assert terminating is not None, "a bound pod deleted with grace went at once"
    assert terminating["metadata"]["deletionGracePeriodSeconds"] == 30, terminating
    fake.kubelet_finishes(PODS, "graceful")
    assert cluster.api.get(Resource.POD, NS, "graceful") is None


def test_only_a_terminating_pod_can_be_finished(fake: FakeKubernetes) -> None:
    fake.put(PODS, pod("running"))
    with pytest.raises(AssertionError, match="no Terminating pod running in"):
        fake.kubelet_finishes(PODS, "running")


def sandbox_with_pod(fake: FakeKubernetes, name: str) -> tuple[str, str]:
    """A Sandbox and its pod, both called name: their uids."""
    sandbox = fake.put(SANDBOXES, custom("Sandbox", name))
    pod_uid = fake.put(PODS, pod(name, owners=[owner("Sandbox", sandbox)]))["metadata"]["uid"]
    return sandbox["metadata"]["uid"], pod_uid


def test_a_killed_pod_comes_back_only_when_the_controller_is_on(
    cluster: Cluster, fake: FakeKubernetes
) -> None:
    _, uid = sandbox_with_pod(fake, "plain")
    assert cluster.api.delete(ObjectRef(Resource.POD, NS, "plain", uid), grace_seconds=0)
    assert cluster.api.get(Resource.POD, NS, "plain") is None, "recreated while switched off"
    fake.recreate_deleted_pods = True
    _, uid = sandbox_with_pod(fake, "recreated")
    assert cluster.api.delete(ObjectRef(Resource.POD, NS, "recreated", uid), grace_seconds=0)
    again = cluster.api.get(Resource.POD, NS, "recreated")
    assert again is not None, "agent-sandbox's controller did not recreate the pod"
    assert again["metadata"]["uid"] != uid, again["metadata"]
    assert "deletionTimestamp" not in again["metadata"], again["metadata"]
    # Not scheduled yet: no node, so no log either.
    assert cluster.api.pod_log(NS, "recreated", "main", 40) is None


def test_a_pod_whose_sandbox_is_gone_is_not_recreated(
    cluster: Cluster, fake: FakeKubernetes
) -> None:
    fake.recreate_deleted_pods = True
    _, uid = sandbox_with_pod(fake, "orphan")
    fake.remove(SANDBOXES, "orphan")
    assert cluster.api.delete(ObjectRef(Resource.POD, NS, "orphan", uid), grace_seconds=0)
    assert cluster.api.get(Resource.POD, NS, "orphan") is None


def test_a_delete_cascades_only_when_garbage_collection_is_on(
    cluster: Cluster, fake: FakeKubernetes
) -> None:
    kept, _ = sandbox_with_pod(fake, "kept")
    assert cluster.api.delete(ObjectRef(Resource.SANDBOX, NS, "kept", kept))
    assert fake.get(PODS, "kept") is not None, "the pod followed its owner while GC was off"
    fake.garbage_collection = True
    cascaded, _ = sandbox_with_pod(fake, "cascaded")
    assert cluster.api.delete(ObjectRef(Resource.SANDBOX, NS, "cascaded", cascaded))
    dependent = cluster.api.get(Resource.POD, NS, "cascaded")
    assert dependent is not None and "deletionTimestamp" in dependent["metadata"], (
        f"a bound dependent pod is deleted with its default grace: {dependent}"
    )


def test_the_stand_in_node_serves_the_log_tail(cluster: Cluster, fake: FakeKubernetes) -> None:
    fake.put(PODS, pod("chatty"))
    fake.logs[(NS, "chatty", "main")] = "one\ntwo\nthree"
    assert cluster.api.pod_log(NS, "chatty", "main", 2) == "two\nthree\n"


def test_a_pod_on_a_node_the_api_does_not_know_has_no_log(
    cluster: Cluster, fake: FakeKubernetes
) -> None:
    fake.put(PODS, pod("lost", node="no-such-node"))
    with pytest.raises(KubeError, match=r'answered 404 .*nodes "no-such-node" not found'):
        cluster.api.pod_log(NS, "lost", "main", 40)


def test_a_forward_to_a_pod_without_a_backend_reports_it_on_the_error_channel(
    cluster: Cluster, fake: FakeKubernetes
) -> None:
    fake.put(PODS, pod("silent"))
    forward = cluster.api.open_port_forward(NS, "silent", 8080)
    stream = forward.socket(8080)
    stream.settimeout(5)
    assert stream.recv(10) == b"", "a forward without a backend carried data"
    wait_until(lambda: not forward.connected, "the forward to close")
    assert forward.error(8080) == "pod silent has no backend in the stand-in"
