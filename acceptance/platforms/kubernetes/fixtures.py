"""The runtime resources the features rely on, in the namespace under test: only the missing
ones are created, and at the end only what the run created is deleted, by uid (an object
re-created under the same name meanwhile is left alone). An existing one is never modified.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from hamcrest import described_as, none

from acceptance.core.polling import eventually
from acceptance.core.runtimes import Role, Runtime, RuntimeKind, fixture_manifest
from acceptance.core.settings import ConfigError, Settings
from acceptance.platforms.kubernetes.api import JSON, KubeError, ObjectRef, Resource
from acceptance.platforms.kubernetes.observation import Observer
from acceptance.platforms.kubernetes.settings import KubernetesSettings

MANAGED_BY = ("app.kubernetes.io/managed-by", "agentcube-acceptance")
# The fixture (fixtures/runtimes) each role is created from when it is missing.
FIXTURE_OF_ROLE: Mapping[Role, str] = {
    Role.ECHO_AGENT: "echo-agent",
    Role.PYTHON_INTERPRETER: "python-interpreter",
    Role.WARM_INTERPRETER: "python-interpreter-warm",
}
# Why a CodeInterpreter with a warm pool may stay not ready: upstream's WorkloadManager
# makes its SandboxTemplate, and then its status, only once it holds the Router's public key
# (pkg/workloadmanager/codeinterpreter_controller.go:65-74,135), which it reads from the
# Secret the Router creates at its start (pkg/router/jwt.go:44,52-57,177).
WAITS_FOR_ROUTER_KEY = (
    ": with a warm pool and PicoD's authentication, the WorkloadManager waits for the "
    "Router's public key in Secret picod-router-identity (in the namespace of the Router, "
    "its AGENTCUBE_NAMESPACE), which the Router creates when it starts: is it running?"
)
RESOURCE_OF_KIND: Mapping[RuntimeKind, Resource] = {
    kind: Resource[kind.name] for kind in RuntimeKind
}


def render(manifest: Mapping[str, Any], settings: KubernetesSettings) -> JSON:
    """The manifest as the suite creates it: the target's images, and the label that tells a
    person who made it."""
    body = copy.deepcopy(dict(manifest))
    metadata = body["metadata"]
    metadata["labels"] = {**(metadata.get("labels") or {}), MANAGED_BY[0]: MANAGED_BY[1]}
    spec = body["spec"]
    if body["kind"] == RuntimeKind.AGENT_RUNTIME.kind and settings.agent_image:
        for container in spec["podTemplate"]["spec"]["containers"]:
            container["image"] = settings.agent_image
    if body["kind"] == RuntimeKind.CODE_INTERPRETER.kind and settings.interpreter_image:
        spec["template"]["image"] = settings.interpreter_image
    return body


class Fixtures:
    """The runtime resources of this run: found or created, and the created ones by uid."""

    def __init__(self, observer: Observer, settings: KubernetesSettings, poll: float) -> None:
        self._api, self._namespace = observer.api, observer.namespace
        self._observer = observer
        self._settings = settings
        self._poll = poll
        self.created: dict[Runtime, ObjectRef] = {}  # by the runtime, its object

    def ensure(self, suite: Settings) -> None:
        """Create the runtimes the features use that are missing, named as the suite settings
        say, then wait until every one is usable (AssertionError naming cluster_timeout). A
        403 becomes a ConfigError that says what to grant."""
        runtimes = []
        for role, fixture in FIXTURE_OF_ROLE.items():
            name = getattr(suite, str(role.setting))
            manifest = fixture_manifest(role.kind, fixture)
            manifest["metadata"] |= {"name": name, "namespace": self._namespace}
            try:
                if self._api.get(RESOURCE_OF_KIND[role.kind], self._namespace, name) is None:
                    self.create(manifest)
            except KubeError as error:
                if error.status == 403:
                    raise ConfigError(
                        f"{error}. Grant the kubeconfig user get, create and delete on "
                        f"agentruntimes and codeinterpreters in {self._namespace}, or apply "
                        "fixtures/runtimes there yourself"
                    ) from None
                if error.status != 409:  # 409: created by someone else since; theirs
                    raise
            runtimes.append(Runtime.of_manifest(manifest))
        for runtime in runtimes:
            self.wait_usable(runtime)

    def create(self, manifest: Mapping[str, Any], *, dry_run: bool = False) -> Runtime:
        runtime = Runtime.of_manifest(manifest)
        resource = RESOURCE_OF_KIND[runtime.kind]
        body = render(manifest, self._settings)
        created = self._api.create(resource, runtime.namespace, body, dry_run=dry_run)
        if not dry_run:
            self.created[runtime] = ObjectRef.of(resource, created)
        return runtime

    def wait_usable(self, runtime: Runtime) -> None:
        """Until the API shows the runtime usable. The WorkloadManager finds runtimes through
        a cached watch that may lag behind: the first call that opens a session of a runtime
        the run created waits until it is served (World.call, within ready_timeout)."""
        eventually(
            lambda: self._unusable(runtime),
            described_as("usable", none()),
            timeout=self._settings.cluster_timeout,
            poll=self._poll,
            waiting_for=f"{runtime} to be usable (cluster_timeout / AGENTCUBE_CLUSTER_TIMEOUT)",
        )

    def _unusable(self, runtime: Runtime) -> str | None:
        """Why the runtime cannot serve yet, or None. An AgentRuntime has no status: it is
        usable once it exists. A CodeInterpreter reports status.ready, and a warm pool is
        usable once warmPoolSize of its pods are ready."""
        obj = self._api.get(RESOURCE_OF_KIND[runtime.kind], runtime.namespace, runtime.name)
        if obj is None:
            return f"{runtime} does not exist"
        if runtime.kind is RuntimeKind.AGENT_RUNTIME:
            return None
        size = int(obj["spec"].get("warmPoolSize") or 0)
        if not (obj.get("status") or {}).get("ready"):
            return f"{runtime} has no status.ready=true yet" + (
                WAITS_FOR_ROUTER_KEY if size and obj["spec"].get("authMode") != "none" else ""
            )
        if size == 0:
            return None
        ready = sum(waiting.ready for waiting in self._observer.warm_pool(runtime.name))
        return f"{runtime}: {ready} of {size} warm-pool pods ready" if ready < size else None

    def delete(self, runtime: Runtime) -> None:
        """Delete the runtime if this run created it; anything else is left alone."""
        ref = self.created.get(runtime)
        if ref is not None:
            self._api.delete(ref)
            del self.created[runtime]

    def delete_created(self) -> list[str]:
        """Delete, newest first, what this run created; the problems, for the run's report."""
        problems = []
        for runtime in reversed([*self.created]):
            try:
                self.delete(runtime)
            except KubeError as error:
                problems.append(f"{runtime}: {error}")
        return problems

    def leftovers(self) -> list[str]:
        """What this run created and has not deleted, each with the command that deletes it."""
        return [
            f"{runtime}: created by this run; delete it with: kubectl delete "
            f"{ref.resource.qualified} {ref.name} -n {ref.namespace}"
            for runtime, ref in self.created.items()
        ]
