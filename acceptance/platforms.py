"""Platform adapters: what the suite can do beside calling the Router and WorkloadManager.

Scenarios ask for capabilities with `@requires.<name>`. A platform adapter may offer:

- ``runtime-admin``: apply and delete runtime resources (a derived echo agent with a short
  sessionTimeout, for the idle-timeout scenarios);
- ``sandbox-observation``: see which sandbox serves a session, whether it still runs, and
  the sandboxes waiting in a warm pool;
- ``sandbox-kill``: kill the sandbox that serves a session;
- ``router-restart``: restart the Router, keeping its session store.

Two more belong to the target as configured rather than to an adapter (``run_capabilities``):
``auth`` (tokens of two subjects) and ``overload`` (a Router whose concurrency limit is
known). ``localcube`` offers everything through its admin API and, when the suite started
it, through its process; ``none`` offers nothing beyond HTTP. The Kubernetes adapter
implements the same interface with the custom resources and the pods labelled
``runtime.agentcube.io/session-id``.
"""

from __future__ import annotations

import ipaddress
import json
import os
import signal
from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol
from urllib.parse import quote, urlsplit

from hamcrest import assert_that

from acceptance.evidence import describe_response, redact
from acceptance.matchers import succeeded
from acceptance.runtimes import Runtime, RuntimeKind
from acceptance.settings import ConfigError, Settings
from acceptance.transport import Transport

RUNTIME_ADMIN = "runtime-admin"
SANDBOX_OBSERVATION = "sandbox-observation"
SANDBOX_KILL = "sandbox-kill"
ROUTER_RESTART = "router-restart"
AUTH = "auth"
OVERLOAD = "overload"
CAPABILITIES = {
    RUNTIME_ADMIN: "apply and delete runtime resources",
    SANDBOX_OBSERVATION: "observe the sandbox that serves a session and the warm pools",
    SANDBOX_KILL: "kill the sandbox that serves a session",
    ROUTER_RESTART: "restart the Router, keeping its session store",
    AUTH: "require bearer tokens, with the tokens of two subjects",
    OVERLOAD: "put a Router whose concurrency limit is known under load",
}
# How to obtain a capability that no platform choice alone gives.
CAPABILITY_HINTS = {
    ROUTER_RESTART: "the suite can restart a localcube only when it started it itself",
    AUTH: "set api_token and second_api_token for a target that requires tokens",
    OVERLOAD: "declare the Router's limit with -D max_concurrent_requests=N",
}


class OwnLocalcube(Protocol):
    """The localcube process the suite started, which the localcube adapter controls."""

    def restart(self) -> None: ...

    def limited(self, limit: int) -> AbstractContextManager[str]:
        """A second localcube with this concurrency limit, by its URL, while in use."""
        ...


@dataclass(frozen=True)
class Sandbox:
    """A sandbox as the platform shows it. `pid` is set when it is a local process."""

    sandbox_id: str
    pid: int | None = None

    def __str__(self) -> str:
        return f"sandbox {self.sandbox_id}" + (f" (pid {self.pid})" if self.pid else "")


