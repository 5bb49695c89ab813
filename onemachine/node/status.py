"""A pod's status as the kubelet reports it, from what the node knows of its containers: the
phase (kubernetes pkg/kubelet/kubelet_pods.go getPhase), the conditions PodScheduled,
PodReadyToStartContainers, Initialized, ContainersReady and Ready (each keeping its
lastTransitionTime while its status holds), addresses, startTime and containerStatuses,
and the pod's generation observed (PodObservedGenerationTracking, GA and locked on in
v1.35: pkg/kubelet/status/status_manager.go:479 sets status.observedGeneration and
pkg/kubelet/status/generate.go each of those conditions' to metadata.generation).
A terminated container state has no `signal`: kubelet_pods.go convertToAPIContainerStatuses
never fills it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

Obj = dict[str, Any]
_OWN_CONDITIONS = ("PodScheduled", "PodReadyToStartContainers", "Initialized")
_READINESS = ("ContainersReady", "Ready")


def timestamp(seconds: float | None = None) -> str:
    """RFC 3339 in whole seconds, as the API's metav1.Time."""
    moment = datetime.fromtimestamp(seconds, UTC) if seconds is not None else datetime.now(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class ContainerView:
    """One container as its status shows it. `state` and `last_state` are the API's
    ContainerState dicts ({"waiting": ...}, {"running": ...} or {"terminated": ...})."""

    name: str
    image: str
    state: Obj = field(default_factory=lambda: {"waiting": {"reason": "ContainerCreating"}})
    last_state: Obj = field(default_factory=dict)
    restart_count: int = 0
    ready: bool = False
    container_id: str | None = None

    def as_status(self) -> Obj:
        status: Obj = {
            "name": self.name,
            "image": self.image,
            "imageID": f"onemachine://{self.image}",
            "state": self.state,
            "lastState": self.last_state,
            "ready": self.ready,
            "restartCount": self.restart_count,
            "started": "running" in self.state,
        }
        if self.container_id:
            status["containerID"] = self.container_id
        return status


def phase(containers: list[ContainerView], restart_policy: str, terminal: bool = False) -> str:
    """getPhase: waiting (never ran) keeps a pod Pending; one running makes it Running; all
    stopped is Succeeded, Failed, or Running while they restart -- unless the pod is
    terminal (deleted, its containers stopped for good): then Succeeded or Failed."""
    waiting = running = stopped = succeeded = 0
    for container in containers:
        if "running" in container.state:
            running += 1
        elif "terminated" in container.state:
            stopped += 1
            succeeded += container.state["terminated"].get("exitCode") == 0
        elif "terminated" in container.last_state:
            stopped += 1  # waiting to restart
        else:
            waiting += 1
    if waiting:
        return "Pending"
    if running:
        return "Running"
    if stopped:
        if terminal:
            return "Succeeded" if stopped == succeeded else "Failed"
        if restart_policy == "Always":
            return "Running"
        if stopped == succeeded:
            return "Succeeded"
        return "Failed" if restart_policy == "Never" else "Running"
    return "Pending"


def pod_status(
    previous: Obj,
    containers: list[ContainerView],
    *,
    restart_policy: str,
    sandbox_ready: bool,
    pod_ip: str | None,
    host_ip: str,
    start_time: str,
    generation: int,
    terminal: bool = False,
) -> Obj:
    """The status to patch, given the pod's current one (`previous`): conditions the node does
    not own (a readiness gate's, DisruptionTarget) are kept, as they are. `generation`: the
    pod's metadata.generation (0, none: no observedGeneration, as Go's omitempty drops it).
    `terminal`: the pod is deleted and its containers stopped for good."""
    current = phase(containers, restart_policy, terminal)
    unready = [c.name for c in containers if not c.ready]
    if current in ("Succeeded", "Failed"):
        readiness: tuple[str, str, str] = ("False", "PodCompleted", "")
    elif unready:
        message = f"containers with unready status: [{' '.join(unready)}]"
        readiness = ("False", "ContainersNotReady", message)
    else:
        readiness = ("True", "", "")
    wanted = {
        "PodScheduled": ("True", "", ""),
        "PodReadyToStartContainers": ("True" if sandbox_ready else "False", "", ""),
        "Initialized": ("True", "", ""),
        **dict.fromkeys(_READINESS, readiness),
    }
    old = {c.get("type"): c for c in previous.get("conditions") or []}
    conditions = [
        _condition(kind, *wanted[kind], old.get(kind), generation)
        for kind in (*_OWN_CONDITIONS, *_READINESS)
    ]
    conditions += [c for kind, c in old.items() if kind not in wanted]
    status: Obj = {
        "phase": current,
        "conditions": conditions,
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "startTime": start_time,
        "containerStatuses": [c.as_status() for c in containers],
    }
    if generation:
        status["observedGeneration"] = generation
    if pod_ip:
        status["podIP"] = pod_ip
        status["podIPs"] = [{"ip": pod_ip}]
    return status


def _condition(
    kind: str, status: str, reason: str, message: str, old: Obj | None, generation: int
) -> Obj:
    same = old is not None and old.get("status") == status
    condition: Obj = {"type": kind}
    if generation:
        condition["observedGeneration"] = generation
    condition |= {
        "status": status,
        "lastProbeTime": None,
        "lastTransitionTime": old.get("lastTransitionTime") if same else timestamp(),  # type: ignore[union-attr]
    }
    if reason:
        condition["reason"] = reason
    if message:
        condition["message"] = message
    return condition
