"""The stand-in API server (fake_api.py) answers the process kubelet's calls as a real
kube-apiserver v1.36.2 did: the exchanges in node-recordings/ (its README says how they were
made) are sent again, in the order they were recorded, through the node's own NodeApi, to a
stand-in staged as the README's "Stage" says, and each answer is compared with the recorded
one as test_recorded_api.py compares them (status, Content-Type, the body's shape); a
watch's answer event by event.

The whole recording is one story (a pod bound early is listed later), so it is replayed once
for the module, and each exchange is a test of its own, named by its recording id.
"""

from __future__ import annotations

import contextlib
import json
import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from kubernetes import client

from onemachine.node.api import ApiError, NodeApi
from tests.kubernetes.conftest import write_kubeconfig
from tests.kubernetes.fake_api import FakeKubernetes
from tests.kubernetes.test_recorded_api import (
    KEPT_UID,
    STAGED_AT,
    Exchange,
    answered,
    captured,
    configuration_for,
    decoded,
    shape,
    the_recorded_request,
    without_server_fields,
)

# the module's fixtures serve all its tests: one process runs them (pytest-xdist)
pytestmark = pytest.mark.xdist_group("recorded-node-api")

RECORDINGS = Path(__file__).with_name("node-recordings")
# The order the recorder made them in (README, "Files").
FILES = ("node.jsonl", "lease.jsonl", "pods.jsonl", "watch.jsonl", "delete-options.jsonl")
NODE = "node-a"
# The pods the recorder created as admin before any call of the node, oldest first.
STAGED_PODS = ("pod-to-bind", "pod-unbound", "pod-on-node", "pod-to-finish")
# Which read gave the Lease each replace sends (the stale one sends a read already replaced).
LEASE_READ = {
    "replace-lease": "read-lease",
    "replace-lease-stale": "read-lease",
    "replace-lease-again": "read-lease-again",
}
_TOO_OLD = re.compile(r"too old resource version: \d+ \(\d+\)")


def load_recordings() -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for name in FILES
        for line in (RECORDINGS / name).read_text(encoding="utf-8").splitlines()
    ]


def ids() -> list[str]:
    return [exchange["id"] for exchange in load_recordings()]


# Staging: what the recorder did as admin between the node's calls, keyed by the exchange it
# came before.


def stage_pods(fake: FakeKubernetes, recorded: dict[str, dict[str, Any]]) -> None:
    listed = {
        item["metadata"]["name"]: item
        for exchange in ("list-pods-on-node", "list-pods-unbound")
        for item in answered(recorded[exchange])["items"]
    }
    for name in STAGED_PODS:
        put_pod(fake, listed[name])


def put_pod(fake: FakeKubernetes, item: dict[str, Any]) -> None:
    pod = without_server_fields(item)
    fake.put(f"/api/v1/namespaces/{pod['metadata']['namespace']}/pods", pod)


def staging(
    fake: FakeKubernetes, recorded: dict[str, dict[str, Any]], admin: client.CoreV1Api
) -> dict[str, Callable[[], None]]:
    watched = answered(recorded["list-before-watch"])["items"]
    return {
        "create-node": lambda: stage_pods(fake, recorded),
        # A user's delete, with the pod's default grace: the pod is Terminating.
        "finish-delete-wrong-uid": lambda: admin.delete_namespaced_pod(
            "pod-to-finish", "agentcube", _preload_content=False
        ),
        "list-before-watch": lambda: put_pod(
            fake, next(i for i in watched if i["metadata"]["name"] == "pod-watched")
        ),
        # Before watch-after-compaction etcd compacted, which the watch cache does not notice:
        # nothing to stage. Then the API server restarted.
        "watch-after-restart": fake.compact,
        "delete-query-grace-and-body": lambda: put_pod(
            fake, not_deleted(answered(recorded["delete-query-grace-and-body"]))
        ),
    }


def not_deleted(pod: dict[str, Any]) -> dict[str, Any]:
    metadata = {
        key: value
        for key, value in pod["metadata"].items()
        if key not in ("deletionTimestamp", "deletionGracePeriodSeconds")
    }
    return {**pod, "metadata": metadata}


