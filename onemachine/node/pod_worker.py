"""One pod on this node, from its sandbox to its end, in a thread of its own: the kubelet's
pod worker. Each pass of its loop reconciles the pod as last seen with what runs: the
sandbox made, each container started (its image mapped to a local command, its environment
resolved), an ended container restarted as restartPolicy says with the kubelet's back-off,
readiness probes run when due, and the status patched when it changed.

When the pod is deleted gracefully (deletionTimestamp), its containers are stopped with
its deletionGracePeriodSeconds as a container runtime stops them, the last status patched,
and the delete finished (grace 0, uid precondition). A pod that is gone from the API (a
force delete) or a node stop has its processes killed at once.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from onemachine.node.api import ApiError, NodeApi, Obj
from onemachine.node.container_logs import OutputRecorder
from onemachine.node.images import ImageMap, ImageNotMapped
from onemachine.node.pod_env import EnvError, Missing, Reader, container_env, expand
from onemachine.node.pod_logs import chosen_instance
from onemachine.node.pod_runtime import (
    ContainerLaunch,
    ContainerProcess,
    ContainerStartError,
    ExitStatus,
    PodSandbox,
    SandboxError,
)
from onemachine.node.probes import ProbeError, ReadinessProbe
from onemachine.node.status import ContainerView, pod_status, timestamp

_LOG = logging.getLogger("onemachine.node")
_DEFAULT_GRACE_SECONDS = 30
_IDLE_SECONDS = 5.0  # the longest a worker sleeps with nothing due (a missed wake-up heals)
_NEVER = math.inf
_NO_INIT_CONTAINERS = "init containers are not supported by the onemachine node"


class Sandboxes(Protocol):
    """Where pods' sandboxes come from: pod_runtime.PodRuntime."""

    def create(self, namespace: str, name: str, uid: str) -> PodSandbox: ...

    def remove_logs(self, namespace: str, name: str, uid: str) -> None: ...


@dataclass(frozen=True)
class Backoff:
    """The kubelet's crash-loop back-off: the first restart at once, then `initial` doubling
    up to `maximum`; a container that ran for twice `maximum` starts over (kubelet
    pkg/kubelet/kubelet.go: 10 s and 5 min)."""

    initial: float = 10.0
    maximum: float = 300.0

    def delay(self, failures: int) -> float:
        return 0.0 if failures <= 1 else min(self.initial * 2 ** (failures - 2), self.maximum)


@dataclass(frozen=True)
class NodeContext:
    """What every pod worker of a node shares."""

    api: NodeApi
    sandboxes: Sandboxes
    images: ImageMap
    node_name: str
    host_ip: str
    backoff: Backoff


@dataclass
class _Container:
    spec: Obj
    view: ContainerView
    process: ContainerProcess | None = None
    probe: ReadinessProbe | _NeverReady | None = None
    failures: int = 0  # ends in a row, for the back-off
    next_start: float = 0.0  # monotonic; _NEVER once it is not to run again
    started_at: str = ""
    env: dict[str, str] = field(default_factory=dict)


