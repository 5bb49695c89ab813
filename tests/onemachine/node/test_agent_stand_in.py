"""The stand-in API server's parts the node uses, through the node's own client calls
(onemachine/node/api.py), as kube-apiserver v1.36.2 answers them: watches (resourceVersion,
field selectors, 410 Expired after a compaction, timeoutSeconds), pods/binding, the status
subresource, updates with a stale resourceVersion, lists across namespaces.

The same calls were sent by hand to a real kube-apiserver v1.36.2 (the /opt/upstream build,
in `python -m onemachine cluster`'s namespace) on 1 December 2026, and answered as asserted
here: binding 201 `Status` Success code 201 and PodScheduled True; a second binding and one of
a pod being deleted 409 Conflict with these messages; a name mismatch 400; a watch of
`spec.nodeName=` seeing the bound pod as DELETED; a merge patch of pods/status removing a
key set to null; a stale Lease update 409 Conflict "the object has been modified ..."; a
Node created with its status; `gracePeriodSeconds=0` in the query deleting at once. The 410
message is the watch cache's (apiserver pkg/storage/cacher/watch_cache.go, "too old
resource version: %d (%d)", NewResourceExpired); no compaction was forced by hand."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import config

from onemachine.node.api import LEASE_NAMESPACE, ApiError, NodeApi
from tests.kubernetes.fake_api import FakeKubernetes
from tests.onemachine.node.agent_fixtures import NS, PODS, node_kubeconfig

LEASES = f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases"


@pytest.fixture
def api(tmp_path: Path, fake: FakeKubernetes) -> Iterator[NodeApi]:
    kubeconfig = node_kubeconfig(tmp_path / "kubeconfig", fake.url)
    node_api = NodeApi(config.new_client_from_config(config_file=str(kubeconfig)))
    yield node_api
    node_api.close()


def pod(name: str, namespace: str = NS, **spec: object) -> dict:
    return {"metadata": {"name": name, "namespace": namespace}, "spec": {"containers": [], **spec}}


def events(api: NodeApi, selector: str, version: str, until: int) -> list[tuple[str, str]]:
    """(type, name) of a watch's events, read until `until` of them arrived."""
    seen: list[tuple[str, str]] = []
    watch = api.watch_pods(selector, version, 10)
    for event in watch:
        seen.append((event["type"], event["object"].get("metadata", {}).get("name", "")))
        if len(seen) >= until:
            watch.close()
            break
    return seen


def test_a_watch_from_a_lists_version_sees_each_later_write_through_its_selector(
    api: NodeApi, fake: FakeKubernetes
) -> None:
    fake.put(PODS, pod("before"))
    pods, version = api.list_pods("spec.nodeName=")
    assert [p["metadata"]["name"] for p in pods] == ["before"]
    assert pods[0]["kind"] == "Pod"

    def writes() -> None:
        fake.put(PODS, pod("after"))
        api.bind(fake.get(PODS, "before"), "n1")  # leaves the selector: DELETED
        fake.put(PODS, pod("bound", nodeName="n1"))  # never in it: nothing

    unbound: list[tuple[str, str]] = []
    reader = threading.Thread(
        target=lambda: unbound.extend(events(api, "spec.nodeName=", version, 2))
    )
    reader.start()
    writes()
    reader.join(10)
    assert unbound == [("ADDED", "after"), ("DELETED", "before")]
    assert events(api, "spec.nodeName=n1", version, 2) == [("ADDED", "before"), ("ADDED", "bound")]


def test_a_watch_without_a_version_starts_with_the_current_objects(
    api: NodeApi, fake: FakeKubernetes
) -> None:
    fake.put(PODS, pod("one"))
    fake.put("/api/v1/namespaces/other/pods", pod("two", "other"))
    assert events(api, "", "", 2) == [("ADDED", "one"), ("ADDED", "two")]


def test_a_watch_from_before_a_compaction_is_answered_410_expired(
    api: NodeApi, fake: FakeKubernetes
) -> None:
    _, version = api.list_pods("")
    fake.put(PODS, pod("later"))
    fake.compact()
    watch = api.watch_pods("", version, 10)
    [event] = list(watch)
    assert event["type"] == "ERROR"
    status = event["object"]
    assert (status["code"], status["reason"]) == (410, "Expired")
    assert status["message"].startswith(f"too old resource version: {version} (")


