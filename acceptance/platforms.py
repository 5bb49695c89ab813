"""Platform adapters: what the suite can do beside calling the Router and WorkloadManager.

A platform may offer two capabilities, which scenarios ask for with `@requires.<name>`:

- ``runtime-admin``: apply and delete runtime resources (a derived echo agent with a short
  sessionTimeout, for the idle-timeout scenarios);
- ``sandbox-observation``: see which sandbox serves a session and whether it still runs.

``localcube`` offers both through its admin API; ``none`` offers neither. A Kubernetes
adapter (a later issue) implements the same interface with the custom resources and the
pods labelled ``runtime.agentcube.io/session-id``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import quote

from hamcrest import assert_that

from acceptance.evidence import describe_response
from acceptance.matchers import succeeded
from acceptance.runtimes import Runtime, RuntimeKind
from acceptance.settings import ConfigError
from acceptance.transport import Transport

RUNTIME_ADMIN = "runtime-admin"
SANDBOX_OBSERVATION = "sandbox-observation"
CAPABILITIES = {
    RUNTIME_ADMIN: "apply and delete runtime resources",
    SANDBOX_OBSERVATION: "observe the sandbox that serves a session",
}


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


class NoPlatform(Platform):
    """HTTP only: scenarios that need a capability are skipped before they start."""

    name = "none"
    capabilities = frozenset()


class LocalcubePlatform(Platform):
    """localcube's admin API (/localcube/v1/...), on the port that serves everything."""

    name = "localcube"
    capabilities = frozenset(CAPABILITIES)

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
    try:
        return _PLATFORMS[name]
    except KeyError:
        raise ConfigError(
            f"setting platform: {name!r} has no adapter yet (available: "
            f"{', '.join(_PLATFORMS)}); use -D platform=none to run the HTTP-only scenarios"
        ) from None


def make_platform(name: str, transport: Transport, base_url: str) -> Platform:
    return platform_class(name)(transport, base_url)
