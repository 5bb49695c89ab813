"""The ``localcube`` platform: localcube's admin API (``/localcube/v1/...``), and the process
of a localcube the suite started itself (a restart keeping its state, a sibling with a low
concurrency limit)."""

from __future__ import annotations

import contextlib
import dataclasses
import ipaddress
import json
import os
import signal
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import requests
from hamcrest import assert_that

from acceptance.core.evidence import describe_response, redact
from acceptance.core.matchers import succeeded
from acceptance.core.runtimes import STATEFUL_FIXTURE, Runtime
from acceptance.core.settings import ConfigError, setting
from acceptance.core.transport import Transport
from acceptance.platforms.base import (
    NEIGHBOUR_NAMESPACE,
    OVERLOAD,
    ROUTER_RESTART,
    RUNTIME_ADMIN,
    SANDBOX_KILL,
    SANDBOX_OBSERVATION,
    Closing,
    Platform,
    Sandbox,
    Target,
    given_urls,
)
from acceptance.platforms.own_localcube import READ_TIMEOUT, OwnLocalcube
from acceptance.platforms.registry import Adapter, RunSettings
from agentcube_contract.picod_command import PicodCommand, PicodCommandError


class LocalcubePlatform(Platform):
    """localcube's admin API (/localcube/v1/...), on the port that serves everything."""

    name = "localcube"
    # Every namespace exists in localcube; `capabilities_of` adds the rest.
    capabilities = frozenset({RUNTIME_ADMIN, SANDBOX_OBSERVATION, NEIGHBOUR_NAMESPACE})

    def __init__(
        self,
        transport: Transport,
        base_url: str,
        own: OwnLocalcube | None = None,
        *,
        is_router: bool = True,
    ) -> None:
        """`is_router`: localcube serves the Router's API too, no Router of one's own before it."""
        self._transport = transport
        self._admin = f"{base_url}/localcube/v1"
        self._own = own
        self._is_router = is_router

    def _request(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        return self._transport.request(method, f"{self._admin}/{path}", **kwargs)

    def _listed(self, what: str, **wanted: Any) -> list[dict[str, Any]]:
        """Its runtimes or sandboxes, those whose fields have the `wanted` values."""
        response = self._request("GET", what)
        assert_that(response, succeeded(f"localcube to list its {what}"))
        entries: list[dict[str, Any]] = response.json()[what]
        return [e for e in entries if all(e.get(k) == v for k, v in wanted.items())]

    def apply_runtime(self, manifest: dict[str, Any]) -> Runtime:
        response = self._request("POST", "runtimes", json=manifest)
        assert_that(response, succeeded("localcube to apply the runtime"))
        return Runtime.of_manifest(manifest)

    def delete_runtime(self, runtime: Runtime) -> None:
        path = f"{runtime.kind.plural}/{quote(runtime.namespace)}/{quote(runtime.name)}"
        response = self._request("DELETE", f"runtimes/{path}")
        if response.status_code not in (200, 404):
            raise AssertionError(f"could not delete {runtime}: {describe_response(response)}")

    def sandbox_of(self, session_id: str) -> Sandbox | None:
        return self.sandboxes_of([session_id]).get(session_id)

    def sandboxes_of(self, session_ids: Iterable[str]) -> dict[str, Sandbox]:
        wanted = set(session_ids)
        listed = self._listed("sandboxes")
        return {e["sessionId"]: _sandbox(e) for e in listed if e.get("sessionId") in wanted}

    def session_count(self) -> int:
        return sum(entry.get("sessionId") is not None for entry in self._listed("sandboxes"))

    def evidence(self, session_ids: Iterable[str]) -> str:
        """localcube's account of the sessions' sandboxes (process, state, times, workspace)."""
        wanted = set(session_ids)
        try:
            entries = [e for e in self._listed("sandboxes") if e.get("sessionId") in wanted]
        except AssertionError as error:
            return f"localcube sandboxes could not be read: {redact(str(error))}"
        lines = [f"localcube sandboxes of the scenario's sessions ({len(entries)}):"]
        lines += [f"  {redact(json.dumps(entry, sort_keys=True))}" for entry in entries]
        return "\n".join(lines)

    def _runtime_entry(self, runtime: Runtime) -> dict[str, Any] | None:
        kind, namespace, name = runtime.kind.kind, runtime.namespace, runtime.name
        return next(iter(self._listed("runtimes", kind=kind, namespace=namespace, name=name)), None)

    def has_runtime(self, runtime: Runtime) -> bool:
        return self._runtime_entry(runtime) is not None

    def router_read_timeout(self) -> float | None:
        """Its `--read-timeout` where it is the Router; None behind a Router of one's own or
        from a localcube older than that route."""
        if not self._is_router:
            return None
        response = self._request("GET", "router")
        if response.status_code == 404:
            return None
        assert_that(response, succeeded("localcube to describe its Router"))
        return float(response.json()["readTimeoutSeconds"])

    def warm_pool_size(self, runtime: Runtime) -> int:
        entry = self._runtime_entry(runtime)
        if entry is None:
            raise AssertionError(f"localcube does not serve {runtime}")
        return int(entry["warmPoolSize"])

    def warm_sandboxes(self, runtime: Runtime) -> frozenset[Sandbox]:
        kind, namespace, name = runtime.kind.kind, runtime.namespace, runtime.name
        warm = self._listed("sandboxes", kind=kind, namespace=namespace, runtime=name)
        return frozenset(_sandbox(e) for e in warm if e.get("state") == "warm" and e.get("alive"))

    def kill_sandbox(self, sandbox: Sandbox) -> None:
        if sandbox.pid is None:
            raise AssertionError(f"localcube shows no process for {sandbox}")
        os.killpg(sandbox.pid, signal.SIGKILL)  # the sandbox leads its own process group

    def restart_router(self) -> None:
        if self._own is None:
            raise self._missing(ROUTER_RESTART)
        self._own.restart()

    def concurrency_limited_router(self, limit: int) -> contextlib.AbstractContextManager[str]:
        if self._own is None:
            raise self._missing(OVERLOAD)
        return self._own.limited(limit)

    def is_running(self, sandbox: Sandbox) -> bool:
        listed = self._listed("sandboxes", sandboxId=sandbox.sandbox_id)
        return any(e.get("alive") for e in listed) or (
            sandbox.pid is not None and _process_running(sandbox.pid)
        )


def _sandbox(entry: dict[str, Any]) -> Sandbox:
    return Sandbox(entry["sandboxId"], entry.get("pid"))


def _process_running(pid: int) -> bool:
    """Whether a local process exists and has not ended (a zombie has ended)."""
    try:
        return "\nState:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:  # no such process; another error is not an answer
        return False


def capabilities_of(url: str, *, own: bool) -> frozenset[str]:
    """Killing sandboxes when it runs on this machine (its pids are ours to signal); a restart
    and a limited sibling when the suite started it."""
    available = set(LocalcubePlatform.capabilities)
    if _on_this_machine(url):
        available.add(SANDBOX_KILL)
    if own:
        available |= {ROUTER_RESTART, OVERLOAD}
    return frozenset(available)


def _on_this_machine(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    with contextlib.suppress(ValueError):
        return ipaddress.ip_address(host).is_loopback
    return host == "localhost"


@dataclass
class LocalcubeTarget(Target):
    """A localcube, given by URL or started by the suite (`own`)."""

    own: OwnLocalcube | None = None

    platform_name = LocalcubePlatform.name

    def platform(self, transport: Transport) -> Platform:
        return LocalcubePlatform(
            transport,
            self.workload_manager_url,
            self.own,
            is_router=self.router_url == self.workload_manager_url,
        )

    def close(self, *, keep: bool) -> Closing:
        """Stop the localcube the suite started (it ends its sandboxes on SIGTERM), or
        leave it running while sessions are kept for inspection."""
        if self.own is None:
            return Closing()
        own, self.own = self.own, None
        if keep:
            return Closing(
                kept=[
                    f"localcube keeps running at {own.url} (pid {own.process.pid}, log "
                    f"{own.log_path}); stop it with: kill {own.process.pid}",
                    f"its callers' tokens, one file each, are in {own.token_dir}: "
                    f"export AGENTCUBE_API_TOKEN=$(cat {own.token_dir}/api_token)",
                ]
            )
        code = own.stop()
        problem = f"localcube exited with code {code} on SIGTERM; its log: {own.log_path}"
        return Closing([problem] if code else [])


def open_localcube(run: RunSettings, environ: Mapping[str, str]) -> LocalcubeTarget:
    """The localcube at the URLs given, else one the suite starts (raises TargetStartError)."""
    picod_command = run.adapter_settings.picod_command
    if run.suite.router_url is not None:
        if picod_command:
            raise ConfigError(
                "setting picod_command applies only to the localcube the suite starts: "
                "leave router_url unset to use it"
            )
        urls = given_urls(run.suite, LocalcubePlatform.name)
        return LocalcubeTarget.configured(urls, run.suite, capabilities_of(urls[0], own=False))
    own = OwnLocalcube(run.suite, picod_command)
    issued: dict[str, Any] = dict(own.tokens)  # its issuer's tokens, for the run
    settings = dataclasses.replace(run.suite, **issued)
    offered = capabilities_of(own.url, own=True)
    return LocalcubeTarget.configured((own.url, own.url), settings, offered, own=own)


def parse_picod_command(text: str) -> str:
    try:
        PicodCommand.parse(text)
    except PicodCommandError as error:
        raise ValueError(f"is not a command localcube can run: {error}") from None
    return text


@dataclass(frozen=True)
class LocalcubeSettings:
    picod_command: str | None = setting(
        parse_picod_command,
        None,
        "The command a localcube the suite starts runs every code-interpreter sandbox with "
        "(its `--picod-command`), e.g. `/path/to/picod --port {port} --workspace {workspace}`: "
        "the whole suite against your own PicoD build (docs/own-picod.md). Not with "
        "`router_url`.",
        shown="unset: localcube's own PicoD-compatible daemon",
    )


ADAPTER = Adapter(
    LocalcubePlatform.name,
    open_localcube,
    settings_class=LocalcubeSettings,
    # When the suite starts localcube: the read timeout it gives it, and the fixture's
    # stateful interpreter unless one's own PicoD, which has no kernel, runs the sandboxes.
    defaults_unless_given=(
        ("router_read_timeout", READ_TIMEOUT, frozenset({"router_url"})),
        ("stateful_interpreter", STATEFUL_FIXTURE, frozenset({"router_url", "picod_command"})),
    ),
    docs="docs/own-picod.md",
)