class Platform:
    """The interface; an adapter overrides what its capabilities cover."""

    name: ClassVar[str]
    capabilities: ClassVar[frozenset[str]]

    def __init__(self, transport: Transport, base_url: str) -> None:
        self._transport = transport
        self._base_url = base_url

    def _missing(self, capability: str) -> AssertionError:
        return AssertionError(f"platform {self.name!r} cannot {CAPABILITIES[capability]}")

    def apply_runtime(self, manifest: dict[str, Any]) -> Runtime:
        """Create or replace a runtime resource and return it once usable."""
        raise self._missing(RUNTIME_ADMIN)

    def delete_runtime(self, runtime: Runtime) -> None:
        raise self._missing(RUNTIME_ADMIN)

    def sandbox_of(self, session_id: str) -> Sandbox | None:
        """The sandbox serving this session, or None when the platform knows of none."""
        raise self._missing(SANDBOX_OBSERVATION)

    def is_running(self, sandbox: Sandbox) -> bool:
        """Whether the sandbox still exists in any form (listed, or its process alive)."""
        raise self._missing(SANDBOX_OBSERVATION)

    def warm_pool_size(self, runtime: Runtime) -> int:
        """The runtime's warmPoolSize (0 without a pool)."""
        raise self._missing(SANDBOX_OBSERVATION)

    def warm_sandboxes(self, runtime: Runtime) -> frozenset[Sandbox]:
        """The sandboxes waiting in the runtime's warm pool now; once one is claimed,
        `sandbox_of` its session returns it under the same sandbox_id."""
        raise self._missing(SANDBOX_OBSERVATION)

    def kill_sandbox(self, sandbox: Sandbox) -> None:
        """Kill the sandbox abruptly (SIGKILL, or a pod deleted without grace)."""
        raise self._missing(SANDBOX_KILL)

    def restart_router(self) -> None:
        """Restart the Router and return once it serves again; its store is kept."""
        raise self._missing(ROUTER_RESTART)

    def concurrency_limited_router(self, limit: int) -> AbstractContextManager[str]:
        """A Router with this concurrency limit, by its URL, while in use."""
        raise self._missing(OVERLOAD)

    def evidence(self, session_ids: Iterable[str]) -> str:
        """What the platform shows of these sessions, for a failure report; never raises."""
        return f"Platform evidence: platform {self.name!r} shows nothing beyond HTTP"


class NoPlatform(Platform):
    """HTTP only: scenarios that need a capability are skipped before they start."""

    name = "none"
    capabilities = frozenset()


class LocalcubePlatform(Platform):
    """localcube's admin API (/localcube/v1/...), on the port that serves everything."""

    name = "localcube"
    # Killing a sandbox signals the pid localcube reports: run_capabilities adds
    # SANDBOX_KILL only for a localcube on this machine (a loopback URL).
    capabilities = frozenset({RUNTIME_ADMIN, SANDBOX_OBSERVATION})

    def __init__(
        self, transport: Transport, base_url: str, own: OwnLocalcube | None = None
    ) -> None:
        super().__init__(transport, base_url)
        self._own = own

    @property
    def _admin(self) -> str:
        return f"{self._base_url}/localcube/v1"

    def apply_runtime(self, manifest: dict[str, Any]) -> Runtime:
        response = self._transport.request(
            "POST", f"{self._admin}/runtimes", authenticated=False, json=manifest
        )
        assert_that(response, succeeded("localcube to apply the runtime"))
        metadata = manifest["metadata"]
        kind = next(kind for kind in RuntimeKind if kind.kind == manifest["kind"])
        return Runtime(kind, metadata["namespace"], metadata["name"])

    def delete_runtime(self, runtime: Runtime) -> None:
        path = f"{runtime.kind.plural}/{quote(runtime.namespace)}/{quote(runtime.name)}"
        response = self._transport.request(
            "DELETE", f"{self._admin}/runtimes/{path}", authenticated=False
        )
        if response.status_code not in (200, 404):
            raise AssertionError(f"could not delete {runtime}: {describe_response(response)}")

    def _sandboxes(self) -> list[dict[str, Any]]:
        response = self._transport.request("GET", f"{self._admin}/sandboxes", authenticated=False)
        assert_that(response, succeeded("localcube to list its sandboxes"))
        return response.json()["sandboxes"]

    def sandbox_of(self, session_id: str) -> Sandbox | None:
        for entry in self._sandboxes():
            if entry.get("sessionId") == session_id:
                return Sandbox(entry["sandboxId"], entry.get("pid"))
        return None

    def evidence(self, session_ids: Iterable[str]) -> str:
        """localcube's account of the sessions' sandboxes (process, state, times, workspace)."""
        wanted = set(session_ids)
        try:
            entries = [entry for entry in self._sandboxes() if entry.get("sessionId") in wanted]
        except AssertionError as error:
            return f"localcube sandboxes could not be read: {redact(str(error))}"
        lines = [f"localcube sandboxes of the scenario's sessions ({len(entries)}):"]
        lines += [f"  {redact(json.dumps(entry, sort_keys=True))}" for entry in entries]
        return "\n".join(lines)

    def warm_pool_size(self, runtime: Runtime) -> int:
        response = self._transport.request("GET", f"{self._admin}/runtimes", authenticated=False)
        assert_that(response, succeeded("localcube to list its runtimes"))
        for entry in response.json()["runtimes"]:
            if (entry["kind"], entry["namespace"], entry["name"]) == (
                runtime.kind.kind,
                runtime.namespace,
                runtime.name,
            ):
                return int(entry["warmPoolSize"])
        raise AssertionError(f"localcube does not serve {runtime}")

    def warm_sandboxes(self, runtime: Runtime) -> frozenset[Sandbox]:
        return frozenset(
            Sandbox(entry["sandboxId"], entry.get("pid"))
            for entry in self._sandboxes()
            if entry.get("state") == "warm"
            and entry.get("alive")
            and (entry.get("kind"), entry.get("namespace"), entry.get("runtime"))
            == (runtime.kind.kind, runtime.namespace, runtime.name)
        )

    def kill_sandbox(self, sandbox: Sandbox) -> None:
        if sandbox.pid is None:
            raise AssertionError(f"localcube shows no process for {sandbox}")
        os.killpg(sandbox.pid, signal.SIGKILL)  # the sandbox leads its own process group

    def restart_router(self) -> None:
        if self._own is None:
            raise self._missing(ROUTER_RESTART)
        self._own.restart()

    def concurrency_limited_router(self, limit: int) -> AbstractContextManager[str]:
        if self._own is None:
            raise self._missing(OVERLOAD)
        return self._own.limited(limit)

    def is_running(self, sandbox: Sandbox) -> bool:
        listed = any(
            entry.get("sandboxId") == sandbox.sandbox_id and entry.get("alive")
            for entry in self._sandboxes()
        )
        return listed or (sandbox.pid is not None and _process_running(sandbox.pid))


