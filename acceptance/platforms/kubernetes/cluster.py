"""The ``kubernetes`` platform on an AgentCube cluster: the run's ``Cluster``, which is also
each scenario's Platform there, and the run's target (``ClusterTarget``), which holds it."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from hamcrest import described_as, none

from acceptance.core.polling import eventually
from acceptance.core.runtimes import Runtime, RuntimeKind
from acceptance.core.settings import ConfigError, Settings
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
from acceptance.platforms.kubernetes.api import JSON, KubeError, ObjectRef, Resource
from acceptance.platforms.kubernetes.connection import connect, served_agent_sandbox
from acceptance.platforms.kubernetes.evidence import describe_sessions
from acceptance.platforms.kubernetes.fixtures import RESOURCE_OF_KIND, Fixtures
from acceptance.platforms.kubernetes.objects import SessionObjects
from acceptance.platforms.kubernetes.observation import Observer
from acceptance.platforms.kubernetes.port_forward import (
    ServiceForward,
    in_cluster_service,
    local_url,
)
from acceptance.platforms.kubernetes.settings import KubernetesSettings, ServiceRef, named_by
from acceptance.platforms.kubernetes.tokens import client_credentials_token, service_account_token

# Not 0: a grace-0 delete is a force delete, which removes the pod object at once while its
# kubelet may still be stopping the containers, so "gone" would prove nothing about the
# process. One second is the immediate shutdown of `kubectl delete --now`.
KILL_GRACE_SECONDS = 1


@dataclass(frozen=True)
class KubernetesSandbox(Sandbox):
    """With the uids of its SandboxClaim, Sandbox and pod as seen while it served: a new
    object under an old name is not it."""

    objects: tuple[ObjectRef, ...] = ()

    @property
    def pod(self) -> ObjectRef | None:
        return next((ref for ref in self.objects if ref.resource is Resource.POD), None)

    def __str__(self) -> str:
        return f"sandbox {self.sandbox_id}" + (f" (pod {self.pod.name})" if self.pod else "")


class Cluster(Platform):
    """One run's hold on a cluster: the API connection, the fixtures it created, the port
    forwards it opened and the token it minted; made once at the start of the run, closed at
    its end. Each scenario's Platform there: runtimes as custom resources; sandboxes seen as
    pods, Sandboxes and SandboxClaims; a kill as a pod deletion; a Router restart as a
    rollout restart of its Deployment."""

    name = "kubernetes"
    capabilities = frozenset({RUNTIME_ADMIN, SANDBOX_OBSERVATION, SANDBOX_KILL, ROUTER_RESTART})

    def __init__(
        self,
        settings: KubernetesSettings,
        environ: Mapping[str, str],
        *,
        namespace: str,
        poll_interval: float,
    ) -> None:
        """Connect and check the cluster; ConfigError (ClusterUnreachable) when it cannot
        serve the suite."""
        self.api = api = connect(settings, environ)
        self.settings = settings
        self.poll_interval = poll_interval
        self.observer = Observer(api, namespace)
        self.fixtures = Fixtures(self.observer, settings, poll_interval)
        self._forwards: list[ServiceForward] = []

    def endpoints(
        self, router_url: str | None, workload_manager_url: str | None
    ) -> tuple[str, str]:
        """The Router's and the WorkloadManager's base URLs: as given, or the local ends of
        port forwards opened now when port_forward is true."""
        settings = self.settings
        if not settings.port_forward:
            if not (router_url and workload_manager_url):
                raise ConfigError(
                    "setting platform=kubernetes needs router_url and workload_manager_url "
                    "(AGENTCUBE_ROUTER_URL, AGENTCUBE_WORKLOAD_MANAGER_URL), or -D "
                    f"port_forward=true to forward to {settings.router_service} and "
                    f"{settings.workload_manager_service} in {settings.system_namespace}"
                )
            return router_url, workload_manager_url
        if router_url or workload_manager_url:
            raise ConfigError(
                "setting port_forward=true opens its own port forwards: leave router_url "
                "and workload_manager_url unset, or set port_forward=false"
            )
        router, workload_manager = (
            self._forward(
                settings.system_namespace,
                getattr(settings, f"{name}_service"),
                f"{name}_url",
                (f"{name}_service", "system_namespace"),
            ).url
            for name in ("router", "workload_manager")
        )
        return router, workload_manager

    def token(self, api_token: str | None, *, timeout: float) -> str | None:
        """The bearer token of the run, from token_source; registered as a secret."""
        settings = self.settings
        source = settings.token_source
        if source == "static":
            return api_token
        if api_token:
            raise ConfigError(
                f"setting api_token is set and token_source={source}: choose one of the two"
            )
        if source == "service-account":
            return service_account_token(
                self.api, settings.system_namespace, settings.service_account
            )
        assert settings.oidc_token_url and settings.oidc_client_id and settings.oidc_client_secret
        url, host = settings.oidc_token_url, None
        service = in_cluster_service(url)
        if service is not None and settings.port_forward:
            forward = self._forward(service[1], service[0], "oidc_token_url", ("oidc_token_url",))
            url, host = local_url(url, forward), urlsplit(settings.oidc_token_url).netloc
        return client_credentials_token(
            url, settings.oidc_client_id, settings.oidc_client_secret, host=host, timeout=timeout
        )

    def _forward(
        self, namespace: str, service: ServiceRef, setting: str, named: tuple[str, ...]
    ) -> ServiceForward:
        """A forward to the Service `named` settings name; `setting` is the URL a person
        would give instead."""
        forward = ServiceForward(self.api, namespace, service, named_by=named_by(*named))
        self._forwards.append(forward)
        forward.check(setting)
        return forward

    def close(self, *, keep: bool = False) -> Closing:
        """Close the forwards and the connection; delete what the run created unless `keep`
        (a CodeInterpreter's deletion would take its kept sessions along), else tell what is
        left and how to reopen the forwards that kept sessions' URLs go through. The problems
        met, the forwards' during the run among them."""
        kept = self.fixtures.leftovers() + [
            f"{forward.url} was {forward}, closed at the end of the run; reopen it with: "
            f"{forward.kubectl}"
            for forward in self._forwards
        ]
        problems = [] if keep else self.fixtures.delete_created()
        for forward in self._forwards:
            forward.close()
            problems += sorted(set(forward.problems))
        self._forwards.clear()
        self.api.close()
        return Closing(problems, kept if keep else [])

    def apply_runtime(self, manifest: dict[str, Any]) -> Runtime:
        """Create the runtime: it must not exist, the suite never replaces a cluster's own."""
        runtime = self.fixtures.create(manifest)
        self.fixtures.wait_usable(runtime)
        return runtime

    def delete_runtime(self, runtime: Runtime) -> None:
        self.fixtures.delete(runtime)

    def check_can_apply(self, manifest: dict[str, Any]) -> None:
        self.fixtures.create(manifest, dry_run=True)

    def sandbox_of(self, session_id: str) -> KubernetesSandbox | None:
        """None once its deletion has begun."""
        objects = self.observer.session_objects(session_id)
        return _sandbox(objects) if objects.serving else None

    def session_count(self) -> int:
        """In the runtimes' namespace, the only one the suite may list (rbac.yaml)."""
        return len(self.observer.session_ids())

    def is_running(self, sandbox: Sandbox) -> bool:
        return any(self.observer.exists(ref) for ref in _observed(sandbox).objects)

    def warm_sandboxes(self, runtime: Runtime) -> frozenset[Sandbox]:
        """A pod still starting is not waiting yet (as localcube lists only live ones)."""
        pool = self.observer.warm_pool(runtime.name)
        return frozenset(_sandbox(objects) for objects in pool if objects.ready)

    def kill_sandbox(self, sandbox: Sandbox) -> None:
        """The pod stays Terminating until its kubelet has stopped its containers; its
        Sandbox may then start a new pod under the same name."""
        pod = self._killable_pod(sandbox)
        if not self.api.delete(pod, grace_seconds=KILL_GRACE_SECONDS):
            raise AssertionError(f"{sandbox} has no pod left to kill")

    def is_killed(self, sandbox: Sandbox) -> bool:
        """Whether the pod it was seen with, by uid, is gone (so its containers stopped); the
        Sandbox and its claim stay until the WorkloadManager's collector removes the session."""
        return not self.observer.exists(self._killable_pod(sandbox))

    @staticmethod
    def _killable_pod(sandbox: Sandbox) -> ObjectRef:
        pod = _observed(sandbox).pod
        if pod is None:
            raise AssertionError(f"{sandbox} was seen without a pod, so none can be killed")
        return pod

    def has_runtime(self, runtime: Runtime) -> bool:
        resource = RESOURCE_OF_KIND[runtime.kind]
        return self.api.get(resource, runtime.namespace, runtime.name) is not None

    def warm_pool_size(self, runtime: Runtime) -> int:
        if runtime.kind is not RuntimeKind.CODE_INTERPRETER:
            return 0
        obj = self.api.get(Resource.CODE_INTERPRETER, runtime.namespace, runtime.name)
        if obj is None:
            raise AssertionError(f"{runtime} does not exist")
        return int(obj["spec"].get("warmPoolSize") or 0)

    def restart_router(self) -> None:
        """As `kubectl rollout restart` and `kubectl rollout status` do; a Router that is no
        Deployment by that name fails naming the setting."""
        namespace, name = self.settings.system_namespace, self.settings.router_deployment
        try:
            self.api.restart_deployment(namespace, name)
        except KubeError as error:
            if error.status != 404:
                raise
            raise AssertionError(
                f"{error}: the suite restarts the Router as the Deployment "
                f"{named_by('router_deployment', 'system_namespace')} name; give the Router's "
                "Deployment there, or leave the Router restart out (it needs a Deployment)"
            ) from None
        eventually(
            lambda: rollout_pending(self.api.deployment(namespace, name)),
            described_as("the rollout complete", none()),
            timeout=self.settings.cluster_timeout,
            poll=self.poll_interval,
            waiting_for=f"Deployment {namespace}/{name} to roll out (cluster_timeout)",
        )

    def evidence(self, session_ids: Iterable[str]) -> str:
        """Pod status, events and last log lines of each session, redacted."""
        return describe_sessions(self.observer, session_ids)


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


def _sandbox(objects: SessionObjects) -> KubernetesSandbox:
    """Named by its Sandbox (a warm-pool Sandbox keeps its name when claimed), else its pod."""
    named = objects.sandbox or objects.pod
    assert named is not None, "a sandbox is seen through its Sandbox or its pod"
    refs = tuple(ref for ref, _ in objects.present())
    return KubernetesSandbox(sandbox_id=named["metadata"]["name"], objects=refs)


def _observed(sandbox: Sandbox) -> KubernetesSandbox:
    if not isinstance(sandbox, KubernetesSandbox):
        raise TypeError(f"{sandbox} was not observed on this cluster")
    return sandbox


@dataclass
class ClusterTarget(Target):
    """A cluster's Router and WorkloadManager, reached as given or through port forwards, with
    the token of `token_source`."""

    cluster: Cluster | None = None

    platform_name = Cluster.name

    @classmethod
    def open(
        cls, settings: Settings, cluster_settings: KubernetesSettings, environ: Mapping[str, str]
    ) -> ClusterTarget:
        """Connect, open the endpoints and get the token, closing what it opened when it
        fails; raises ConfigError."""
        cluster = Cluster(
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
        return cls.configured(
            urls,
            settings,
            Cluster.capabilities,
            account=(served_agent_sandbox(cluster.api),),
            created_runtimes=cluster.fixtures.created.keys(),
            cluster=cluster,
        )

    def _cluster(self) -> Cluster:
        assert self.cluster is not None, "the cluster target is closed"
        return self.cluster

    def platform(self, transport: Transport) -> Platform:
        return self._cluster()

    def prepare(self, settings: Settings) -> None:
        self._cluster().fixtures.ensure(settings)

    def close(self, *, keep: bool) -> Closing:
        if self.cluster is None:
            return Closing()
        cluster, self.cluster = self.cluster, None
        return cluster.close(keep=keep)