def test_a_watch_ends_after_its_timeout(api: NodeApi, fake: FakeKubernetes) -> None:
    _, version = api.list_pods("")
    assert list(api.watch_pods("", version, 1)) == []


def test_lists_span_namespaces_in_key_order(api: NodeApi, fake: FakeKubernetes) -> None:
    fake.put("/api/v1/namespaces/zeta/pods", pod("a", "zeta"))
    fake.put("/api/v1/namespaces/alpha/pods", pod("b", "alpha"))
    pods, _ = api.list_pods("")
    assert [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods] == [
        ("alpha", "b"),
        ("zeta", "a"),
    ]


def test_a_binding_sets_the_node_and_pod_scheduled_once(api: NodeApi, fake: FakeKubernetes) -> None:
    fake.put(PODS, pod("p"))
    api.bind(fake.get(PODS, "p"), "n1")
    bound = fake.get(PODS, "p")
    assert bound["spec"]["nodeName"] == "n1"
    assert bound["status"]["conditions"][0]["type"] == "PodScheduled"
    binding = next(r for r in fake.requests if r.path.endswith("/binding"))
    assert binding.body["target"] == {"apiVersion": "v1", "kind": "Node", "name": "n1"}
    with pytest.raises(ApiError) as again:
        api.bind(bound, "n2")
    assert (again.value.status, again.value.reason) == (409, "Conflict")
    assert again.value.message == (
        'Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "n1"'
    )


def test_a_pod_being_deleted_is_not_bound(api: NodeApi, fake: FakeKubernetes) -> None:
    fake.put(PODS, {**pod("p"), "metadata": {**pod("p")["metadata"], "deletionTimestamp": "x"}})
    with pytest.raises(ApiError, match="pod p is being deleted, cannot be assigned to a host"):
        api.bind(fake.get(PODS, "p"), "n1")


def test_the_status_subresource_takes_the_status_alone(api: NodeApi, fake: FakeKubernetes) -> None:
    fake.put(PODS, {**pod("p"), "status": {"phase": "Pending", "message": "old"}})
    api.patch_pod_status(NS, "p", {"phase": "Running", "message": None})
    stored = fake.get(PODS, "p")
    assert stored["status"] == {"phase": "Running"}
    assert stored["spec"] == pod("p")["spec"]
    patch = next(r for r in fake.requests if r.path == f"{PODS}/p/status")
    assert patch.headers["Content-Type"] == "application/merge-patch+json"


def test_an_update_with_a_stale_resource_version_is_a_conflict(
    api: NodeApi, fake: FakeKubernetes
) -> None:
    fake.put(LEASES, {"metadata": {"name": "n1"}, "spec": {"holderIdentity": "n1"}})
    lease = api.read_lease("n1")
    fresh = api.replace_lease(
        {**lease, "spec": {"holderIdentity": "n1", "renewTime": "2026-12-01T10:00:00.000000Z"}}
    )
    assert fresh["metadata"]["uid"] == lease["metadata"]["uid"]
    with pytest.raises(ApiError) as stale:
        api.replace_lease(lease)
    assert stale.value.status == 409
    assert stale.value.message.endswith(
        "the object has been modified; please apply your changes to the latest version and "
        "try again"
    )
    assert stale.value.message.startswith("Operation cannot be fulfilled on leases.coordination")


def test_a_node_update_keeps_its_status(api: NodeApi, fake: FakeKubernetes) -> None:
    api.create_node({"metadata": {"name": "n1"}, "status": {"capacity": {"pods": "10"}}})
    api.patch_node("n1", {"metadata": {"labels": {"a": "b"}}})
    api.patch_node_status("n1", {"allocatable": {"pods": "9"}})
    stored = fake.get("/api/v1/nodes", "n1")
    assert stored["metadata"]["labels"] == {"a": "b"}
    assert stored["status"] == {"capacity": {"pods": "10"}, "allocatable": {"pods": "9"}}
    with pytest.raises(ApiError, match='nodes "n1" already exists'):
        api.create_node({"metadata": {"name": "n1"}})
