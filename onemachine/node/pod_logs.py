"""Which container instance's log a `pods/log` request means, chosen from the pod's status
as the kubelet chooses it (kubernetes pkg/kubelet/kubelet_pods.go, validateContainerLogStatus):
with `previous` the last terminated instance; otherwise the running one, else the one that
ended, else the last one that ended; a container still waiting has no log yet."""

from __future__ import annotations

from onemachine.node.status import ContainerView

# The waiting reasons the kubelet words itself (kubelet_pods.go, the `waiting != nil` case).
_WAITING_WORDS = {
    "ErrImagePull": "image can't be pulled",
    "ImagePullBackOff": "trying and failing to pull image",
}


class LogUnavailable(Exception):
    """No log to read: the message is the kubelet's, answered with status 400."""


def chosen_instance(pod: str, views: list[ContainerView], container: str, previous: bool) -> str:
    """The containerID whose log is asked for (LogUnavailable with the kubelet's words)."""
    view = next((v for v in views if v.name == container), None)
    if view is None:
        raise LogUnavailable(f'container "{container}" in pod "{pod}" is not available')
    last = view.last_state.get("terminated")
    waiting, running = view.state.get("waiting"), view.state.get("running")
    terminated = view.state.get("terminated")
    if previous:
        if not last or not last.get("containerID"):
            raise LogUnavailable(
                f'previous terminated container "{container}" in pod "{pod}" not found'
            )
        return last["containerID"]
    if running is not None and view.container_id:
        return view.container_id
    for ended in (terminated, last):
        if ended is not None:
            if ended.get("containerID"):
                return ended["containerID"]
            if ended is terminated and last and last.get("containerID"):
                return last["containerID"]
            raise LogUnavailable(f'container "{container}" in pod "{pod}" is terminated')
    if waiting is not None:
        reason = waiting.get("reason", "")
        said = _WAITING_WORDS.get(reason, reason)
        raise LogUnavailable(f'container "{container}" in pod "{pod}" is waiting to start: {said}')
    raise LogUnavailable(
        f'container "{container}" in pod "{pod}" is waiting to start - no logs yet'
    )
