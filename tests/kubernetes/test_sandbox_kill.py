"""Killing a session's sandbox on a cluster, against the stand-in's model of agent-sandbox's
controller: a force-deleted pod is recreated under the same name with a new uid within
seconds, and the Sandbox keeps its uid until the WorkloadManager's collector runs (issue 22:
the kill scenario waited for every object of the session and timed out). The kill waits for
the killed pod's uid alone."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from acceptance.core.settings import load_settings
from acceptance.domain.resilience import Resilience
from acceptance.platforms.kubernetes.cluster import Cluster
from acceptance.platforms.kubernetes.platform import KubernetesPlatform
from tests.kubernetes.conftest import PODS, SANDBOXES, SESSION_LABEL, custom, owner, pod
from tests.kubernetes.fake_api import FakeKubernetes, Recorded

SESSION = "5b1f0c2e-9a4d-4e21-b7c3-0d8e6f4a2c19"
NAME = "python-interpreter-k1"


def kill(cluster: Cluster, **userdata: str) -> None:
    """The step that kills the session's sandbox, as a scenario runs it."""
    settings = load_settings({"poll_interval": "20ms", **userdata}, {})
    platform = KubernetesPlatform(None, "http://unused", cluster)  # type: ignore[arg-type]
    world = SimpleNamespace(
        settings=settings, platform=platform, session=SimpleNamespace(session_id=SESSION)
    )
    Resilience(world).kill_sandbox()  # type: ignore[arg-type]


@pytest.fixture
def serving(fake: FakeKubernetes) -> tuple[dict, dict]:
    """The session's Sandbox and the pod agent-sandbox made for it, both labelled."""
    labels = {SESSION_LABEL: SESSION}
    sandbox = fake.put(SANDBOXES, custom("Sandbox", NAME, labels=labels))
    return sandbox, fake.put(PODS, pod(NAME, labels=labels, owners=[owner("Sandbox", sandbox)]))


def test_the_kill_waits_for_the_killed_pod_not_the_sandbox_agent_sandbox_keeps(
    cluster: Cluster, fake: FakeKubernetes, serving: tuple[dict, dict]
) -> None:
    sandbox, killed = serving
    fake.recreate_deleted_pods = True
    kill(cluster, sandbox_gone_timeout="2s")
    [delete] = [r for r in fake.requests if r.method == "DELETE"]
    assert delete.line == f"DELETE {PODS}/{NAME}"
    assert delete.body["gracePeriodSeconds"] == 0
    assert delete.body["preconditions"] == {"uid": killed["metadata"]["uid"]}
    recreated = fake.get(PODS, NAME)
    assert recreated is not None, "the stand-in's agent-sandbox recreates the pod"
    assert recreated["metadata"]["uid"] != killed["metadata"]["uid"]
    assert fake.get(SANDBOXES, NAME)["metadata"]["uid"] == sandbox["metadata"]["uid"]


def test_a_killed_pod_that_stays_fails_the_kill_naming_the_timeout(
    cluster: Cluster, fake: FakeKubernetes, serving: tuple[dict, dict]
) -> None:
    """A pod a finalizer holds stays, Terminating, under its own uid: not dead yet."""
    _, killed = serving

    def held_by_a_finalizer(fake: FakeKubernetes, request: Recorded) -> None:
        fake.put(
            PODS,
            {
                **killed,
                "metadata": {**killed["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"},
            },
        )

    fake.after("DELETE", f"{PODS}/{NAME}", held_by_a_finalizer)
    with pytest.raises(AssertionError) as failure:
        kill(cluster, sandbox_gone_timeout="200ms")
    assert f"the killed sandbox {NAME} (pod {NAME}) gone (sandbox_gone_timeout)" in str(
        failure.value
    )