def _process_running(pid: int) -> bool:
    """Whether a local process exists and has not ended (a zombie has ended)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    status = Path(f"/proc/{pid}/status")
    try:
        return "\nState:\tZ" not in status.read_text()
    except OSError:
        return True


_PLATFORMS: dict[str, type[Platform]] = {"localcube": LocalcubePlatform, "none": NoPlatform}


def platform_class(name: str) -> type[Platform]:
    """The adapter for a configured platform name; ConfigError when there is none yet."""
    if name == "kubernetes":
        # Imported on demand: it loads the kubernetes client, and it imports this module.
        from acceptance.kubernetes.platform import KubernetesPlatform

        return KubernetesPlatform
    try:
        return _PLATFORMS[name]
    except KeyError:
        raise ConfigError(
            f"setting platform: {name!r} has no adapter yet (available: "
            f"{', '.join([*_PLATFORMS, 'kubernetes'])}); use -D platform=none to run the "
            "HTTP-only scenarios"
        ) from None


def make_platform(
    name: str, transport: Transport, base_url: str, own: OwnLocalcube | None = None
) -> Platform:
    """The adapter for one scenario; `own` is the localcube the suite started, if any."""
    if name == LocalcubePlatform.name:
        return LocalcubePlatform(transport, base_url, own)
    return platform_class(name)(transport, base_url)


def run_capabilities(settings: Settings, *, started_localcube: bool) -> frozenset[str]:
    """What this run can do: the adapter's capabilities, plus those of the target as
    configured (tokens of two subjects, a declared concurrency limit) and of a localcube the
    suite started (a restart keeping its state, a second one with a low limit), and the
    sandbox processes of a localcube on this machine."""
    assert settings.platform is not None
    available = set(platform_class(settings.platform).capabilities)
    if settings.api_token and settings.second_api_token:
        available.add(AUTH)
    own = started_localcube and settings.platform == LocalcubePlatform.name
    if settings.max_concurrent_requests or own:
        available.add(OVERLOAD)
    if own:
        available.add(ROUTER_RESTART)
    if settings.platform == LocalcubePlatform.name and _on_this_machine(settings.router_url):
        available.add(SANDBOX_KILL)
    return frozenset(available)


def _on_this_machine(url: str | None) -> bool:
    host = urlsplit(url or "").hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
