"""The ``localcube`` platform: localcube's admin API (``/localcube/v1/...``), and the process
of a localcube the suite started itself (a restart keeping its state, a sibling with a low
concurrency limit)."""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import os
import signal
from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from hamcrest import assert_that

from acceptance.core.evidence import describe_response, redact
from acceptance.core.matchers import succeeded
from acceptance.core.runtimes import STATEFUL_FIXTURE, Runtime
from acceptance.core.settings import SETTINGS, ConfigError, Given, Setting, read_setting
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
    configured_capabilities,
    configured_refused_tokens,
    configured_tokens,
    given_urls,
)
from acceptance.platforms.own_localcube import READ_TIMEOUT, OwnLocalcube
from acceptance.platforms.registry import Adapter, RunSettings
from agentcube_contract.picod_command import PicodCommand, PicodCommandError


class LocalcubePlatform(Platform):
    """localcube's admin API (/localcube/v1/...), on the port that serves everything."""

    name = "localcube"
    # Killing a sandbox signals the pid localcube reports: `capabilities_of` adds
    # SANDBOX_KILL only for a localcube on this machine (a loopback URL). Every namespace
    # exists in localcube, so runtimes may be applied beside the one under test.
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
        super().__init__(transport, base_url)
        self._own = own
        self._is_router = is_router

    @property
    def _admin(self) -> str:
        return f"{self._base_url}/localcube/v1"

    def apply_runtime(self, manifest: dict[str, Any]) -> Runtime:
        response = self._transport.request("POST", f"{self._admin}/runtimes", json=manifest)
        assert_that(response, succeeded("localcube to apply the runtime"))
        return Runtime.of_manifest(manifest)

    def delete_runtime(self, runtime: Runtime) -> None:
        path = f"{runtime.kind.plural}/{quote(runtime.namespace)}/{quote(runtime.name)}"
        response = self._transport.request("DELETE", f"{self._admin}/runtimes/{path}")
        if response.status_code not in (200, 404):
            raise AssertionError(f"could not delete {runtime}: {describe_response(response)}")

    def _sandboxes(self) -> list[dict[str, Any]]:
        response = self._transport.request("GET", f"{self._admin}/sandboxes")
        assert_that(response, succeeded("localcube to list its sandboxes"))
        sandboxes: list[dict[str, Any]] = response.json()["sandboxes"]
        return sandboxes

    def sandbox_of(self, session_id: str) -> Sandbox | None:
        return self.sandboxes_of([session_id]).get(session_id)

    def sandboxes_of(self, session_ids: Iterable[str]) -> dict[str, Sandbox]:
        wanted = set(session_ids)
        return {
            entry["sessionId"]: Sandbox(entry["sandboxId"], entry.get("pid"))
            for entry in self._sandboxes()
            if entry.get("sessionId") in wanted
        }

    def session_count(self) -> int:
        return sum(1 for entry in self._sandboxes() if entry.get("sessionId") is not None)

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

    def _runtime_entry(self, runtime: Runtime) -> dict[str, Any] | None:
        response = self._transport.request("GET", f"{self._admin}/runtimes")
        assert_that(response, succeeded("localcube to list its runtimes"))
        wanted = (runtime.kind.kind, runtime.namespace, runtime.name)
        return next(
            (
                entry
                for entry in response.json()["runtimes"]
                if (entry["kind"], entry["namespace"], entry["name"]) == wanted
            ),
            None,
        )

    def has_runtime(self, runtime: Runtime) -> bool:
        return self._runtime_entry(runtime) is not None

    def router_read_timeout(self) -> float | None:
        """Its `--read-timeout` where it is the Router; None behind a Router of one's own or
        from a localcube older than that route."""
        if not self._is_router:
            return None
        response = self._transport.request("GET", f"{self._admin}/router")
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