# Sending: the NodeApi call of the recorded request.


class Replay:
    """The recorded calls sent to the stand-in one after the other, each one's answers kept."""

    def __init__(self, fake: FakeKubernetes, api_client: client.ApiClient) -> None:
        self.fake, self.api = fake, NodeApi(api_client)
        self.core = client.CoreV1Api(api_client)  # the plain calls
        self.answers: dict[str, Any] = {}  # id -> what NodeApi returned
        self.watch_version = ""  # the resourceVersion of the list a watch starts from

    def send(self, exchange: dict[str, Any]) -> None:
        with contextlib.suppress(ApiError, client.ApiException):  # the wire's business
            self.answers[exchange["id"]] = self.call(exchange)

    def call(self, exchange: dict[str, Any]) -> Any:
        request = exchange["request"]
        parts = urlsplit(request["path"])
        query = {key: values[0] for key, values in parse_qs(parts.query).items()}
        body = json.loads(
            decoded(request["body_b64"]).decode().replace("<TIME>", STAGED_AT) or "null"
        )
        method, path = request["method"], parts.path
        if exchange["what"].startswith("plain client call"):
            return self.plain_call(method, path, query, body)
        api = self.api
        if path == "/api/v1/nodes":
            return api.create_node(body)
        if path.startswith("/api/v1/nodes/"):
            name, _, sub = path.removeprefix("/api/v1/nodes/").partition("/")
            return (
                api.patch_node_status(name, body["status"]) if sub else api.patch_node(name, body)
            )
        if path.startswith("/apis/coordination.k8s.io/"):
            return self.lease_call(exchange["id"], method, body, path.rsplit("/", 1)[-1])
        if path == "/api/v1/pods" and "watch" in query:
            version = "1" if exchange["id"] == "watch-rv-1" else self.watch_version
            watch = api.watch_pods(query["fieldSelector"], version, int(query["timeoutSeconds"]))
            return list(watch)
        if path == "/api/v1/pods":
            pods, version = api.list_pods(query["fieldSelector"])
            if exchange["id"] == "list-before-watch":
                self.watch_version = version
            return pods
        namespace, _, name = path.removeprefix("/api/v1/namespaces/").partition("/pods/")
        name, _, sub = name.partition("/")
        if sub == "binding":
            return api.bind({"metadata": body["metadata"]}, body["target"]["name"])
        if sub == "status":
            return api.patch_pod_status(namespace, name, body["status"])
        assert method == "DELETE", f"{exchange['id']}: no NodeApi call sends {method} {path}"
        return api.finish_delete(namespace, name, self.uid_of(namespace, name, body))

    def plain_call(self, method: str, path: str, query: dict[str, str], body: Any) -> Any:
        """CoreV1Api's delete or read of a pod, with the options the recorder gave it."""
        namespace, _, name = path.removeprefix("/api/v1/namespaces/").partition("/pods/")
        if method == "GET":
            return self.core.read_namespaced_pod(name, namespace, _preload_content=False)
        if body is not None:
            body = {"preconditions": {"uid": self.uid_of(namespace, name, body)}}
        grace = int(query["gracePeriodSeconds"])
        return self.core.delete_namespaced_pod(
            name, namespace, grace_period_seconds=grace, body=body, _preload_content=False
        )

    def lease_call(self, ident: str, method: str, body: Any, name: str) -> Any:
        if method == "GET":
            return self.api.read_lease(name)
        if method == "POST":
            node = self.fake.get("/api/v1/nodes", NODE)
            assert node is not None, "the Node the Lease is owned by is missing"
            body["metadata"]["ownerReferences"][0]["uid"] = node["metadata"]["uid"]
            return self.api.create_lease(body)
        lease = {**self.answers[LEASE_READ[ident]], "spec": body["spec"]}
        return self.api.replace_lease(lease)

    def uid_of(self, namespace: str, name: str, options: dict[str, Any]) -> str:
        """The precondition's uid: the one kept as sent, or the pod's (a new one when gone)."""
        uid = options["preconditions"]["uid"]
        if uid == KEPT_UID:
            return uid
        stored = self.fake.get(f"/api/v1/namespaces/{namespace}/pods", name)
        return stored["metadata"]["uid"] if stored else str(uuid.uuid4())


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Exchange]]:
    """Every recorded exchange's counterpart on the stand-in's wire, by id."""
    recordings = load_recordings()
    recorded = {exchange["id"]: exchange for exchange in recordings}
    fake = FakeKubernetes()
    fake.start()
    kubeconfig = write_kubeconfig(tmp_path_factory.mktemp("node") / "kubeconfig", fake.url)
    api_client = client.ApiClient(configuration_for(kubeconfig))
    replay = Replay(fake, api_client)
    before = staging(fake, recorded, client.CoreV1Api(api_client))
    sent: dict[str, Exchange] = {}
    try:
        with pytest.MonkeyPatch.context() as monkeypatch:
            wire = captured(monkeypatch)
            for exchange in recordings:
                if exchange["id"] in before:
                    before[exchange["id"]]()
                wire.clear()
                replay.send(exchange)
                sent[exchange["id"]] = the_recorded_request(exchange, wire)
        yield sent
    finally:
        api_client.close()
        fake.stop()


