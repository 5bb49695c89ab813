"""Observation through the platform: a session's sandbox by label or by owner references,
its end, and a warm pool before and after a claim."""

from __future__ import annotations

import pytest

from acceptance.core.runtimes import Runtime, RuntimeKind
from acceptance.platforms.base import (
    ROUTER_RESTART,
    RUNTIME_ADMIN,
    SANDBOX_KILL,
    SANDBOX_OBSERVATION,
    Sandbox,
)
from acceptance.platforms.kubernetes.api import KubeError, Resource
from acceptance.platforms.kubernetes.cluster import KILL_GRACE_SECONDS, Cluster, KubernetesSandbox
from tests.kubernetes.conftest import (
    CODE_INTERPRETERS,
    NS,
    PODS,
    SANDBOX_CLAIMS,
    SANDBOXES,
    SESSION_LABEL,
    custom,
    owner,
    pod,
)
from tests.kubernetes.fake_api import FakeKubernetes

SESSION = "0b8f3c8e-6a52-4d8e-9a43-2f1f0c3e5d11"
BY_LABEL = f"labelSelector={SESSION_LABEL}={SESSION}"
WARM = Runtime(RuntimeKind.CODE_INTERPRETER, NS, "python-interpreter-warm")
POOL_OWNER = [
    {
        "apiVersion": "extensions.agents.x-k8s.io/v1alpha1",
        "kind": "SandboxWarmPool",
        "name": WARM.name,
        "uid": "pool-uid",
    }
]


@pytest.fixture
def platform(cluster: Cluster) -> Cluster:
    # The run's Cluster is each scenario's platform: it uses no HTTP transport of its own.
    return cluster


def plain_sandbox(fake: FakeKubernetes) -> tuple[dict, dict]:
    """What the WorkloadManager makes for an AgentRuntime session: a Sandbox and its pod."""
    labels = {SESSION_LABEL: SESSION}
    sandbox = fake.put(SANDBOXES, custom("Sandbox", "echo-agent-x7k2", labels=labels))
    return sandbox, fake.put(
        PODS, pod("echo-agent-x7k2", labels=labels, owners=[owner("Sandbox", sandbox)])
    )


def claimed_warm_sandbox(fake: FakeKubernetes) -> tuple[dict, dict, dict]:
    """A warm-pool sandbox after a claim: only the SandboxClaim carries the session label."""
    claim = fake.put(
        SANDBOX_CLAIMS,
        custom(
            "SandboxClaim",
            "python-interpreter-warm-abcd1234",
            labels={SESSION_LABEL: SESSION},
            ownerReferences=[{"kind": "CodeInterpreter", "name": WARM.name, "uid": "ci"}],
        ),
    )
    sandbox = fake.put(
        SANDBOXES, custom("Sandbox", "pool-a", ownerReferences=[owner("SandboxClaim", claim)])
    )
    return claim, sandbox, fake.put(PODS, pod("pool-a", owners=[owner("Sandbox", sandbox)]))


def test_offers_the_capabilities_a_cluster_gives() -> None:
    assert Cluster.capabilities == {
        RUNTIME_ADMIN,
        SANDBOX_OBSERVATION,
        SANDBOX_KILL,
        ROUTER_RESTART,
    }


def test_finds_a_sandbox_by_the_session_label(platform: Cluster, fake: FakeKubernetes) -> None:
    _, served_by = plain_sandbox(fake)
    found = platform.sandbox_of(SESSION)
    assert isinstance(found, KubernetesSandbox)
    assert found.sandbox_id == "echo-agent-x7k2"
    assert [ref.resource for ref in found.objects] == [Resource.SANDBOX, Resource.POD]
    assert found.pod is not None and found.pod.uid == served_by["metadata"]["uid"]
    assert fake.lines() == [
        f"GET {SANDBOX_CLAIMS}?{BY_LABEL}",
        f"GET {SANDBOXES}?{BY_LABEL}",
        f"GET {PODS}?{BY_LABEL}",
    ]


def test_finds_a_warm_pool_sandbox_through_owner_references(
    platform: Cluster, fake: FakeKubernetes
) -> None:
    claim, sandbox, served_by = claimed_warm_sandbox(fake)
    other_claim = fake.put(SANDBOX_CLAIMS, custom("SandboxClaim", "other"))
    decoy = fake.put(
        SANDBOXES, custom("Sandbox", "pool-b", ownerReferences=[owner("SandboxClaim", other_claim)])
    )
    fake.put(PODS, pod("pool-b", owners=[owner("Sandbox", decoy)]))
    found = platform.sandbox_of(SESSION)
    assert found is not None
    assert found.sandbox_id == "pool-a"
    assert [(ref.resource, ref.uid) for ref in found.objects] == [
        (Resource.SANDBOX_CLAIM, claim["metadata"]["uid"]),
        (Resource.SANDBOX, sandbox["metadata"]["uid"]),
        (Resource.POD, served_by["metadata"]["uid"]),
    ]
    assert fake.lines() == [
        f"GET {SANDBOX_CLAIMS}?{BY_LABEL}",
        f"GET {SANDBOXES}?{BY_LABEL}",
        f"GET {SANDBOXES}",
        f"GET {PODS}?{BY_LABEL}",
        f"GET {PODS}",
    ]