class PodWorker:
    """The worker of one pod (one uid). update() hands it the pod as watched, gone() says it
    no longer exists, halt() stops it for a node stop; each wakes its loop."""

    def __init__(self, pod: Obj, node: NodeContext) -> None:
        self._pod = pod
        self._node = node
        metadata = pod["metadata"]
        self.key = f"{metadata['namespace']}/{metadata['name']}"
        self.name = metadata["name"]
        self._uid = metadata["uid"]
        self._outputs: dict[str, OutputRecorder] = {}  # containerID -> its instance's log
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._gone = self._halted = False
        self._sandbox: PodSandbox | None = None
        self._pod_ip: str | None = None
        self._start_time = timestamp()
        self._reported: Obj | None = None
        self._containers = [
            _Container(spec, ContainerView(spec["name"], spec.get("image", "")))
            for spec in (pod.get("spec") or {}).get("containers") or []
        ]
        if (pod.get("spec") or {}).get("initContainers"):
            # No AgentCube or agent-sandbox pod has them; refused rather than skipped.
            for container in self._containers:
                container.view.state = {
                    "waiting": {
                        "reason": "CreateContainerConfigError",
                        "message": _NO_INIT_CONTAINERS,
                    }
                }
                container.next_start = _NEVER
        for container in self._containers:
            for unrun in ("livenessProbe", "startupProbe"):
                if unrun in container.spec:
                    name = container.spec["name"]
                    _LOG.warning("pod %s: container %s: its %s is not run", self.key, name, unrun)
        self._thread = threading.Thread(target=self._run, name=f"pod {self.key}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def update(self, pod: Obj) -> None:
        with self._lock:
            self._pod = pod
        self._wake.set()

    def gone(self) -> None:
        self._gone = True
        self._wake.set()

    def halt(self) -> None:
        self._halted = True
        self._wake.set()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    # The loop.

    def container_names(self) -> list[str]:
        """The containers of the pod's spec (the kubelet's GetContainerSpec looks at these)."""
        spec = self._pod.get("spec") or {}
        return [
            container["name"]
            for key in ("containers", "initContainers", "ephemeralContainers")
            for container in spec.get(key) or []
        ]

    def log_of(self, container: str, previous: bool) -> OutputRecorder:
        """The log of the container's instance a `pods/log` request means (pod_logs);
        LogUnavailable if there is none."""
        views = [c.view for c in self._containers]
        return self._outputs[chosen_instance(self.name, views, container, previous)]

    def _run(self) -> None:
        try:
            while True:
                with self._lock:
                    pod = self._pod
                if self._halted or self._gone:
                    why = "the node stops" if self._halted else "it was deleted from the API"
                    self._close(0, why)
                    if self._gone:
                        self._remove_logs()
                    return
                if pod["metadata"].get("deletionTimestamp"):
                    self._terminate(pod)
                    return
                self._sync(pod)
                self._wake.wait(self._next_due())
                self._wake.clear()
        except Exception:
            _LOG.exception("pod %s: its worker failed; its processes are stopped", self.key)
            self._close(0, "its worker failed")

    def _next_due(self) -> float:
        now = time.monotonic()
        due = [_IDLE_SECONDS]
        for container in self._containers:
            if container.process is None:
                due.append(container.next_start - now)
            elif container.probe is not None:
                due.append(container.probe.next_at - now)
        return max(0.0, min(due))

    def _sync(self, pod: Obj) -> None:
        if self._sandbox is None and any(c.next_start < _NEVER for c in self._containers):
            self._make_sandbox(pod)
        for container in self._containers:
            self._step(container, pod)
        ended = all(c.next_start == _NEVER and c.process is None for c in self._containers)
        if self._sandbox is not None and ended:
            self._close(0, "all its containers ended")
        self._report(pod)

    # Containers.

    def _step(self, container: _Container, pod: Obj) -> None:
        """Reap the container if it ended, start it if due, probe it if due."""
        self._reap(container, pod)
        if (
            self._sandbox is not None
            and container.process is None
            and container.next_start <= time.monotonic()
        ):
            self._start(container, pod)
        probe, now = container.probe, time.monotonic()
        due = container.process is not None and probe is not None and probe.next_at <= now
        if due and probe.run(now):  # type: ignore[union-attr]
            name = container.spec["name"]
            _LOG.info("pod %s: container %s ready=%s", self.key, name, probe.ready)  # type: ignore[union-attr]
        container.view.ready = container.process is not None and (probe is None or probe.ready)

    def _make_sandbox(self, pod: Obj) -> None:
        metadata = pod["metadata"]
        try:
            self._sandbox = self._node.sandboxes.create(
                metadata["namespace"], metadata["name"], metadata["uid"]
            )
        except (SandboxError, OSError, RuntimeError) as error:
            _LOG.warning("pod %s: no sandbox: %s", self.key, error)
            for container in self._containers:
                container.view.state = {
                    "waiting": {"reason": "CreatePodSandboxError", "message": str(error)}
                }
                container.next_start = time.monotonic() + self._node.backoff.initial
            return
        self._pod_ip = str(self._sandbox.address)
        _LOG.info("pod %s: sandbox at %s", self.key, self._pod_ip)

    def _start(self, container: _Container, pod: Obj) -> None:
        spec, view = container.spec, container.view
        assert self._sandbox is not None and self._pod_ip is not None
        try:
            env = container_env(
                pod,
                spec,
                pod_ip=self._pod_ip,
                host_ip=self._node.host_ip,
                read_secret=self._reader("secret"),
                read_config_map=self._reader("configmap"),
            )
            argv = self._node.images.resolve(
                spec.get("image", ""),
                [expand(word, env) for word in spec["command"]] if "command" in spec else None,
                [expand(word, env) for word in spec["args"]] if "args" in spec else None,
            )
        except ImageNotMapped as error:
            # The map is fixed for the node's life: nothing will make this image runnable.
            view.state = {"waiting": {"reason": "ErrImagePull", "message": str(error)}}
            container.next_start = _NEVER
            _LOG.warning("pod %s: container %s: %s", self.key, spec["name"], error)
            return
        except EnvError as error:
            view.state = {
                "waiting": {"reason": "CreateContainerConfigError", "message": str(error)}
            }
            container.next_start = time.monotonic() + self._node.backoff.initial
            _LOG.warning("pod %s: container %s: %s", self.key, spec["name"], error)
            return
        if "terminated" in view.state or "terminated" in view.last_state:
            view.restart_count += 1
        launch = ContainerLaunch(
            spec["name"], argv, env, spec.get("workingDir"), view.restart_count
        )
        started = time.time()
        try:
            container.process = self._sandbox.start_container(launch)
        except ContainerStartError as error:
            _LOG.warning("pod %s: container %s: %s", self.key, spec["name"], error)
            terminated = {"exitCode": 128, "reason": "StartError", "message": str(error)}
            self._ended(container, pod, {**terminated, "startedAt": timestamp(started)}, 0.0)
            return
        container.env = env
        container.started_at = timestamp(container.process.started_at)
        view.container_id = f"onemachine://{self._uid}/{spec['name']}/{view.restart_count}"
        self._outputs[view.container_id] = container.process.output
        view.state = {"running": {"startedAt": container.started_at}}
        _LOG.info(
            "pod %s: container %s started (pid %s): %s",
            self.key,
            spec["name"],
            container.process.pid,
            argv[0],
        )
        container.probe = self._probe(container)
        self._wake_when_ended(container.process)

    def _wake_when_ended(self, process: ContainerProcess) -> None:
        """The loop wakes as soon as the container ends (a thread waits for it)."""

        def wait() -> None:
            process.wait()
            self._wake.set()

        threading.Thread(target=wait, name=f"wait {self.key}", daemon=True).start()

    def _probe(self, container: _Container) -> ReadinessProbe | _NeverReady | None:
        spec = container.spec.get("readinessProbe")
        if not spec:
            return None
        try:
            probe = ReadinessProbe(
                spec,
                container.spec,
                self._pod_ip or "",
                lambda argv, t: self._exec(container, argv, t),
            )
        except ProbeError as error:
            _LOG.warning(
                "pod %s: container %s: %s: never ready", self.key, container.spec["name"], error
            )
            return _NeverReady()
        probe.started(time.monotonic())
        return probe

    def _exec(self, container: _Container, argv: Sequence[str], timeout: float) -> int | None:
        """An exec probe's command, inside the pod with the container's environment."""
        assert self._sandbox is not None
        command = self._node.images.resolve(container.spec.get("image", ""), argv, None)
        name = f"{container.spec['name']}-probe"
        try:
            process = self._sandbox.start_container(
                ContainerLaunch(name, command, container.env, container.spec.get("workingDir"))
            )
        except ContainerStartError as error:
            _LOG.info("pod %s: probe of %s: %s", self.key, container.spec["name"], error)
            return None
        ended = process.wait(timeout)
        if ended is None:
            process.kill()
            return None
        return ended.exit_code

    def _reap(self, container: _Container, pod: Obj) -> None:
        if container.process is None:
            return
        ended = container.process.poll()
        if ended is None:
            return
        ran = time.time() - container.process.started_at
        self._ended(container, pod, _terminated(ended, container), ran)

    def _ended(self, container: _Container, pod: Obj, terminated: Obj, ran: float) -> None:
        """A container ended: restarted after its back-off if restartPolicy says so."""
        view = container.view
        container.process = container.probe = None
        terminated = {"containerID": view.container_id, **terminated, "finishedAt": timestamp()}
        if not terminated["containerID"]:
            del terminated["containerID"]
        policy = (pod.get("spec") or {}).get("restartPolicy", "Always")
        restart = policy == "Always" or (policy == "OnFailure" and terminated["exitCode"] != 0)
        _LOG.info(
            "pod %s: container %s ended, exit code %s%s",
            self.key,
            container.spec["name"],
            terminated["exitCode"],
            " (restarting)" if restart else "",
        )
        if not restart:
            view.state = {"terminated": terminated}
            container.next_start = _NEVER
            return
        backoff = self._node.backoff
        container.failures = 1 if ran >= 2 * backoff.maximum else container.failures + 1
        delay = backoff.delay(container.failures)
        view.last_state = {"terminated": terminated}
        metadata = pod["metadata"]
        pod_name = f"{metadata['name']}_{metadata['namespace']}({self._uid})"
        message = f"back-off {delay:g}s restarting failed container={container.spec['name']}"
        view.state = {
            "waiting": {"reason": "CrashLoopBackOff", "message": f"{message} pod={pod_name}"}
        }
        container.next_start = time.monotonic() + delay

    def _reader(self, kind: str) -> Reader:
        read = self._node.api.read_secret if kind == "secret" else self._node.api.read_config_map

        def reader(namespace: str, name: str) -> Obj:
            try:
                return read(namespace, name)
            except ApiError as error:
                if error.status == 404:
                    raise Missing(name) from error
                raise EnvError(f"{kind} {namespace}/{name}: {error}") from error

        return reader

    # The status and the end.

    def _report(self, pod: Obj, *, deleted: bool = False) -> None:
        status = pod_status(
            pod.get("status") or {},
            [c.view for c in self._containers],
            restart_policy=(pod.get("spec") or {}).get("restartPolicy", "Always"),
            sandbox_ready=self._sandbox is not None,
            pod_ip=self._pod_ip,
            host_ip=self._node.host_ip,
            start_time=self._start_time,
            generation=pod["metadata"].get("generation") or 0,
            terminal=deleted,
        )
        if status == self._reported:
            return
        metadata = pod["metadata"]
        try:
            updated = self._node.api.patch_pod_status(
                metadata["namespace"], metadata["name"], status
            )
        except ApiError as error:
            _LOG.warning("pod %s: status not patched: %s", self.key, error)
            return
        self._reported = status
        if status["phase"] != (pod.get("status") or {}).get("phase"):
            _LOG.info("pod %s: %s", self.key, status["phase"])
        with self._lock:  # unless the watch brought a newer pod meanwhile
            if _version(self._pod) <= _version(updated):
                self._pod = updated

    def _terminate(self, pod: Obj) -> None:
        metadata = pod["metadata"]
        grace = metadata.get("deletionGracePeriodSeconds")
        if grace is None:
            grace = (pod.get("spec") or {}).get(
                "terminationGracePeriodSeconds", _DEFAULT_GRACE_SECONDS
            )
        self._close(float(grace), f"it is deleted (grace {grace}s)")
        self._report(pod, deleted=True)
        try:
            self._node.api.finish_delete(metadata["namespace"], metadata["name"], self._uid)
        except ApiError as error:
            if error.status not in (404, 409):  # gone already, or another pod of that name
                _LOG.warning("pod %s: delete not finished: %s", self.key, error)
                return
        _LOG.info("pod %s: deleted", self.key)
        self._remove_logs()

    def _remove_logs(self) -> None:
        """A deleted pod's logs go with it (a node stop leaves them in its root)."""
        metadata = self._pod["metadata"]
        self._node.sandboxes.remove_logs(metadata["namespace"], metadata["name"], self._uid)

    def _close(self, grace: float, why: str) -> None:
        """Stop every container (with `grace`, as a container runtime does), then end the
        sandbox; the containers' ends are recorded for the last status. A shorter delete
        meanwhile starts the stop over with its grace, as the kubelet's pod worker does
        (pod_workers.go calculateEffectiveGracePeriod: a grace only ever shortens, and the
        stop is redone with it); a force delete or a node stop kills at once."""
        if self._sandbox is None:
            return
        _LOG.info("pod %s: stopping, as %s", self.key, why)
        closing = threading.Thread(target=self._sandbox.close, args=(grace,), daemon=True)
        closing.start()
        deadline, killed = _NEVER, False
        while closing.is_alive():
            self._wake.wait(0.1)
            self._wake.clear()
            if (shorter := self._shorter_grace(grace)) is not None:
                _LOG.info("pod %s: grace period shortened to %gs", self.key, shorter)
                grace, deadline = shorter, time.monotonic() + shorter
            cut_short = self._gone or self._halted or time.monotonic() >= deadline
            if cut_short and not killed:
                _LOG.info("pod %s: grace period over: killing it", self.key)
                for container in self._containers:
                    if container.process is not None:
                        container.process.kill()
                killed = True
            closing.join(0.05)
        self._sandbox = None
        for container in self._containers:
            if container.process is not None:
                ended = container.process.poll() or ExitStatus(137, 9)
                container.view.state = {
                    "terminated": {**_terminated(ended, container), "finishedAt": timestamp()}
                }
                container.process = container.probe = None
            container.view.ready = False
            container.next_start = _NEVER

    def _shorter_grace(self, grace: float) -> float | None:
        """The pod's deletionGracePeriodSeconds if a later delete made it shorter than
        `grace`."""
        with self._lock:
            shorter = self._pod["metadata"].get("deletionGracePeriodSeconds")
        return float(shorter) if shorter is not None and shorter < grace else None


class _NeverReady:
    """The probe of a container whose probe cannot run: it stays unready."""

    ready = False
    next_at = _NEVER

    def run(self, now: float) -> bool:
        return False


def _version(pod: Obj) -> int:
    return int(pod["metadata"].get("resourceVersion") or 0)


def _terminated(ended: ExitStatus, container: _Container) -> Obj:
    terminated: Obj = {
        "exitCode": ended.exit_code,
        "reason": "Completed" if ended.exit_code == 0 else "Error",
        "startedAt": container.started_at,
    }
    if container.view.container_id:
        terminated["containerID"] = container.view.container_id
    return terminated
