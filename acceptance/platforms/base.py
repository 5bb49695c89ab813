"""The Platform interface: what the suite can do beside calling the Router and the
WorkloadManager, by capability (scenarios ask with ``@requires.<name>``): an adapter offers
some, the target as configured others (``configured_capabilities``); and the Target."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

import requests

from acceptance.core import forgeries
from acceptance.core.runtimes import Runtime
from acceptance.core.settings import ConfigError, Settings
from acceptance.core.transport import Transport

RUNTIME_ADMIN = "runtime-admin"
SANDBOX_OBSERVATION = "sandbox-observation"
SANDBOX_KILL = "sandbox-kill"
ROUTER_RESTART = "router-restart"
AUTH = "auth"
SECOND_SUBJECT = "second-subject"
WORKLOAD_MANAGER_SESSIONS = "workload-manager-sessions"
SHORT_TIMEOUT_AGENT = "short-timeout-agent"
OVERLOAD = "overload"
ADMIN = "admin"
STATEFUL_INTERPRETER = "stateful-interpreter"
NEIGHBOUR_NAMESPACE = "neighbour-namespace"
NO_ROLE_SUBJECT = "no-role-subject"
EXPIRED_TOKEN = "expired-token"
OTHER_AUDIENCE_TOKEN = "other-audience-token"
OTHER_ISSUER_TOKEN = "other-issuer-token"
FORGED_TOKENS = "forged-tokens"
# The tokens a Router must refuse that only the issuer's key can make, by the setting that
# gives each and the capability it brings.
REFUSED_TOKEN_SETTINGS = {
    "no_role_api_token": NO_ROLE_SUBJECT,
    "expired_api_token": EXPIRED_TOKEN,
    "other_audience_api_token": OTHER_AUDIENCE_TOKEN,
    "other_issuer_api_token": OTHER_ISSUER_TOKEN,
}
CAPABILITIES = {
    RUNTIME_ADMIN: "apply and delete runtime resources",
    SANDBOX_OBSERVATION: "observe the sandbox that serves a session and the warm pools",
    SANDBOX_KILL: "kill the sandbox that serves a session",
    ROUTER_RESTART: "restart the Router, keeping its session store",
    AUTH: "require a bearer token, with the token of a subject",
    SECOND_SUBJECT: "tell two subjects apart, with the tokens of both",
    WORKLOAD_MANAGER_SESSIONS: "open sessions at the WorkloadManager and use them through the "
    "Router",
    SHORT_TIMEOUT_AGENT: "provide an echo agent with a short idle timeout",
    OVERLOAD: "put a Router whose concurrency limit is known under load",
    ADMIN: "call as a subject with the admin role, which may use any session",
    STATEFUL_INTERPRETER: "run code in an interpreter whose sessions keep their variables",
    NEIGHBOUR_NAMESPACE: "apply runtimes in a namespace beside the one under test",
    NO_ROLE_SUBJECT: "call as a subject without the role the Router requires",
    EXPIRED_TOKEN: "present an expired token of the caller's issuer",
    OTHER_AUDIENCE_TOKEN: "present a token of the caller's issuer for another audience",
    OTHER_ISSUER_TOKEN: "present a token signed with the issuer's key that names another issuer",
    FORGED_TOKENS: "forge tokens from the caller's: unsigned, signed by an unpublished key, "
    "HMAC-signed with the issuer's public key",
}
# How to obtain a capability that no platform choice alone gives.
CAPABILITY_HINTS = {
    ROUTER_RESTART: "the suite can restart a localcube only when it started it itself",
    AUTH: "set api_token for a target that requires tokens",
    SECOND_SUBJECT: "set api_token and second_api_token for a target that requires tokens",
    SHORT_TIMEOUT_AGENT: "set short_timeout_agent to a deployed AgentRuntime with a short "
    "sessionTimeout, or use a platform that can apply runtimes",
    WORKLOAD_MANAGER_SESSIONS: "upstream's Router refuses sessions opened at the "
    "WorkloadManager (they have no owner) unless the caller has the admin role: set "
    "admin_api_token",
    OVERLOAD: "declare the Router's limit with -D max_concurrent_requests=N",
    ADMIN: "set api_token and admin_api_token for a target that requires tokens",
    STATEFUL_INTERPRETER: "upstream has no stateful interpreter yet (its issue #223): set "
    "stateful_interpreter to one the target serves",
    NEIGHBOUR_NAMESPACE: "set neighbour_namespace to a namespace where the suite may apply "
    "runtimes, with its role bound there (docs/kubernetes.md)",
    **{
        capability: f"set {setting} (python -m oidc_issuer writes one)"
        for setting, capability in REFUSED_TOKEN_SETTINGS.items()
    },
    FORGED_TOKENS: "set api_token to an OIDC access token (a JWT) whose issuer's discovery "
    "document and keys the suite can read",
}


@dataclass(frozen=True)
class Sandbox:
    """A sandbox as the platform shows it. `pid` is set when it is a local process."""

    sandbox_id: str
    pid: int | None = None

    def __str__(self) -> str:
        return f"sandbox {self.sandbox_id}" + (f" (pid {self.pid})" if self.pid else "")


class Platform:
    """The interface, and as it is the ``none`` platform's: HTTP only, no capability. An
    adapter overrides what its capabilities cover."""

    name: ClassVar[str] = "none"
    capabilities: ClassVar[frozenset[str]] = frozenset()

    def _missing(self, capability: str) -> AssertionError:
        return AssertionError(f"platform {self.name!r} cannot {CAPABILITIES[capability]}")

    def apply_runtime(self, manifest: dict[str, Any]) -> Runtime:
        """Create or replace a runtime resource and return it once usable."""
        raise self._missing(RUNTIME_ADMIN)

    def delete_runtime(self, runtime: Runtime) -> None:
        raise self._missing(RUNTIME_ADMIN)

    def check_can_apply(self, manifest: dict[str, Any]) -> None:
        """Raise AssertionError saying why applying this runtime would fail, creating nothing."""

    def has_runtime(self, runtime: Runtime) -> bool | None:
        """None when the platform cannot tell without starting a sandbox (HTTP cannot)."""
        return None

    def router_read_timeout(self) -> float | None:
        """In seconds, where the platform can read it (else the setting holds)."""
        return None

    def sandbox_of(self, session_id: str) -> Sandbox | None:
        """The sandbox serving this session, or None when the platform knows of none."""
        raise self._missing(SANDBOX_OBSERVATION)

    def sandboxes_of(self, session_ids: Iterable[str]) -> dict[str, Sandbox]:
        """By session id, those without a sandbox left out."""
        found = {session_id: self.sandbox_of(session_id) for session_id in session_ids}
        return {session_id: sandbox for session_id, sandbox in found.items() if sandbox is not None}

    def session_count(self) -> int | None:
        """The sessions of every namespace (upstream's collector indexes them all together)."""
        return None

    def is_running(self, sandbox: Sandbox) -> bool:
        """Whether the sandbox still exists in any form (listed, or its process alive)."""
        raise self._missing(SANDBOX_OBSERVATION)

    def warm_pool_size(self, runtime: Runtime) -> int:
        raise self._missing(SANDBOX_OBSERVATION)

    def warm_sandboxes(self, runtime: Runtime) -> frozenset[Sandbox]:
        """Those waiting in the runtime's pool; a claimed one keeps its sandbox_id."""
        raise self._missing(SANDBOX_OBSERVATION)

    def kill_sandbox(self, sandbox: Sandbox) -> None:
        """Abruptly: SIGKILL, or a pod deleted with a one-second grace."""
        raise self._missing(SANDBOX_KILL)

    def is_killed(self, sandbox: Sandbox) -> bool:
        """Whether a killed sandbox is dead as far as the platform can show."""
        return not self.is_running(sandbox)

    def restart_router(self) -> None:
        """Restart the Router, keeping its store; return once it serves again."""
        raise self._missing(ROUTER_RESTART)

    def concurrency_limited_router(self, limit: int) -> AbstractContextManager[str]:
        """A Router with this concurrency limit, by its URL, while in use."""
        raise self._missing(OVERLOAD)

    def evidence(self, session_ids: Iterable[str]) -> str:
        """What the platform shows of these sessions, for a failure report; never raises."""
        return f"Platform evidence: platform {self.name!r} shows nothing beyond HTTP"


class TargetStartError(Exception):
    """A target the suite starts itself did not come up; the message says why."""


@dataclass(frozen=True)
class Closing:
    """What letting go of a target met: problems, and what it kept for a person to inspect."""

    problems: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)


