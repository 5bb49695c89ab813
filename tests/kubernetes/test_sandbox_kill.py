"""Killing a session's sandbox on a cluster, against the stand-in's model of the kubelet and of
agent-sandbox's controller. The pod is deleted with a one-second grace, so it stays
Terminating until its kubelet has stopped its containers (`kubelet_finishes`); a force
delete would let the kill end while the killed process may still answer (issue 22's review).
Once finished, agent-sandbox recreates the pod under the same name with a new uid, and the
Sandbox keeps its uid until the WorkloadManager's collector runs (issue 22: the kill
scenario waited for every object of the session and timed out). The kill waits for the
killed pod's uid alone."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from acceptance.core.settings import load_settings
from acceptance.domain.resilience import Resilience
from acceptance.platforms.kubernetes.cluster import KILL_GRACE_SECONDS, Cluster
from tests.kubernetes.conftest import PODS, SANDBOXES, SESSION_LABEL, custom, owner, pod
from tests.kubernetes.fake_api import FakeKubernetes, Recorded
from tests.waiting import wait_until

SESSION = "5b1f0c2e-9a4d-4e21-b7c3-0d8e6f4a2c19"
NAME = "python-interpreter-k1"
KILLED_POD = f"{PODS}/{NAME}"


def kill(cluster: Cluster, **userdata: str) -> None:
    """The step that kills the session's sandbox, as a scenario runs it."""
    settings = load_settings({"poll_interval": "20ms", **userdata}, {})
    platform = cluster
    world = SimpleNamespace(session=SimpleNamespace(session_id=SESSION))
    Resilience(world, settings, platform, None).kill_sandbox()  # type: ignore[arg-type]


@pytest.fixture
def serving(fake: FakeKubernetes) -> tuple[dict, dict]:
    """The session's Sandbox and the pod agent-sandbox made for it, both labelled."""
    labels = {SESSION_LABEL: SESSION}
    sandbox = fake.put(SANDBOXES, custom("Sandbox", NAME, labels=labels))
    return sandbox, fake.put(PODS, pod(NAME, labels=labels, owners=[owner("Sandbox", sandbox)]))


def looks_since_the_delete(fake: FakeKubernetes) -> int:
    """How often the killed pod was read after its delete."""
    lines = fake.lines()
    deleted = lines.index(f"DELETE {KILLED_POD}") if f"DELETE {KILLED_POD}" in lines else None
    return 0 if deleted is None else lines[deleted:].count(f"GET {KILLED_POD}")


def test_the_kill_ends_only_when_the_kubelet_has_stopped_the_killed_pod(
    cluster: Cluster, fake: FakeKubernetes, serving: tuple[dict, dict]
) -> None:
    _, killed = serving
    ended = threading.Event()
    failures: list[BaseException] = []

    def run_the_kill() -> None:
        try:
            kill(cluster, sandbox_gone_timeout="10s")
        except BaseException as failure:  # handed to the test's thread below
            failures.append(failure)
        finally:
            ended.set()

    killing = threading.Thread(target=run_the_kill, daemon=True)
    killing.start()
    try:
        wait_until(
            lambda: looks_since_the_delete(fake) >= 3 or ended.is_set(),
            f"the kill to look at its pod three times: {fake.lines()}",
            poll=0.01,
        )
        assert not ended.is_set(), (
            "the kill must wait while its pod is Terminating; it ended after "
            f"{fake.lines('DELETE')} with the pod {fake.get(PODS, NAME)}, raising {failures}"
        )
        terminating = fake.get(PODS, NAME)
        assert (
            terminating is not None
            and terminating["metadata"]["uid"] == (killed["metadata"]["uid"])
        ), terminating
        fake.kubelet_finishes(PODS, NAME)
        assert ended.wait(5), "the kill went on waiting after the kubelet finished its pod"
    finally:
        killing.join(15)
    assert failures == []


def test_the_kill_waits_for_the_killed_pod_not_the_sandbox_agent_sandbox_keeps(
    cluster: Cluster, fake: FakeKubernetes, serving: tuple[dict, dict]
) -> None:
    sandbox, killed = serving
    fake.recreate_deleted_pods = True

    def kubelet_stops_it(fake: FakeKubernetes, request: Recorded) -> None:
        fake.kubelet_finishes(PODS, NAME)

    fake.after("DELETE", KILLED_POD, kubelet_stops_it)
    kill(cluster, sandbox_gone_timeout="2s")
    [delete] = [r for r in fake.requests if r.method == "DELETE"]
    assert delete.line == f"DELETE {KILLED_POD}"
    assert delete.body["gracePeriodSeconds"] == KILL_GRACE_SECONDS
    assert delete.body["preconditions"] == {"uid": killed["metadata"]["uid"]}
    recreated = fake.get(PODS, NAME)
    assert recreated is not None, "the stand-in's agent-sandbox recreates the pod"
    assert recreated["metadata"]["uid"] != killed["metadata"]["uid"]
    assert fake.get(SANDBOXES, NAME)["metadata"]["uid"] == sandbox["metadata"]["uid"]


def test_a_killed_pod_its_kubelet_never_finishes_fails_the_kill_naming_the_timeout(
    cluster: Cluster, fake: FakeKubernetes, serving: tuple[dict, dict]
) -> None:
    """A pod whose node never reports its containers stopped (a node lost, a finalizer)
    stays Terminating under its own uid: not dead yet."""
    with pytest.raises(AssertionError) as failure:
        kill(cluster, sandbox_gone_timeout="200ms")
    assert f"the killed sandbox {NAME} (pod {NAME}) gone (sandbox_gone_timeout)" in str(
        failure.value
    )
    assert "deletionTimestamp" in fake.get(PODS, NAME)["metadata"]
