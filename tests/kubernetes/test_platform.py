"""The platform as the World uses it: runtime admin, failure evidence, the Router restart."""

from __future__ import annotations

import pytest

from acceptance.core.evidence import register_secret
from acceptance.core.runtimes import Runtime, RuntimeKind, derive_manifest, fixture_manifest
from acceptance.platforms.kubernetes.cluster import Cluster, rollout_pending
from tests.kubernetes.conftest import (
    AGENT_RUNTIMES,
    DEPLOYMENTS,
    EVENTS,
    NS,
    PODS,
    SANDBOX_CLAIMS,
    SESSION_LABEL,
    MakeCluster,
    meta,
    pod,
)
from tests.kubernetes.fake_api import FakeKubernetes, Recorded

SESSION = "7d0c6a8e-1f0b-4c1e-8a5a-2b9e3c4d5f60"
USER_TOKEN = "user-token-61f0"


def platform_of(cluster: Cluster) -> Cluster:
    """The run's Cluster is each scenario's platform."""
    return cluster


def test_applies_and_deletes_a_runtime_as_the_world_does(
    cluster: Cluster, fake: FakeKubernetes
) -> None:
    platform = platform_of(cluster)
    manifest = derive_manifest(
        fixture_manifest(RuntimeKind.AGENT_RUNTIME, "echo-agent"),
        name="echo-agent-idle-5",
        namespace=NS,
        session_timeout=30,
    )
    runtime = platform.apply_runtime(manifest)
    assert runtime == Runtime(RuntimeKind.AGENT_RUNTIME, NS, "echo-agent-idle-5")
    platform.delete_runtime(runtime)
    platform.delete_runtime(runtime)  # a second cleanup of the same runtime is harmless
    assert fake.lines("POST") == [f"POST {AGENT_RUNTIMES}"]
    assert fake.lines("DELETE") == [f"DELETE {AGENT_RUNTIMES}/echo-agent-idle-5"]


def pod_event(pod_name: str, reason: str, message: str, **fields) -> dict:
    """An Event about one pod of the namespace, as the API lists it."""
    return {
        "kind": "Event",
        "metadata": meta(f"{pod_name}.1"),
        "involvedObject": {"kind": "Pod", "name": pod_name, "namespace": NS},
        "reason": reason,
        "message": message,
        **fields,
    }


def crashing_pod(fake: FakeKubernetes) -> None:
    obj = pod("echo-agent-q1", labels={SESSION_LABEL: SESSION})
    obj["status"]["containerStatuses"] = [
        {
            "name": "main",
            "ready": False,
            "restartCount": 3,
            "image": "img",
            "imageID": "",
            "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off"}},
        }
    ]
    fake.put(PODS, obj)
    fake.put(
        EVENTS,
        pod_event(
            "echo-agent-q1",
            "BackOff",
            "Back-off restarting failed container",
            type="Warning",
            count=4,
            lastTimestamp="2026-01-01T00:00:04Z",
        ),
    )
    fake.put(EVENTS, pod_event("other", "Pulled", "unrelated"))
    fake.logs[(NS, "echo-agent-q1", "main")] = "\n".join(
        [f"line {n}" for n in range(1, 60)] + [f"got Authorization: Bearer {USER_TOKEN}"]
    )


def test_evidence_of_a_failed_scenario(cluster: Cluster, fake: FakeKubernetes) -> None:
    register_secret(USER_TOKEN)
    crashing_pod(fake)
    evidence = platform_of(cluster).evidence([SESSION])
    assert evidence.splitlines()[:3] == [
        f"Cluster objects of session {SESSION}:",
        f"  Pod {NS}/echo-agent-q1 uid {fake.get(PODS, 'echo-agent-q1')['metadata']['uid']}",
        "  pod phase: Running",
    ]
    assert (
        "  container main: ready=False restarts=3 waiting message=back-off "
        "reason=CrashLoopBackOff" in evidence
    )
    assert "    Warning BackOff: Back-off restarting failed container (x4)" in evidence
    assert "unrelated" not in evidence
    assert "  last 40 log lines of container main:\n    line 21\n" in evidence
    assert "line 20\n" not in evidence
    assert USER_TOKEN not in evidence
    assert "got Authorization: Bearer <redacted>" in evidence
    assert f"GET {PODS}/echo-agent-q1/log?container=main&tailLines=40" in fake.lines()
    assert (
        f"GET {EVENTS}?fieldSelector=involvedObject.kind=Pod,involvedObject.name=echo-agent-q1"
        in fake.lines()
    )


def test_evidence_says_what_it_could_not_read(cluster: Cluster, fake: FakeKubernetes) -> None:
    crashing_pod(fake)
    fake.fail("GET", f"{PODS}/echo-agent-q1/log", 403, "pods/log is forbidden")
    fake.fail("GET", EVENTS, 403, "events is forbidden")
    evidence = platform_of(cluster).evidence([SESSION, "no-such-session"])
    assert "  events: could not be read: the Kubernetes API answered 403" in evidence
    assert "container main: could not be read: the Kubernetes API answered 403" in evidence
    assert (
        "Cluster objects of session no-such-session:\n"
        f"  no pod labelled {SESSION_LABEL}=no-such-session or owned by its Sandbox"
    ) in evidence