@dataclass
class Target:
    """The target of the run, resolved once at its start (``acceptance.platforms.target``):
    the URLs, the tokens, the platform and what the run can do with it. As it is, the
    ``none`` platform's; each other platform subclasses it."""

    router_url: str
    workload_manager_url: str
    api_token: str | None = field(repr=False)
    second_api_token: str | None = field(repr=False)
    admin_api_token: str | None = field(repr=False)
    capabilities: frozenset[str]
    # Tokens a Router must refuse, by the setting that gave them (REFUSED_TOKEN_SETTINGS).
    refused_tokens: Mapping[str, str] = field(default_factory=dict, repr=False)
    # What the run's first lines tell of the target beside the preflight's checks.
    account: tuple[str, ...] = ()
    # The runtimes created for the run (by `prepare`, or a scenario), rather than found.
    created_runtimes: AbstractSet[Runtime] = frozenset()

    platform_name: ClassVar[str] = Platform.name

    @classmethod
    def configured(
        cls, urls: tuple[str, str], settings: Settings, offered: frozenset[str], /, **extra: Any
    ) -> Self:
        """At these URLs (Router, WorkloadManager) with the tokens of `settings`, able to do
        what a platform that `offered` these capabilities can do there."""
        return cls(
            *urls,
            settings.api_token,
            settings.second_api_token,
            settings.admin_api_token,
            configured_capabilities(offered, settings),
            configured_refused_tokens(settings),
            **extra,
        )

    def callers_tokens(self) -> dict[str, str]:
        """By their setting's name: what no sandbox may ever receive."""
        callers = ("api_token", "second_api_token", "admin_api_token")
        return {name: getattr(self, name) for name in callers if getattr(self, name)}

    def platform(self, transport: Transport) -> Platform:
        """The scenario's adapter, making its calls with `transport`."""
        return Platform()

    def prepare(self, settings: Settings) -> None:
        """Once the target answers ready: make what the features need, as `settings` name it."""

    def close(self, *, keep: bool) -> Closing:
        """Let go of the target once, at the end of the run; `keep`: keep what the sessions
        kept for inspection need."""
        return Closing()


