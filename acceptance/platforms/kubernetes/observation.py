"""Observing sandboxes on the cluster. A session's are found by the label SESSION_LABEL the
WorkloadManager puts on its Sandbox, SandboxClaim and pod; a pod taken from a warm pool lacks
it, and is found through owner references, SandboxClaim -> Sandbox -> Pod (as upstream's
test/e2e/e2e_test.go walks the chain).
"""

from __future__ import annotations

from acceptance.platforms.kubernetes.api import JSON, KubeApi, ObjectRef, Resource
from acceptance.platforms.kubernetes.objects import (
    SessionObjects,
    label_selector,
    owned_by,
    owned_objects,
    terminating,
)

SESSION_LABEL = "runtime.agentcube.io/session-id"
WARM_POOL_KIND = "SandboxWarmPool"
# The Sandbox a SandboxClaim adopted: an annotation on the claim since agent-sandbox's
# v1beta1 (extensions/api/v1beta1/sandboxclaim_types.go), a label of the same key before.
ASSIGNED_SANDBOX = "agents.x-k8s.io/sandbox-name"


class Observer:
    """In the namespace of the runtimes under test."""

    def __init__(self, api: KubeApi, namespace: str) -> None:
        self.api = api
        self.namespace = namespace

    def session_objects(self, session_id: str) -> SessionObjects:
        selector = label_selector({SESSION_LABEL: session_id})
        claim = _first(self.api.objects(Resource.SANDBOX_CLAIM, self.namespace, selector))
        sandboxes = self.api.objects(Resource.SANDBOX, self.namespace, selector)
        if claim is not None and not owned_objects(
            sandboxes, "SandboxClaim", claim["metadata"]["uid"]
        ):
            sandboxes = self._adopted(claim)
        sandbox = _first(sandboxes)
        pods = self.api.objects(Resource.POD, self.namespace, selector)
        if not pods and sandbox is not None:
            pods = owned_objects(
                self.api.objects(Resource.POD, self.namespace),
                "Sandbox",
                sandbox["metadata"]["uid"],
            )
        return SessionObjects(claim, sandbox, _first(pods))

    def session_ids(self) -> set[str]:
        """The sessions the namespace holds: the session label of each SandboxClaim and
        Sandbox not being deleted (a pool's Sandbox that a claim adopted has none, its claim
        has), listed whole, as an equality selector cannot ask for the label's presence."""
        return {
            session_id
            for resource in (Resource.SANDBOX_CLAIM, Resource.SANDBOX)
            for obj in self.api.objects(resource, self.namespace)
            if not terminating(obj)
            and (session_id := (obj["metadata"].get("labels") or {}).get(SESSION_LABEL))
        }

    def _adopted(self, claim: JSON) -> list[JSON]:
        """The Sandbox a claim adopted from a warm pool, which lacks the session's label: the
        one the claim names when the claim owns it, else any the claim owns."""
        metadata = claim["metadata"]
        named = (metadata.get("annotations") or {}).get(ASSIGNED_SANDBOX) or (
            metadata.get("labels") or {}
        ).get(ASSIGNED_SANDBOX)
        if named:
            sandbox = self.api.get(Resource.SANDBOX, self.namespace, named)
            if sandbox is not None and owned_by(sandbox, "SandboxClaim", uid=metadata["uid"]):
                return [sandbox]
        return owned_objects(
            self.api.objects(Resource.SANDBOX, self.namespace), "SandboxClaim", metadata["uid"]
        )

    def exists(self, ref: ObjectRef) -> bool:
        """Whether this very instance (uid) still exists, deleting or not."""
        obj = self.api.get(ref.resource, ref.namespace, ref.name)
        return obj is not None and obj["metadata"].get("uid") == ref.uid

    def warm_pool(self, pool: str) -> list[SessionObjects]:
        """The sandboxes waiting in the warm pool of this name (a CodeInterpreter's pool bears
        its name), each as its Sandbox and pod: a pod owned by a pool Sandbox, or by the pool
        itself in older agent-sandbox releases (no Sandbox then). Anything being deleted is
        left out."""
        sandboxes = [
            sandbox
            for sandbox in self.api.objects(Resource.SANDBOX, self.namespace)
            if owned_by(sandbox, WARM_POOL_KIND, name=pool) and not terminating(sandbox)
        ]
        waiting = []
        for pod in self.api.objects(Resource.POD, self.namespace):
            if terminating(pod):
                continue
            owner = next(
                (s for s in sandboxes if owned_by(pod, "Sandbox", uid=s["metadata"]["uid"])), None
            )
            if owner is not None or owned_by(pod, WARM_POOL_KIND, name=pool):
                waiting.append(SessionObjects(sandbox=owner, pod=pod))
        return waiting


def _first(objects: list[JSON]) -> JSON | None:
    """The one object expected; a live one first when a deleted one lingers beside it."""
    return min(objects, key=terminating, default=None)
