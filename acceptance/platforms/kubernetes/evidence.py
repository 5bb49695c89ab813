"""Evidence from the cluster for a failed scenario, collected before its cleanup: for each
session, the objects that serve it and its pod's status, events and last log lines, redacted.
Collecting never raises: what cannot be read is said in place."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from acceptance.core.evidence import redact
from acceptance.platforms.kubernetes.api import JSON, KubeApi, KubeError
from acceptance.platforms.kubernetes.objects import terminating
from acceptance.platforms.kubernetes.observation import SESSION_LABEL, Observer

LOG_LINES = 40
NO_LOG_YET = "none yet: the pod is not scheduled on a node"


def describe_sessions(observer: Observer, session_ids: Iterable[str]) -> str:
    sections = []
    for session_id in session_ids:
        try:
            sections.append(_describe_session(observer, session_id))
        except Exception as error:  # evidence must not replace the failure it documents
            why = f"{type(error).__name__}: {error}"
            sections.append(f"Cluster objects of session {session_id}: could not be read: {why}")
    if not sections:
        return "Cluster evidence: the scenario opened no session"
    return redact("\n".join(sections))


def _describe_session(observer: Observer, session_id: str) -> str:
    lines = [f"Cluster objects of session {session_id}:"]
    objects = observer.session_objects(session_id)
    for ref, obj in objects.present():
        deleting = " (being deleted)" if terminating(obj) else ""
        lines.append(f"  {ref} uid {ref.uid}{deleting}")
    if objects.pod is None:
        lines.append(f"  no pod labelled {SESSION_LABEL}={session_id} or owned by its Sandbox")
        return "\n".join(lines)
    pod = objects.pod
    namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    lines += _pod_status(pod)
    lines += _readable("events", lambda: _events(observer.api.pod_events(namespace, name)))
    for container in pod["spec"]["containers"]:
        lines += _log(observer.api, namespace, name, container["name"])
    return "\n".join(lines)


def _log(api: KubeApi, namespace: str, pod: str, container: str) -> list[str]:
    return _readable(
        f"last {LOG_LINES} log lines of container {container}",
        lambda: api.pod_log(namespace, pod, container, LOG_LINES),
    )


def _pod_status(pod: JSON) -> list[str]:
    status = pod.get("status") or {}
    lines = [f"  pod phase: {status.get('phase', 'unknown')}"]
    lines += [
        f"  condition {c.get('type')}={c.get('status')}"
        + (f" ({c.get('reason')}: {c.get('message', '')})" if c.get("reason") else "")
        for c in status.get("conditions") or ()
    ]
    for container in status.get("containerStatuses") or ():
        state = container.get("state") or {}
        described = ", ".join(
            f"{phase} " + " ".join(f"{k}={v}" for k, v in sorted(detail.items()))
            for phase, detail in state.items()
            if detail
        )
        lines.append(
            f"  container {container.get('name')}: ready={container.get('ready')} "
            f"restarts={container.get('restartCount', 0)} {described}"
        )
    return lines


def _events(events: list[JSON]) -> list[str]:
    ordered = sorted(events, key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime")))
    return [
        f"{e.get('type')} {e.get('reason')}: {e.get('message')} (x{e.get('count') or 1})"
        for e in ordered
    ]


def _readable(title: str, read: Callable[[], list[str] | str | None]) -> list[str]:
    """The title and the lines `read` gives (a text: its lines), or what kept them from being
    read; None is a pod's log while it is on no node (the API answers 204 No Content)."""
    try:
        content = read()
    except KubeError as error:
        return [f"  {title}: could not be read: {error}"]
    if content is None:
        return [f"  {title}: {NO_LOG_YET}"]
    if isinstance(content, str):
        content = content.splitlines()
    return [f"  {title}:" + ("" if content else " none"), *(f"    {line}" for line in content)]
