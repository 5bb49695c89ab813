"""Restarting a Deployment and waiting for the rollout, as `kubectl rollout restart` and
`kubectl rollout status` do, for the ``@disruptive`` Router-restart scenario."""

from __future__ import annotations

from hamcrest import described_as, none

from acceptance.core.polling import eventually
from acceptance.platforms.kubernetes.api import JSON, KubeApi


def restart_deployment(
    api: KubeApi, namespace: str, name: str, *, timeout: float, poll: float
) -> None:
    """Restart the Deployment's pods and return once the new ones are all available."""
    api.restart_deployment(namespace, name)
    eventually(
        lambda: rollout_pending(api.deployment(namespace, name)),
        described_as("the rollout complete", none()),
        timeout=timeout,
        poll=poll,
        waiting_for=f"Deployment {namespace}/{name} to roll out (cluster_timeout)",
    )


def rollout_pending(deployment: JSON) -> str | None:
    """What the rollout still waits for, or None once complete (kubectl's criteria)."""
    metadata, spec = deployment["metadata"], deployment.get("spec") or {}
    status = deployment.get("status") or {}
    wanted = spec.get("replicas", 1)
    updated = status.get("updatedReplicas", 0)
    if status.get("observedGeneration", 0) < metadata.get("generation", 0):
        return "the controller has not observed the restart yet"
    if updated < wanted:
        return f"{updated} of {wanted} replicas updated"
    if status.get("replicas", 0) > updated:
        return f"{status['replicas'] - updated} old replicas still terminating"
    if status.get("availableReplicas", 0) < updated:
        return f"{status.get('availableReplicas', 0)} of {updated} updated replicas available"
    return None
