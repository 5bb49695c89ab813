"""The ``kubernetes`` platform: the Platform interface on a real AgentCube cluster.

One KubernetesPlatform per scenario, like the other adapters; the connection, the fixtures
and the port forwards belong to the run's Cluster, which it is given.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from acceptance.kubernetes.api import Resource
from acceptance.kubernetes.cluster import Cluster
from acceptance.kubernetes.evidence import describe_sessions
from acceptance.kubernetes.objects import ObjectRef, pod_ready
from acceptance.kubernetes.observation import SessionObjects
from acceptance.kubernetes.rollout import restart_deployment
from acceptance.platforms import (
    ROUTER_RESTART,
    RUNTIME_ADMIN,
    SANDBOX_KILL,
    SANDBOX_OBSERVATION,
    Platform,
    Sandbox,
)
from acceptance.runtimes import Runtime, RuntimeKind
from acceptance.transport import Transport


@dataclass(frozen=True)
class KubernetesSandbox(Sandbox):
    """A sandbox with the identities (uids) of its SandboxClaim, Sandbox and pod, as seen while
    it served: a new object under an old name is not it."""

    objects: tuple[ObjectRef, ...] = ()

    @property
    def pod(self) -> ObjectRef | None:
        return next((ref for ref in self.objects if ref.resource is Resource.POD), None)

    def __str__(self) -> str:
        pod = self.pod
        return f"sandbox {self.sandbox_id}" + (f" (pod {pod.name})" if pod else "")


class KubernetesPlatform(Platform):
    """Custom resources for runtime admin; pods, Sandboxes and SandboxClaims for observation;
    a pod deleted without grace for a kill; a rollout restart of the Router's Deployment."""

    name = "kubernetes"
    capabilities = frozenset({RUNTIME_ADMIN, SANDBOX_OBSERVATION, SANDBOX_KILL, ROUTER_RESTART})

    def __init__(self, transport: Transport, base_url: str, cluster: Cluster) -> None:
        super().__init__(transport, base_url)
        self._cluster = cluster

    def apply_runtime(self, manifest: dict[str, Any]) -> Runtime:
        """Create the runtime (it must not exist: the suite never replaces a cluster's own
        resource) and return it once usable."""
        return self._cluster.fixtures.apply(manifest)

    def delete_runtime(self, runtime: Runtime) -> None:
        self._cluster.fixtures.delete(runtime)

    def sandbox_of(self, session_id: str) -> KubernetesSandbox | None:
        """The sandbox serving the session; None once its deletion has begun. A sandbox taken
        from a warm pool keeps the sandbox_id `warm_sandboxes` gave it."""
        objects = self._cluster.observer.session_objects(session_id)
        return _sandbox(objects) if objects.serving else None

    def is_running(self, sandbox: Sandbox) -> bool:
        """Whether any of its pod, Sandbox and SandboxClaim still exists, deleting or not."""
        return any(self._cluster.observer.exists(ref) for ref in _observed(sandbox).objects)

    def warm_sandboxes(self, runtime: Runtime) -> frozenset[Sandbox]:
        """The sandboxes waiting in the CodeInterpreter's warm pool now, ready to serve: a
        pod still starting is not waiting yet (as localcube lists only live ones)."""
        waiting = self._cluster.observer.warm_pool(runtime.name)
        return frozenset(
            _sandbox(objects)
            for objects in waiting
            if objects.pod is not None and pod_ready(objects.pod)
        )

    def kill_sandbox(self, sandbox: Sandbox) -> None:
        """Delete its pod without a grace period (its Sandbox may start a new one)."""
        pod = _observed(sandbox).pod
        if pod is None or not self._cluster.api.delete(
            pod.resource, pod.namespace, pod.name, pod.uid, grace_seconds=0
        ):
            raise AssertionError(f"{sandbox} has no pod left to kill")

    def warm_pool_size(self, runtime: Runtime) -> int:
        """The CodeInterpreter's spec.warmPoolSize (0 without a pool)."""
        if runtime.kind is not RuntimeKind.CODE_INTERPRETER:
            return 0
        obj = self._cluster.api.get(Resource.CODE_INTERPRETER, runtime.namespace, runtime.name)
        if obj is None:
            raise AssertionError(f"{runtime} does not exist")
        return int(obj["spec"].get("warmPoolSize") or 0)

    def restart_router(self) -> None:
        """Restart the Router's Deployment and wait until its new pods are available."""
        settings = self._cluster.settings
        restart_deployment(
            self._cluster.api,
            settings.system_namespace,
            settings.router_deployment,
            timeout=settings.cluster_timeout,
            poll=self._cluster.poll_interval,
        )

    def evidence(self, session_ids: Iterable[str]) -> str:
        """Pod status, events and last log lines of each session, redacted."""
        return describe_sessions(self._cluster.api, self._cluster.observer, session_ids)


def _sandbox(objects: SessionObjects) -> KubernetesSandbox:
    """The sandbox as the suite names it: its Sandbox's name (a warm-pool Sandbox keeps its
    name when claimed), else its pod's."""
    named = objects.sandbox or objects.pod
    assert named is not None, "a sandbox is seen through its Sandbox or its pod"
    return KubernetesSandbox(sandbox_id=named["metadata"]["name"], objects=objects.refs())


def _observed(sandbox: Sandbox) -> KubernetesSandbox:
    if not isinstance(sandbox, KubernetesSandbox):
        raise TypeError(f"{sandbox} was not observed on this cluster")
    return sandbox
