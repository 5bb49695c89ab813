"""A pod's status as the node computes it: the phase as the kubelet's getPhase decides it,
the conditions and their transition times, addresses and container statuses."""

from __future__ import annotations

import pytest

from onemachine.node.status import ContainerView, phase, pod_status

RUNNING = {"running": {"startedAt": "2026-12-01T10:00:00Z"}}
WAITING = {"waiting": {"reason": "ContainerCreating"}}


def ended(code: int) -> dict:
    return {"terminated": {"exitCode": code, "reason": "Completed" if code == 0 else "Error"}}


def view(state: dict, last: dict | None = None, ready: bool = False) -> ContainerView:
    return ContainerView("c", "python:3.12", state=state, last_state=last or {}, ready=ready)


@pytest.mark.parametrize(
    ("states", "policy", "expected"),
    [
        ([WAITING], "Always", "Pending"),
        ([RUNNING, WAITING], "Always", "Pending"),
        ([RUNNING], "Never", "Running"),
        ([RUNNING, ended(0)], "Never", "Running"),
        ([ended(0)], "Always", "Running"),  # restarting
        ([ended(0), ended(0)], "OnFailure", "Succeeded"),
        ([ended(0), ended(1)], "Never", "Failed"),
        ([ended(1)], "OnFailure", "Running"),  # restarting
        ([ended(0)], "Never", "Succeeded"),
    ],
)
def test_the_phase_is_the_kubelets(states: list[dict], policy: str, expected: str) -> None:
    assert phase([view(state) for state in states], policy) == expected


@pytest.mark.parametrize(("code", "expected"), [(0, "Succeeded"), (137, "Failed")])
def test_a_deleted_pod_whose_containers_stopped_is_terminal(code: int, expected: str) -> None:
    assert phase([view(ended(code))], "Always", terminal=True) == expected


def test_a_container_waiting_to_restart_counts_as_stopped_not_pending() -> None:
    backing_off = view({"waiting": {"reason": "CrashLoopBackOff"}}, last=ended(1))
    assert phase([backing_off], "Always") == "Running"


def status_of(containers: list[ContainerView], previous: dict | None = None) -> dict:
    return pod_status(
        previous or {},
        containers,
        restart_policy="Always",
        sandbox_ready=True,
        pod_ip="198.18.0.7",
        host_ip="198.18.0.1",
        start_time="2026-12-01T10:00:00Z",
        generation=3,
    )


def conditions(status: dict) -> dict[str, dict]:
    return {c["type"]: c for c in status["conditions"]}


def test_an_unready_container_is_named_in_the_readiness_conditions() -> None:
    status = status_of([view(RUNNING)])
    for kind in ("ContainersReady", "Ready"):
        condition = conditions(status)[kind]
        assert (condition["status"], condition["reason"]) == ("False", "ContainersNotReady")
        assert condition["message"] == "containers with unready status: [c]"
    assert status["podIP"] == "198.18.0.7"
    assert status["podIPs"] == [{"ip": "198.18.0.7"}]
    assert status["hostIPs"] == [{"ip": "198.18.0.1"}]


def test_a_transition_time_holds_while_the_status_holds() -> None:
    first = status_of([view(RUNNING, ready=True)])
    first["conditions"] = [
        {**c, "lastTransitionTime": "2026-01-01T00:00:00Z"} for c in first["conditions"]
    ]
    again = status_of([view(RUNNING, ready=True)], previous=first)
    assert conditions(again)["Ready"]["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    flipped = status_of([view(RUNNING, ready=False)], previous=first)
    assert conditions(flipped)["Ready"]["lastTransitionTime"] != "2026-01-01T00:00:00Z"
    assert conditions(flipped)["PodScheduled"]["lastTransitionTime"] == "2026-01-01T00:00:00Z"


def test_conditions_the_node_does_not_own_are_kept() -> None:
    gate = {"type": "example.com/gate", "status": "True"}
    status = status_of([view(RUNNING, ready=True)], previous={"conditions": [gate]})
    assert conditions(status)["example.com/gate"] == gate


def test_the_generation_is_observed_by_the_status_and_the_nodes_conditions_only() -> None:
    """status_manager.go:479 and status/generate.go (v1.36): metadata.generation, on the
    status and on each condition the kubelet owns; another's condition is kept as it is."""
    gate = {"type": "example.com/gate", "status": "True", "observedGeneration": 1}
    status = status_of([view(RUNNING, ready=True)], previous={"conditions": [gate]})
    assert status["observedGeneration"] == 3
    assert {kind: c.get("observedGeneration") for kind, c in conditions(status).items()} == {
        "PodScheduled": 3,
        "PodReadyToStartContainers": 3,
        "Initialized": 3,
        "ContainersReady": 3,
        "Ready": 3,
        "example.com/gate": 1,
    }


def test_a_completed_pod_is_not_ready_for_reason_pod_completed() -> None:
    status = pod_status(
        {},
        [view(ended(0))],
        restart_policy="Never",
        sandbox_ready=False,
        pod_ip=None,
        host_ip="198.18.0.1",
        start_time="2026-12-01T10:00:00Z",
        generation=0,
    )
    assert status["phase"] == "Succeeded"
    assert "observedGeneration" not in status  # a pod without a generation: none observed
    assert all("observedGeneration" not in c for c in status["conditions"])
    assert conditions(status)["Ready"]["reason"] == "PodCompleted"
    assert conditions(status)["PodReadyToStartContainers"]["status"] == "False"
    assert "podIP" not in status


def test_a_container_status_has_what_a_kubelet_reports() -> None:
    container = ContainerView(
        "agent", "python:3.12", state=RUNNING, restart_count=2, ready=True, container_id="x://1"
    )
    assert container.as_status() == {
        "name": "agent",
        "image": "python:3.12",
        "imageID": "onemachine://python:3.12",
        "state": RUNNING,
        "lastState": {},
        "ready": True,
        "restartCount": 2,
        "started": True,
        "containerID": "x://1",
    }