def capabilities_of(url: str, *, own: bool) -> frozenset[str]:
    """What a localcube at `url` offers: its admin API always; killing sandboxes when it runs
    on this machine (its pids are ours to signal); a restart and a limited sibling when the
    suite started it."""
    available = set(LocalcubePlatform.capabilities)
    if _on_this_machine(url):
        available.add(SANDBOX_KILL)
    if own:
        available |= {ROUTER_RESTART, OVERLOAD}
    return frozenset(available)


def _on_this_machine(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


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
                    f"localcube keeps running at {own.url} (pid {own.pid}, log "
                    f"{own.log_path}); stop it with: kill {own.pid}",
                    f"its callers' tokens, one file each, are in {own.token_dir}: "
                    f"export AGENTCUBE_API_TOKEN=$(cat {own.token_dir}/api_token)",
                ]
            )
        code = own.stop()
        if code != 0:
            return Closing(
                [f"localcube exited with code {code} on SIGTERM; its log: {own.log_path}"]
            )
        return Closing()


def open_localcube(run: RunSettings, environ: Mapping[str, str]) -> LocalcubeTarget:
    """The localcube at the URLs given, else one the suite starts (raises TargetStartError)."""
    settings = run.suite
    if settings.router_url is None:
        own = OwnLocalcube.start(settings, run.adapter_settings[PICOD_COMMAND.name])
        issued: dict[str, Any] = dict(own.tokens)  # its issuer's tokens, for the run
        settings = dataclasses.replace(settings, **issued)
        url = own.url
        offered = capabilities_of(url, own=True)
    else:
        own = None
        url, workload_manager_url = given_urls(settings, LocalcubePlatform.name)
        offered = capabilities_of(url, own=False)
    tokens = configured_tokens(settings)
    capabilities = configured_capabilities(offered, settings, tokens)
    return LocalcubeTarget(
        url,
        url if own else workload_manager_url,
        *tokens,
        capabilities,
        configured_refused_tokens(settings),
        own=own,
    )


def parse_picod_command(text: str) -> str:
    try:
        PicodCommand.parse(text)
    except PicodCommandError as error:
        raise ValueError(f"is not a command localcube can run: {error}") from None
    return text


PICOD_COMMAND = Setting(
    "picod_command",
    "AGENTCUBE_PICOD_COMMAND",
    parse_picod_command,
    None,
    "The command a localcube the suite starts runs every code-interpreter sandbox with "
    "(its `--picod-command`), e.g. `/path/to/picod --port {port} --workspace {workspace}`: "
    "the whole suite against your own PicoD build (docs/own-picod.md). Not with "
    "`router_url`.",
    shown="unset: localcube's own PicoD-compatible daemon",
)
ROUTER_URL = next(setting for setting in SETTINGS if setting.name == "router_url")


def load_localcube_settings(
    userdata: Mapping[str, str], environ: Mapping[str, str]
) -> dict[str, Any]:
    """Its one setting, `picod_command`, which only a localcube the suite starts can use."""
    command = read_setting(PICOD_COMMAND, userdata, environ)
    if command and read_setting(ROUTER_URL, userdata, environ):
        raise ConfigError(
            "setting picod_command applies only to the localcube the suite starts: "
            "leave router_url unset to use it"
        )
    return {PICOD_COMMAND.name: command}


def own_localcube_defaults(given: Given) -> Mapping[str, str]:
    """When the suite starts localcube: the read timeout it gives it, and the fixture's
    stateful interpreter if it runs its own PicoD, which serves it (a PicoD of one's own,
    `picod_command`, has no kernel)."""
    if "router_url" in given:
        return {}
    if "picod_command" in given:
        return {"router_read_timeout": READ_TIMEOUT}
    return {"router_read_timeout": READ_TIMEOUT, "stateful_interpreter": STATEFUL_FIXTURE}


ADAPTER = Adapter(
    LocalcubePlatform.name,
    open_localcube,
    settings=(PICOD_COMMAND,),
    load_settings=load_localcube_settings,
    given_defaults=own_localcube_defaults,
    docs="docs/own-picod.md",
)
