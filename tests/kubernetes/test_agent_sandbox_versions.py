"""agent-sandbox's API versions: the adapter uses the one its cluster serves, asked for in the
order v1beta1, v1alpha1, v1 (issue 22: it was hard-coded to v1alpha1, which v1.x no longer
serves). v1.x serves v1beta1 alone (v1.0.0 dropped v1alpha1 and its conversion webhook:
agent-sandbox issue #1265, PRs #1307 and #1470); v0.5.x serves v1beta1 and, deprecated,
v1alpha1; v0.4.6, as AgentCube 939abb5 installs it, v1alpha1 alone. No release serves v1;
it is asked for last so that a later release serving only v1 is used rather than reported
missing. The adapter reads only metadata, labels and owner references;
a v1beta1 SandboxClaim names its pool in spec.warmPoolRef and the Sandbox it adopted in the
annotation agents.x-k8s.io/sandbox-name (agent-sandbox extensions/api/v1beta1/
sandboxclaim_types.go), v0.4.6's in a label of the same key."""

from __future__ import annotations

import pytest

from acceptance.platforms.kubernetes.connection import served_agent_sandbox
from tests.kubernetes.conftest import (
    NS,
    PODS,
    SANDBOX_CLAIMS,
    SANDBOXES,
    SESSION_LABEL,
    MakeCluster,
    custom,
    owner,
    pod,
)
from tests.kubernetes.fake_api import FakeKubernetes

SESSION = "3c9d2a71-58e4-4f0b-9d6e-7a1b2c3d4e5f"
AGENTCUBE = "runtime.agentcube.volcano.sh/v1alpha1"
ASSIGNED = "agents.x-k8s.io/sandbox-name"


def serve(fake: FakeKubernetes, version: str, *also: str) -> tuple[str, str]:
    """Serve agent-sandbox's groups in these versions; the paths of Sandboxes and
    SandboxClaims in the first."""
    fake.groups = {
        AGENTCUBE,
        *(
            f"{group}/{v}"
            for group in ("agents.x-k8s.io", "extensions.agents.x-k8s.io")
            for v in (version, *also)
        ),
    }
    return (
        f"/apis/agents.x-k8s.io/{version}/namespaces/{NS}/sandboxes",
        f"/apis/extensions.agents.x-k8s.io/{version}/namespaces/{NS}/sandboxclaims",
    )


def claimed(fake: FakeKubernetes, sandboxes: str, claims: str, **named: dict) -> dict:
    """A warm-pool Sandbox a claim adopted, and its pod; the claim carries the session label
    and, as given, the annotation or label naming the Sandbox."""
    claim = fake.put(
        claims,
        {
            "apiVersion": claims.removeprefix("/apis/").split("/namespaces/")[0],
            "kind": "SandboxClaim",
            "metadata": {
                "name": "python-interpreter-warm-q2",
                "labels": {SESSION_LABEL: SESSION, **named.get("labels", {})},
                "annotations": named.get("annotations", {}),
            },
            "spec": {"warmPoolRef": {"name": "python-interpreter-warm"}},
        },
    )
    fake.put(sandboxes, custom("Sandbox", "decoy-pool-b"))
    sandbox = fake.put(
        sandboxes, custom("Sandbox", "pool-a", ownerReferences=[owner("SandboxClaim", claim)])
    )
    fake.put(PODS, pod("pool-a", owners=[owner("Sandbox", sandbox)]))
    return sandbox


@pytest.mark.parametrize(
    ("served", "used"),
    [
        (("v1beta1",), "v1beta1"),
        (("v1beta1", "v1alpha1"), "v1beta1"),
        (("v1alpha1",), "v1alpha1"),
        (("v1",), "v1"),
    ],
    ids=["v1.x", "v0.5", "v0.4", "a-future-v1-only-release"],
)
def test_the_served_version_is_found_and_said(
    make_cluster: MakeCluster, fake: FakeKubernetes, served: tuple[str, ...], used: str
) -> None:
    serve(fake, *served)
    cluster = make_cluster()
    assert served_agent_sandbox(cluster.api) == (
        f"agent-sandbox API agents.x-k8s.io/{used}, extensions.agents.x-k8s.io/{used}"
    )


def test_a_v1beta1_claim_is_followed_by_the_annotation_naming_its_sandbox(
    make_cluster: MakeCluster, fake: FakeKubernetes
) -> None:
    sandboxes, claims = serve(fake, "v1beta1", "v1alpha1")
    sandbox = claimed(fake, sandboxes, claims, annotations={ASSIGNED: "pool-a"})
    platform = make_cluster()
    found = platform.sandbox_of(SESSION)
    assert found is not None and found.sandbox_id == "pool-a"
    assert {ref.uid for ref in found.objects} >= {sandbox["metadata"]["uid"]}
    by_label = f"labelSelector={SESSION_LABEL}={SESSION}"
    assert fake.lines() == [
        f"GET {claims}?{by_label}",
        f"GET {sandboxes}?{by_label}",
        f"GET {sandboxes}/pool-a",
        f"GET {PODS}?{by_label}",
        f"GET {PODS}",
    ]


def test_a_v0_4_claim_names_its_sandbox_in_a_label(
    make_cluster: MakeCluster, fake: FakeKubernetes
) -> None:
    claimed(fake, SANDBOXES, SANDBOX_CLAIMS, labels={ASSIGNED: "pool-a"})
    platform = make_cluster()
    found = platform.sandbox_of(SESSION)
    assert found is not None and found.sandbox_id == "pool-a"
    assert f"GET {SANDBOXES}/pool-a" in fake.lines()


def test_a_named_sandbox_the_claim_does_not_own_is_not_taken_for_it(
    make_cluster: MakeCluster, fake: FakeKubernetes
) -> None:
    """The name is a hint; the owner reference decides (the claim may not have adopted the
    Sandbox yet, or someone else's Sandbox has that name)."""
    sandboxes, claims = serve(fake, "v1beta1")
    claimed(fake, sandboxes, claims, annotations={ASSIGNED: "decoy-pool-b"})
    platform = make_cluster()
    found = platform.sandbox_of(SESSION)
    assert found is not None
    assert [ref.name for ref in found.objects] == ["python-interpreter-warm-q2", "pool-a", "pool-a"]