def configured_capabilities(offered: frozenset[str], settings: Settings) -> frozenset[str]:
    """What a platform `offered` can do, with what the target as configured adds. Sessions
    opened at the WorkloadManager can be used through the Router by an admin, or by anyone
    where no token is required."""
    token, admin, runtimes = settings.api_token, settings.admin_api_token, RUNTIME_ADMIN in offered
    refused = configured_refused_tokens(settings) if token else {}
    present: dict[str, object] = {
        AUTH: token,
        SECOND_SUBJECT: token and settings.second_api_token,
        WORKLOAD_MANAGER_SESSIONS: admin or not token,
        ADMIN: token and admin,
        OVERLOAD: settings.max_concurrent_requests,
        STATEFUL_INTERPRETER: settings.stateful_interpreter,
        SHORT_TIMEOUT_AGENT: settings.short_timeout_agent or runtimes,
        NEIGHBOUR_NAMESPACE: settings.neighbour_namespace and runtimes,
        FORGED_TOKENS: token and _forgeable(token, settings.request_timeout),
        **dict.fromkeys((REFUSED_TOKEN_SETTINGS[name] for name in refused), True),
    }
    return frozenset(offered) | {capability for capability, given in present.items() if given}


# What only a target that checks tokens can do: a target that answers calls without any
# token (acceptance.run.preflight finds it) loses these, and gains what a caller without a
# token can do.
TOKEN_CAPABILITIES = frozenset(
    {AUTH, SECOND_SUBJECT, ADMIN, FORGED_TOKENS, *REFUSED_TOKEN_SETTINGS.values()}
)
# Why a scenario that needs one of them is skipped on such a target.
TOKENS_IGNORED = (
    "the target answers calls that carry no token, so it checks none (set must_authenticate "
    "to stop the run instead)"
)


def without_token_checks(capabilities: frozenset[str]) -> frozenset[str]:
    """What a run can do against a target that ignores tokens: as without any token."""
    return (capabilities - TOKEN_CAPABILITIES) | {WORKLOAD_MANAGER_SESSIONS}


def configured_refused_tokens(settings: Settings) -> dict[str, str]:
    """The tokens a Router must refuse that the run was given, by setting name."""
    given = {name: getattr(settings, name) for name in REFUSED_TOKEN_SETTINGS}
    return {name: token for name, token in given.items() if token}


def _forgeable(api_token: str, timeout: float) -> bool:
    """Whether the caller's token is a JWT whose issuer's published key can be read, so
    that every forgery of acceptance.core.forgeries can be made from it."""
    try:
        forgeries.published_public_key_pem(api_token, lambda url: fetch_json(url, timeout))
    except ValueError:
        return False
    return True


def fetch_json(url: str, timeout: float) -> Any:
    """A public document of the caller's issuer (its discovery document, its keys)."""
    answer = requests.get(url, timeout=timeout)
    answer.raise_for_status()
    return answer.json()


def given_urls(settings: Settings, platform: str) -> tuple[str, str]:
    """The Router's and the WorkloadManager's URLs as given (the WorkloadManager's defaults
    to the Router's); raises ConfigError when no Router is configured."""
    if settings.router_url is None:
        raise ConfigError(
            f"setting platform={platform} needs router_url: the suite starts a localcube only "
            "as platform localcube"
        )
    return settings.router_url, settings.workload_manager_url or settings.router_url
