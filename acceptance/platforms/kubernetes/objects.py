"""Reading Kubernetes objects as the API returns them (JSON-shaped dicts): owner references,
deletion, readiness, and what serves a session. No API calls here."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from acceptance.platforms.kubernetes.api import JSON, ObjectRef, Resource


def label_selector(labels: Mapping[str, str]) -> str:
    return ",".join(f"{key}={value}" for key, value in sorted(labels.items()))


def owned_by(obj: JSON, kind: str, *, uid: str | None = None, name: str | None = None) -> bool:
    """Whether an owner reference of the object names an owner of this kind (and uid/name)."""
    return any(
        owner.get("kind") == kind
        and (uid is None or owner.get("uid") == uid)
        and (name is None or owner.get("name") == name)
        for owner in obj["metadata"].get("ownerReferences") or ()
    )


def owned_objects(objects: Iterable[JSON], owner_kind: str, owner_uid: str) -> list[JSON]:
    return [obj for obj in objects if owned_by(obj, owner_kind, uid=owner_uid)]


def terminating(obj: JSON) -> bool:
    """Whether deletion of the object has begun (it may linger for finalizers)."""
    return bool(obj["metadata"].get("deletionTimestamp"))


def pod_ready(pod: JSON) -> bool:
    """A running pod whose Ready condition is true and whose deletion has not begun."""
    status = pod.get("status") or {}
    ready = any(
        condition.get("type") == "Ready" and condition.get("status") == "True"
        for condition in status.get("conditions") or ()
    )
    return ready and status.get("phase") == "Running" and not terminating(pod)


@dataclass(frozen=True)
class SessionObjects:
    """What the cluster holds for one session; each part None when absent."""

    claim: JSON | None = None
    sandbox: JSON | None = None
    pod: JSON | None = None

    def present(self) -> list[tuple[ObjectRef, JSON]]:
        """The objects found, claim first, each with its identity."""
        parts = (
            (Resource.SANDBOX_CLAIM, self.claim),
            (Resource.SANDBOX, self.sandbox),
            (Resource.POD, self.pod),
        )
        return [(ObjectRef.of(resource, obj), obj) for resource, obj in parts if obj is not None]

    @property
    def ready(self) -> bool:
        return self.pod is not None and pod_ready(self.pod)

    @property
    def serving(self) -> bool:
        """A pod exists and nothing in the chain is being deleted."""
        return self.pod is not None and not any(terminating(obj) for _, obj in self.present())