# Comparing: a watch event by event, everything else as test_recorded_api.py does.


def watch_shape(status: int, content_type: str | None, body: bytes) -> dict[str, Any]:
    """A watch's answer: its status and Content-Type, then each event's type and the shape of
    its object, with where the pod was bound (a DELETED on leaving a selector carries the pod
    as it was)."""
    events = []
    for line in body.decode().splitlines():
        event = json.loads(line)
        obj = event["object"]
        if obj.get("kind") == "Status":
            obj = {
                **obj,
                "message": _TOO_OLD.sub("too old resource version: <RV> (<RV>)", obj["message"]),
            }
        seen = object_shape(200, None, json.dumps(obj).encode())
        del seen["http status"], seen["content type"]
        node = (obj.get("spec") or {}).get("nodeName")
        events.append({"type": event["type"], **seen, **({"nodeName": node} if node else {})})
    return {"http status": status, "content type": content_type, "events": events}


def object_shape(status: int, content_type: str | None, body: bytes) -> dict[str, Any]:
    """test_recorded_api's shape, and for an object (a Node, Lease or Pod the node wrote)
    also its name and which fields it and its status have: what the server added or kept."""
    answer = shape(status, content_type, body)
    document = json.loads(body) if "metadata" in answer else {}
    if not isinstance(document.get("metadata"), dict) or "name" not in document["metadata"]:
        return answer
    return {
        **answer,
        "name": document["metadata"]["name"],
        "fields": sorted(document),
        "status fields": sorted(document.get("status") or {}),
    }


def answer_shape(path: str, status: int, content_type: str | None, body: bytes) -> Any:
    """The shape of the answer to a request of this path: a watch's or an object's."""
    if "watch=true" in path:
        return watch_shape(status, content_type, body)
    return object_shape(status, content_type, body)


@pytest.fixture(scope="module")
def recorded() -> dict[str, dict[str, Any]]:
    return {exchange["id"]: exchange for exchange in load_recordings()}


@pytest.mark.parametrize("ident", ids())
def test_the_stand_in_answers_the_node_as_the_recorded_api_server(
    ident: str, recorded: dict[str, dict[str, Any]], replayed: dict[str, Exchange]
) -> None:
    exchange, sent = recorded[ident], replayed[ident]
    path, response = exchange["request"]["path"], exchange["response"]
    got = answer_shape(path, sent.status, sent.header("Content-Type"), sent.body)
    content_type = response["headers"].get("Content-Type")
    expected = answer_shape(path, response["status"], content_type, decoded(response["body_b64"]))
    assert got == expected, (
        f"{ident} ({exchange['what']}): the stand-in's answer differs from the recorded "
        f"kube-apiserver's; the stand-in sent {sent.body[:600]!r}"
    )


def test_every_recording_file_is_replayed() -> None:
    assert sorted(FILES) == sorted(path.name for path in RECORDINGS.glob("*.jsonl"))
