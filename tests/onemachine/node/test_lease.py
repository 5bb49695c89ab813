"""The node's Lease in kube-node-lease and its Node's heartbeat, against the stand-in API
server: created at start, owned by the Node, renewed every heartbeat; taken over when it
exists, and a renewal that loses a race is retried at the next one."""

from __future__ import annotations

from pathlib import Path

import pytest

from onemachine.node.api import LEASE_NAMESPACE
from onemachine.node.lease import LEASE_DURATION_SECONDS
from onemachine.node.pod_runtime import PodRuntime
from tests.kubernetes.fake_api import FakeKubernetes
from tests.onemachine.node.agent_fixtures import NODE, cluster
from tests.waiting import satisfying, wait_until

LEASES = f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases"


def renewals(fake: FakeKubernetes, count: int) -> list[str]:
    """The Lease's renewTimes, once it has taken `count` of them (one per heartbeat)."""
    seen: list[str] = []

    def renewed() -> list[str]:
        with fake._lock:
            renew_time = fake.get(LEASES, NODE)["spec"]["renewTime"]
        if renew_time not in seen:
            seen.append(renew_time)
        return list(seen)

    return wait_until(
        renewed,
        f"{count} renewals of the Lease",
        matching=satisfying(lambda times: len(times) >= count, f"{count} renewTimes"),
    )


def heartbeat(fake: FakeKubernetes) -> str:
    with fake._lock:
        node = fake.get("/api/v1/nodes", NODE)
        return next(c for c in node["status"]["conditions"] if c["type"] == "Ready")[
            "lastHeartbeatTime"
        ]


def test_the_lease_is_created_owned_by_the_node_and_renewed(
    tmp_path: Path, runtime: PodRuntime
) -> None:
    with cluster(tmp_path, runtime) as running:
        lease = running.fake.get(LEASES, NODE)
        node = running.fake.get("/api/v1/nodes", NODE)
        assert lease["spec"]["holderIdentity"] == NODE
        assert lease["spec"]["leaseDurationSeconds"] == LEASE_DURATION_SECONDS
        assert lease["metadata"]["ownerReferences"] == [
            {"apiVersion": "v1", "kind": "Node", "name": NODE, "uid": node["metadata"]["uid"]}
        ]
        renewals(running.fake, 3)  # heartbeat 0.2 s in these tests
        renewed = [
            r for r in running.fake.requests if r.method == "PUT" and r.path.startswith(LEASES)
        ]
        assert renewed, "a renewal updates the Lease it read"


def test_the_node_status_heartbeat_is_kept_fresh(tmp_path: Path, runtime: PodRuntime) -> None:
    with cluster(tmp_path, runtime) as running:
        first = heartbeat(running.fake)
        wait_until(lambda: heartbeat(running.fake) > first, "a later heartbeat")


def test_an_existing_lease_and_node_are_taken_over(tmp_path: Path, runtime: PodRuntime) -> None:
    fake = FakeKubernetes()
    fake.put("/api/v1/nodes", {"metadata": {"name": NODE, "labels": {"old": "label"}}})
    fake.put(LEASES, {"metadata": {"name": NODE}, "spec": {"holderIdentity": "someone-else"}})
    with cluster(tmp_path, runtime, fake=fake) as running:
        assert running.fake.get(LEASES, NODE)["spec"]["holderIdentity"] == NODE
        node = running.fake.get("/api/v1/nodes", NODE)
        assert node["metadata"]["labels"]["kubernetes.io/hostname"] == NODE
        assert any(c["type"] == "Ready" for c in node["status"]["conditions"])


def test_a_renewal_that_loses_a_race_is_retried(
    tmp_path: Path, runtime: PodRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    fake = FakeKubernetes()

    def someone_writes(fake: FakeKubernetes, _request: object) -> None:
        lease = fake.get(LEASES, NODE)
        if lease is not None and lease["spec"]["holderIdentity"] == NODE:
            fake.put(LEASES, {**lease, "spec": {**lease["spec"], "renewTime": "raced"}})

    def updates() -> int:
        return sum(r.method == "PUT" and r.path == f"{LEASES}/{NODE}" for r in fake.requests)

    with cluster(tmp_path, runtime, fake=fake) as running:
        before = updates()
        fake.after("GET", f"{LEASES}/{NODE}", someone_writes)  # between our read and update
        wait_until(lambda: updates() > before, "a renewal that met the other writer's change")
        fake._hooks.clear()
        renewals(running.fake, 3)