def test_evidence_of_a_pod_no_node_will_take(cluster: Cluster, fake: FakeKubernetes) -> None:
    """The commonest failure on a cluster: the API answers the log of a pod on no node with
    204 No Content, and its phase, conditions and FailedScheduling event still tell why."""
    obj = pod("echo-agent-u1", labels={SESSION_LABEL: SESSION}, ready=False)
    obj["spec"].pop("nodeName", None)
    obj["status"]["conditions"] = [
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "0/1 nodes are available: 1 Insufficient memory.",
        }
    ]
    fake.put(PODS, obj)
    fake.put(
        EVENTS,
        pod_event(
            "echo-agent-u1",
            "FailedScheduling",
            "0/1 nodes are available: 1 Insufficient memory.",
            type="Warning",
            count=2,
        ),
    )
    evidence = platform_of(cluster).evidence([SESSION])
    assert evidence.splitlines()[2:] == [
        "  pod phase: Pending",
        "  condition PodScheduled=False (Unschedulable: 0/1 nodes are available: 1 "
        "Insufficient memory.)",
        "  events:",
        "    Warning FailedScheduling: 0/1 nodes are available: 1 Insufficient memory. (x2)",
        "  last 40 log lines of container main: none yet: the pod is not scheduled on a node",
    ]
    assert f"GET {PODS}/echo-agent-u1/log?container=main&tailLines=40" in fake.lines()


def test_evidence_when_the_cluster_cannot_be_read(cluster: Cluster, fake: FakeKubernetes) -> None:
    fake.fail("GET", SANDBOX_CLAIMS, 403, "sandboxclaims is forbidden")
    assert platform_of(cluster).evidence([SESSION]) == (
        f"Cluster objects of session {SESSION}: could not be read: KubeError: the Kubernetes "
        "API answered 403 to list sandboxclaims.extensions.agents.x-k8s.io in agentcube with "
        f"labels {SESSION_LABEL}={SESSION}: sandboxclaims is forbidden"
    )


def test_evidence_without_sessions(cluster: Cluster) -> None:
    assert platform_of(cluster).evidence([]) == "Cluster evidence: the scenario opened no session"


def deployment(generation: int, **status: int) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta("agentcube-router", generation=generation),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "agentcube-router"}},
            "template": {"spec": {"containers": [{"name": "router", "image": "router"}]}},
        },
        "status": status,
    }


def test_restarts_the_router_and_waits_for_the_rollout(
    cluster: Cluster, fake: FakeKubernetes
) -> None:
    done = {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1}
    fake.put(DEPLOYMENTS, deployment(1, **done))
    reads = 0

    def controller(fake: FakeKubernetes, request: Recorded) -> None:
        nonlocal reads
        stored = fake.get(DEPLOYMENTS, "agentcube-router")
        if request.method == "PATCH":  # the new pod starts beside the old one
            stored["status"] = {**done, "observedGeneration": 2, "replicas": 2}
        elif (reads := reads + 1) == 3:  # the old pod is gone
            stored["status"] = {**done, "observedGeneration": 2}

    fake.after("PATCH", f"{DEPLOYMENTS}/agentcube-router", controller)
    fake.after("GET", f"{DEPLOYMENTS}/agentcube-router", controller)
    platform_of(cluster).restart_router()
    patch = fake.requests[0]
    assert patch.line == f"PATCH {DEPLOYMENTS}/agentcube-router"
    assert patch.headers["Content-Type"] == "application/strategic-merge-patch+json"
    annotations = patch.body["spec"]["template"]["metadata"]["annotations"]
    assert set(annotations) == {"kubectl.kubernetes.io/restartedAt"}
    assert reads == 4  # the third read saw the old pod still there; the fourth, none


def test_a_router_that_is_no_deployment_fails_naming_the_setting(cluster: Cluster) -> None:
    with pytest.raises(AssertionError) as raised:
        platform_of(cluster).restart_router()
    message = str(raised.value)
    assert message.startswith(
        f"the Kubernetes API answered 404 to restart Deployment {NS}/agentcube-router: "
        'deployments.apps "agentcube-router" not found: the suite restarts the Router as the '
        "Deployment router_deployment / AGENTCUBE_ROUTER_DEPLOYMENT and system_namespace / "
        "AGENTCUBE_SYSTEM_NAMESPACE name"
    ), message


def test_a_rollout_that_never_completes_fails_naming_the_timeout(
    make_cluster: MakeCluster, fake: FakeKubernetes
) -> None:
    fake.put(DEPLOYMENTS, deployment(1, observedGeneration=1, replicas=1, updatedReplicas=0))
    with pytest.raises(AssertionError, match="cluster_timeout"):
        platform_of(make_cluster(cluster_timeout=0.2)).restart_router()


@pytest.mark.parametrize(
    ("status", "pending"),
    [
        ({"observedGeneration": 1}, "the controller has not observed the restart yet"),
        ({"observedGeneration": 2, "updatedReplicas": 0}, "0 of 1 replicas updated"),
        (
            {"observedGeneration": 2, "updatedReplicas": 1, "replicas": 2},
            "1 old replicas still terminating",
        ),
        (
            {"observedGeneration": 2, "updatedReplicas": 1, "replicas": 1},
            "0 of 1 updated replicas available",
        ),
        (
            {"observedGeneration": 2, "updatedReplicas": 1, "replicas": 1, "availableReplicas": 1},
            None,
        ),
    ],
)
def test_rollout_criteria(status: dict, pending: str | None) -> None:
    assert rollout_pending(deployment(2, **status)) == pending
