"""The ``kubernetes`` platform: the Platform interface on a real AgentCube cluster, and the
run's target there.

One KubernetesPlatform per scenario, like the other adapters; the connection, the fixtures
and the port forwards belong to the run's Cluster, which the ClusterTarget holds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from acceptance.core.runtimes import Runtime, RuntimeKind
from acceptance.core.settings import Settings
from acceptance.core.transport import Transport
from acceptance.platforms.base import (
    ROUTER_RESTART,
    RUNTIME_ADMIN,
    SANDBOX_KILL,
    SANDBOX_OBSERVATION,
    Closing,
    Platform,
    Sandbox,
    Target,
)
from acceptance.platforms.kubernetes.api import KubeError, Resource
from acceptance.platforms.kubernetes.cluster import Cluster
from acceptance.platforms.kubernetes.connection import served_agent_sandbox
from acceptance.platforms.kubernetes.evidence import describe_sessions
from acceptance.platforms.kubernetes.fixtures import RESOURCE_OF_KIND
from acceptance.platforms.kubernetes.objects import ObjectRef, pod_ready
from acceptance.platforms.kubernetes.observation import SessionObjects
from acceptance.platforms.kubernetes.rollout import restart_deployment
from acceptance.platforms.kubernetes.settings import KubernetesSettings, named_by

# The grace period of a kill. Not 0: a grace-0 delete is a force delete, which removes the
# pod object at once while its kubelet may still be stopping the containers, so "gone" would
# prove nothing about the process. With a grace period the API keeps the pod Terminating
# until its kubelet reports the containers stopped; one second is the immediate shutdown of
# `kubectl delete --now`. A pod on no node goes at once either way.
KILL_GRACE_SECONDS = 1


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
    a pod deleted with a one-second grace for a kill; a rollout restart of the Router's
    Deployment."""

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

    def check_can_apply(self, manifest: dict[str, Any]) -> None:
        """A dry-run create, which the API server checks as a create (permission, namespace,
        name) and does not store."""
        self._cluster.fixtures.check_create(manifest)

    def sandbox_of(self, session_id: str) -> KubernetesSandbox | None:
        """The sandbox serving the session; None once its deletion has begun. A sandbox taken
        from a warm pool keeps the sandbox_id `warm_sandboxes` gave it."""
        objects = self._cluster.observer.session_objects(session_id)
        return _sandbox(objects) if objects.serving else None

    def session_count(self) -> int:
        """The sessions held in the runtimes' namespace, the only one the suite may list
        (docs/examples/rbac.yaml): no more than the collector indexes across namespaces."""
        return len(self._cluster.observer.session_ids())

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
        """Delete its pod with KILL_GRACE_SECONDS: the pod stays, Terminating, until its
        kubelet has stopped its containers (SIGKILL after that second) and removes it; its
        Sandbox may then start a new pod under the same name."""
        pod = self._killable_pod(sandbox)
        if not self._cluster.api.delete(
            pod.resource, pod.namespace, pod.name, pod.uid, grace_seconds=KILL_GRACE_SECONDS
        ):
            raise AssertionError(f"{sandbox} has no pod left to kill")

    def is_killed(self, sandbox: Sandbox) -> bool:
        """Whether the pod it was seen with, by uid, is gone, which after a graceful delete
        means its kubelet has stopped its containers: a pod agent-sandbox recreated under
        the same name is another, and the Sandbox and its claim stay until the
        WorkloadManager's collector removes the session."""
        return not self._cluster.observer.exists(self._killable_pod(sandbox))

    @staticmethod
    def _killable_pod(sandbox: Sandbox) -> ObjectRef:
        pod = _observed(sandbox).pod
        if pod is None:
            raise AssertionError(f"{sandbox} was seen without a pod, so none can be killed")
        return pod

    def has_runtime(self, runtime: Runtime) -> bool:
        resource = RESOURCE_OF_KIND[runtime.kind]
        return self._cluster.api.get(resource, runtime.namespace, runtime.name) is not None

    def warm_pool_size(self, runtime: Runtime) -> int:
        """The CodeInterpreter's spec.warmPoolSize (0 without a pool)."""
        if runtime.kind is not RuntimeKind.CODE_INTERPRETER:
            return 0
        obj = self._cluster.api.get(Resource.CODE_INTERPRETER, runtime.namespace, runtime.name)
        if obj is None:
            raise AssertionError(f"{runtime} does not exist")
        return int(obj["spec"].get("warmPoolSize") or 0)

    def restart_router(self) -> None:
        """Restart the Router's Deployment and wait until its new pods are available; a
        Router that is no Deployment by that name fails naming the setting."""
        settings = self._cluster.settings
        try:
            restart_deployment(
                self._cluster.api,
                settings.system_namespace,
                settings.router_deployment,
                timeout=settings.cluster_timeout,
                poll=self._cluster.poll_interval,
            )
        except KubeError as error:
            if error.status != 404:
                raise
            raise AssertionError(
                f"{error}: the suite restarts the Router as the Deployment "
                f"{named_by('router_deployment', 'system_namespace')} name; give the Router's "
                "Deployment there, or leave the Router restart out (it needs a Deployment)"
            ) from None

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


@dataclass
class ClusterTarget(Target):
    """A cluster's Router and WorkloadManager, reached as given or through port forwards, with
    the token of `token_source`; the run's fixtures are made once it answers ready."""

    cluster: Cluster | None = None
    settings: Settings | None = None

    platform_name = KubernetesPlatform.name

    @classmethod
    def open(
        cls,
        settings: Settings,
        cluster_settings: KubernetesSettings,
        environ: Mapping[str, str],
    ) -> ClusterTarget:
        """Connect with the adapter's settings, open the endpoints and get the token. What
        it opened is closed again when it fails. Raises ConfigError (ClusterUnreachable
        among them)."""
        cluster = Cluster.connect(
            cluster_settings,
            environ,
            namespace=settings.namespace,
            poll_interval=settings.poll_interval,
        )
        try:
            urls = cluster.endpoints(settings.router_url, settings.workload_manager_url)
            token = cluster.token(settings.api_token, timeout=settings.request_timeout)
        except BaseException:
            cluster.close()
            raise
        settings = dataclasses.replace(settings, api_token=token)
        offered = KubernetesPlatform.capabilities
        return cls.configured(urls, settings, offered, cluster=cluster, settings=settings)

    def platform(self, transport: Transport) -> Platform:
        assert self.cluster is not None, "the cluster target is closed"
        return KubernetesPlatform(transport, self.workload_manager_url, self.cluster)

    def prepare(self) -> None:
        """Create the missing fixture runtimes and wait until they are usable; raises
        AssertionError naming cluster_timeout when they never are."""
        assert self.cluster is not None and self.settings is not None
        self.cluster.ensure_fixtures(self.settings)

    def account(self) -> list[str]:
        assert self.cluster is not None, "the cluster target is closed"
        return [served_agent_sandbox(self.cluster.api)]

    def created_runtimes(self) -> frozenset[Runtime]:
        assert self.cluster is not None, "the cluster target is closed"
        return frozenset(self.cluster.fixtures.created)

    def close(self, *, keep: bool) -> Closing:
        """Delete what the run created (unless kept: a CodeInterpreter's deletion would take
        its kept sessions along), close the forwards and the connection."""
        if self.cluster is None:
            return Closing()
        cluster, self.cluster = self.cluster, None
        kept = cluster.kept_notes() if keep else []
        return Closing(cluster.close(keep_created=keep), kept)