def test_no_sandbox_for_an_unknown_session(platform: Cluster) -> None:
    assert platform.sandbox_of(SESSION) is None


def test_sandboxes_of_several_sessions_leave_out_those_without_one(
    platform: Cluster, fake: FakeKubernetes
) -> None:
    plain_sandbox(fake)
    found = platform.sandboxes_of([SESSION, "no-such-session"])
    assert list(found) == [SESSION]
    assert found[SESSION].sandbox_id == "echo-agent-x7k2"


def test_a_sandbox_being_deleted_no_longer_serves(platform: Cluster, fake: FakeKubernetes) -> None:
    sandbox, _ = plain_sandbox(fake)
    sandbox["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert platform.sandbox_of(SESSION) is None


def test_running_until_pod_sandbox_and_claim_are_all_gone(
    platform: Cluster, fake: FakeKubernetes
) -> None:
    claimed_warm_sandbox(fake)
    found = platform.sandbox_of(SESSION)
    assert found is not None
    fake.remove(SANDBOX_CLAIMS, "python-interpreter-warm-abcd1234")
    fake.get(PODS, "pool-a")["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert platform.sandbox_of(SESSION) is None
    assert platform.is_running(found)  # the pod still terminates
    fake.remove(PODS, "pool-a")
    assert platform.is_running(found)  # the Sandbox lingers
    fake.requests.clear()
    fake.remove(SANDBOXES, "pool-a")
    assert not platform.is_running(found)
    assert fake.lines() == [
        f"GET {SANDBOX_CLAIMS}/python-interpreter-warm-abcd1234",
        f"GET {SANDBOXES}/pool-a",
        f"GET {PODS}/pool-a",
    ]


def test_a_new_object_under_the_old_name_is_not_the_sandbox(
    platform: Cluster, fake: FakeKubernetes
) -> None:
    plain_sandbox(fake)
    found = platform.sandbox_of(SESSION)
    assert found is not None
    fake.remove(SANDBOXES, "echo-agent-x7k2")
    fake.remove(PODS, "echo-agent-x7k2")
    fake.put(PODS, pod("echo-agent-x7k2"))
    assert not platform.is_running(found)


def test_only_sandboxes_it_observed(platform: Cluster) -> None:
    with pytest.raises(TypeError, match="was not observed on this cluster"):
        platform.is_running(Sandbox(sandbox_id="sb", pid=42))


def test_the_warm_pool_before_a_claim_holds_the_claimed_sandbox_and_refills(
    platform: Cluster, fake: FakeKubernetes
) -> None:
    fake.put(CODE_INTERPRETERS, custom("CodeInterpreter", WARM.name))["spec"] = {"warmPoolSize": 2}
    sandboxes = [
        fake.put(SANDBOXES, custom("Sandbox", name, ownerReferences=POOL_OWNER))
        for name in ("pool-a", "pool-b")
    ]
    for sandbox in sandboxes:
        fake.put(
            PODS, pod(f"{sandbox['metadata']['name']}-pod", owners=[owner("Sandbox", sandbox)])
        )
    fake.put(PODS, pod("unrelated"))
    before = platform.warm_sandboxes(WARM)
    assert {s.sandbox_id for s in before} == {"pool-a", "pool-b"}
    assert all(isinstance(s, KubernetesSandbox) and s.pod for s in before)
    assert platform.warm_pool_size(WARM) == 2

    # The claim adopts pool-a; the pool starts pool-c (and a legacy pool owns its pod directly).
    claim = fake.put(
        SANDBOX_CLAIMS, custom("SandboxClaim", "claim", labels={SESSION_LABEL: SESSION})
    )
    sandboxes[0]["metadata"]["ownerReferences"] = [owner("SandboxClaim", claim)]
    fake.put(PODS, pod("pool-c", owners=POOL_OWNER))
    fake.put(PODS, pod("pool-d", owners=POOL_OWNER, deleting=True))
    claimed = platform.sandbox_of(SESSION)
    assert claimed is not None
    assert claimed.sandbox_id == "pool-a"
    assert claimed.pod in {s.pod for s in before if isinstance(s, KubernetesSandbox)}
    assert {s.sandbox_id for s in platform.warm_sandboxes(WARM)} == {"pool-b", "pool-c"}


def test_the_sessions_held_are_each_counted_once_by_their_label(
    platform: Cluster, fake: FakeKubernetes
) -> None:
    """For the crowded collector's note: a session is a labelled SandboxClaim or Sandbox;
    pods, a waiting pool's Sandboxes, objects being deleted and other namespaces are not."""
    assert platform.session_count() == 0
    cold = fake.put(SANDBOXES, custom("Sandbox", "echo-agent-a", labels={SESSION_LABEL: "s-1"}))
    fake.put(
        PODS, pod("echo-agent-a", labels={SESSION_LABEL: "s-1"}, owners=[owner("Sandbox", cold)])
    )
    for resource, kind in ((SANDBOX_CLAIMS, "SandboxClaim"), (SANDBOXES, "Sandbox")):
        fake.put(resource, custom(kind, "python-interpreter-b", labels={SESSION_LABEL: "s-2"}))
    claim = fake.put(
        SANDBOX_CLAIMS, custom("SandboxClaim", "warm-claim", labels={SESSION_LABEL: "s-3"})
    )
    fake.put(SANDBOXES, custom("Sandbox", "pool-a", ownerReferences=[owner("SandboxClaim", claim)]))
    fake.put(SANDBOXES, custom("Sandbox", "pool-b", ownerReferences=POOL_OWNER))
    fake.put(
        SANDBOXES,
        custom(
            "Sandbox",
            "ended",
            labels={SESSION_LABEL: "s-4"},
            deletionTimestamp="2026-01-01T00:00:00Z",
        ),
    )
    elsewhere = SANDBOXES.replace(f"/namespaces/{NS}/", "/namespaces/neighbours/")
    fake.put(
        elsewhere,
        custom("Sandbox", "theirs", namespace="neighbours", labels={SESSION_LABEL: "s-5"}),
    )
    assert platform.session_count() == 3


def test_a_warm_pool_pod_still_starting_is_not_waiting_yet(
    platform: Cluster, fake: FakeKubernetes
) -> None:
    for name, ready in (("pool-a", True), ("pool-b", False)):
        sandbox = fake.put(SANDBOXES, custom("Sandbox", name, ownerReferences=POOL_OWNER))
        fake.put(PODS, pod(f"{name}-pod", owners=[owner("Sandbox", sandbox)], ready=ready))
    assert {s.sandbox_id for s in platform.warm_sandboxes(WARM)} == {"pool-a"}
    fake.put(PODS, pod("pool-b-pod", owners=[owner("Sandbox", fake.get(SANDBOXES, "pool-b"))]))
    assert {s.sandbox_id for s in platform.warm_sandboxes(WARM)} == {"pool-a", "pool-b"}


def test_warm_pool_size_of_runtimes_without_a_pool(platform: Cluster, fake: FakeKubernetes) -> None:
    assert platform.warm_pool_size(Runtime(RuntimeKind.AGENT_RUNTIME, NS, "echo-agent")) == 0
    fake.put(CODE_INTERPRETERS, custom("CodeInterpreter", "python-interpreter"))
    plain = Runtime(RuntimeKind.CODE_INTERPRETER, NS, "python-interpreter")
    assert platform.warm_pool_size(plain) == 0
    with pytest.raises(AssertionError, match="does not exist"):
        platform.warm_pool_size(WARM)


def test_a_forbidden_list_fails_the_step_with_the_apis_words(
    platform: Cluster, fake: FakeKubernetes
) -> None:
    fake.fail("GET", SANDBOX_CLAIMS, 403, 'sandboxclaims is forbidden: User "dev" cannot list')
    with pytest.raises(KubeError) as raised:
        platform.sandbox_of(SESSION)
    assert isinstance(raised.value, AssertionError)
    assert str(raised.value) == (
        "the Kubernetes API answered 403 to list sandboxclaims.extensions.agents.x-k8s.io in "
        f"agentcube with labels {SESSION_LABEL}={SESSION}: sandboxclaims is forbidden: "
        'User "dev" cannot list'
    )


def test_a_missing_sandbox_api_is_a_404_not_an_empty_answer(
    platform: Cluster, fake: FakeKubernetes
) -> None:
    fake.fail("GET", SANDBOXES, 404, "the server could not find the requested resource")
    with pytest.raises(KubeError, match="answered 404 to list sandboxes"):
        platform.sandbox_of(SESSION)


def test_kills_the_pod_with_a_one_second_grace_not_a_force_delete(
    platform: Cluster, fake: FakeKubernetes
) -> None:
    """A force delete (grace 0) would remove the pod object while its containers may still
    run; with a grace period the pod stays Terminating until its kubelet finishes it."""
    _, served_by = plain_sandbox(fake)
    found = platform.sandbox_of(SESSION)
    assert found is not None
    fake.requests.clear()
    platform.kill_sandbox(found)
    [delete] = fake.requests
    assert delete.line == f"DELETE {PODS}/echo-agent-x7k2"
    assert delete.body["gracePeriodSeconds"] == KILL_GRACE_SECONDS
    assert delete.body["preconditions"] == {"uid": served_by["metadata"]["uid"]}
    terminating = fake.get(PODS, "echo-agent-x7k2")
    assert terminating is not None, "the killed pod went before its kubelet finished it"
    metadata = terminating["metadata"]
    assert metadata["deletionGracePeriodSeconds"] == KILL_GRACE_SECONDS, metadata
    assert not platform.is_killed(found), "a Terminating pod was taken for a killed one"
    fake.kubelet_finishes(PODS, "echo-agent-x7k2")
    assert platform.is_killed(found)
    with pytest.raises(AssertionError, match="has no pod left to kill"):
        platform.kill_sandbox(found)
