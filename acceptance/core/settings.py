"""The suite's configuration: each setting a field of ``Settings`` declared once with
``setting(parser, default, meaning)``, read from ``-D <field>`` (first) or its environment
variable (``AGENTCUBE_<FIELD>`` unless declared); an empty value is unset. Timeouts are
settings, so a slower target is one ``-D`` away. docs/configuration.md's table is generated
from ``SETTINGS`` (``python -m docgen.configuration_table``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast
from urllib.parse import urlsplit

from agentcube_contract import names
from agentcube_contract.durations import parse_duration
from agentcube_contract.names import is_dns_label, is_dns_subdomain

# AgentCube releases the suite tells apart: upstream main, and releases before PR #460.
RELEASES = ("main", "pre-460")
# What agentcube_release may be set to: a release, or `auto`, which the preflight resolves.
AUTO_RELEASE = "auto"
# Userdata that belongs to the tools around the suite, not to it: behavex names each worker
# (-D worker_id=N); behave's formatters read `behave.formatter.<name>.*` options.
FOREIGN_USERDATA = ("worker_id", "behave.")


class ConfigError(Exception):
    """A setting has a value the suite cannot use; the message names the setting."""


def parse_url(text: str) -> str:
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("is not an http:// or https:// URL with a host")
    if parts.query or parts.fragment:
        raise ValueError("must not carry a query or fragment")
    try:
        parts.port  # noqa: B018 - evaluated for its validation of the port
    except ValueError as error:
        raise ValueError(f"has a bad port ({error})") from None
    return text.rstrip("/")


def parse_seconds(text: str) -> float:
    try:
        seconds = parse_duration(text)
    except ValueError as error:
        raise ValueError(f"is not a duration such as 5s or 500ms ({error})") from None
    if seconds <= 0:
        raise ValueError("must be a positive duration")
    return seconds


def satisfying(valid: Callable[[str], bool], problem: str) -> Callable[[str], str]:
    """A parser accepting the texts `valid` accepts, and refusing others with `problem`."""

    def parse(text: str) -> str:
        if not valid(text):
            raise ValueError(problem)
        return text

    return parse


def one_of(choices: tuple[str, ...]) -> Callable[[str], str]:
    return satisfying(choices.__contains__, f"must be one of {', '.join(choices)}")


parse_token = satisfying(
    lambda text: not any(map(str.isspace, text)), "must not contain whitespace"
)
parse_token_dir = satisfying(lambda text: Path(text).is_dir(), "is not a directory")


def parse_flag(text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise ValueError("must be true or false")
    return text.lower() == "true"


def parse_positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise ValueError("must be a whole number of at least 1")
    return int(text)


def parse_percentage(text: str) -> float:
    """A share such as 90%, as a fraction."""
    number = text.removesuffix("%")
    try:
        share = float(number) / 100
    except ValueError:
        raise ValueError("is not a percentage such as 90%") from None
    if not text.endswith("%") or not 0 < share <= 1:
        raise ValueError("is not a percentage such as 90%, above 0% and at most 100%")
    return share


parse_directory = satisfying(
    lambda text: not Path(text).exists() or Path(text).is_dir(), "names a file, not a directory"
)
# The same rules localcube applies to the manifests it serves (RFC 1123, as Kubernetes).
resource_name = satisfying(
    is_dns_subdomain, f"is not a valid Kubernetes resource name ({names.DNS_SUBDOMAIN_RULE})"
)
namespace_name = satisfying(
    is_dns_label, f"is not a valid Kubernetes namespace ({names.DNS_LABEL_RULE})"
)


@dataclass(frozen=True)
class Setting:
    """One setting as the user gives it and the docs show it; `default` None: unset;
    `shown`: the default as the docs tell it; `secret`: from the environment only, never
    printed."""

    name: str
    env: str
    parse: Callable[[str], Any]
    default: str | None
    meaning: str
    shown: str = ""
    secret: bool = False

    def describe_default(self) -> str:
        return self.shown or (f"`{self.default}`" if self.default is not None else "unset")


T = TypeVar("T")


def setting(
    parse: Callable[[str], T],
    default: str | None,
    meaning: str,
    *,
    shown: str = "",
    secret: bool = False,
    env: str = "",
) -> T:
    """A field of a settings dataclass holding its Setting (in its metadata, keyed by the
    class); its default is `default` parsed, and a secret one stays out of the repr. Typed
    as the parser's value, so that mypy holds each field's annotation to its parser."""
    field = dataclasses.field(
        default=None if default is None else parse(default),
        repr=not secret,
        metadata={Setting: Setting("", env, parse, default, meaning, shown, secret)},
    )
    return cast(T, field)  # None where unset: the field's annotation says so


def duration(default: str, meaning: str, **more: Any) -> float:
    """A setting holding a positive duration, in seconds."""
    return setting(parse_seconds, default, meaning, **more)


def token(meaning: str, **more: Any) -> str | None:
    """A secret setting holding a bearer token, unset unless given."""
    return setting(parse_token, None, meaning, secret=True, **more)


def declared(settings_class: type) -> tuple[Setting, ...]:
    """The settings a dataclass declares with ``setting``, each named after its field."""
    found = []
    for field in dataclasses.fields(settings_class):
        if Setting in field.metadata:
            declaration: Setting = field.metadata[Setting]
            env = declaration.env or f"AGENTCUBE_{field.name.upper()}"
            found.append(dataclasses.replace(declaration, name=field.name, env=env))
    return tuple(found)


# The settings the user set, as -D or in the environment (an empty value is unset), by name.
Given = frozenset[str]


def given_names(
    settings: Iterable[Setting], userdata: Mapping[str, str], environ: Mapping[str, str]
) -> Given:
    return frozenset(s.name for s in settings if userdata.get(s.name) or environ.get(s.env))


def read_all(
    settings: Iterable[Setting],
    userdata: Mapping[str, str],
    environ: Mapping[str, str],
    defaults: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Each of `settings` read, by name, with the defaults `defaults` gives instead; raise
    ConfigError naming the first that is wrong."""
    defaults = defaults or {}
    return {
        s.name: read_setting(
            dataclasses.replace(s, default=defaults.get(s.name, s.default)), userdata, environ
        )
        for s in settings
    }


@dataclass(frozen=True)
class Settings:
    """The suite's settings, grouped by concern; durations in seconds. The run's resolved
    URLs and tokens are its Target's (``acceptance.platforms.target``)."""

    # Where the target is and what it runs.
    router_url: str | None = setting(
        parse_url,
        None,
        "The Router's base URL.",
        shown="unset: the suite starts localcube with `fixtures/runtimes`",
    )
    workload_manager_url: str | None = setting(
        parse_url,
        None,
        "The WorkloadManager's base URL (sessions are created and deleted there; "
        "localcube's admin API is reached there too).",
        shown="the Router URL",
    )
    platform: str | None = setting(
        satisfying(is_dns_label, f"is not a valid platform name ({names.DNS_LABEL_RULE})"),
        None,
        "What the suite may do beside HTTP calls: `localcube` (admin API), "
        "`kubernetes` (the cluster's API; docs/kubernetes.md), "
        "`none` (HTTP only).",
        shown="`localcube` when the suite starts localcube, else `none`",
    )
    namespace: str = setting(namespace_name, "default", "Namespace of the runtimes under test.")
    neighbour_namespace: str | None = setting(
        namespace_name,
        None,
        "A namespace beside `namespace` where the namespaces scenario applies an echo agent "
        "of the same name, to show that a session is never served by another namespace's "
        "runtime. On a cluster it must exist with the suite's role bound there "
        "(docs/examples/rbac.yaml); the preflight checks that the runtime can be created "
        "there, without creating it.",
        shown="unset: `<namespace>-neighbour` on platform localcube, which serves any "
        "namespace; elsewhere that scenario is skipped",
    )
    agentcube_release: str = setting(
        one_of((AUTO_RELEASE, *RELEASES)),
        AUTO_RELEASE,
        "What the target's AgentCube release supports: `main` (upstream main: the Router's "
        "404 for an unknown or ended session carries `code: SESSION_NOT_FOUND`, and a "
        "session may ask for a `ttl`), or `pre-460` (releases before PR #460, without "
        "either: the scenarios that need them are skipped with the reason). `auto` tells "
        "them apart: the preflight calls the Router with a session id never issued and "
        "holds the run to `main` when the 404 carries that code, to `pre-460` when it "
        "carries none, and the run's first line and its summary say which and why; any "
        "other answer stops the run asking for the setting.",
        env="AGENTCUBE_RELEASE",
    )

    # Tokens and authentication (a token: from the environment or token_dir only, never printed).
    api_token: str | None = token("Bearer token sent on every `/v1/*` call. Never printed.")
    second_api_token: str | None = token(
        "Bearer token of a second subject, for the ownership scenario "
        "(`@requires.second-subject`, which also needs `api_token`). Never printed. A "
        "localcube the suite starts mints both from its own issuer (and refuses them given).",
    )
    admin_api_token: str | None = token(
        "Bearer token of a subject with the admin role, which upstream's Router lets use any "
        "session: the scenarios that open sessions at the WorkloadManager (which records no "
        "owner for them; `@requires.workload-manager-sessions`) call as this subject. "
        "Never printed. A localcube the suite starts mints one from its own issuer.",
    )
    must_authenticate: bool = setting(
        parse_flag,
        "false",
        "`true`: the target must authenticate its callers, so the run stops at once when "
        "the Router answers a call that carries no token. `false`: such a target's "
        "credential scenarios are skipped with that reason (a token set for it is ignored, "
        "and the preflight says so).",
    )
    no_role_api_token: str | None = token(
        "Bearer token of a subject the issuer knows but without the role the Router "
        "requires (its `--jwt-required-role`), for the scenario of the missing role "
        "(`@requires.no-role-subject`). Never printed. A localcube the suite starts gets "
        "one from its own issuer.",
    )
    expired_api_token: str | None = token(
        "An access token of the caller's issuer that has expired (more than upstream's 30 "
        "s of leeway ago), for the scenario that it is refused (`@requires.expired-token`). "
        "Never printed. `python -m oidc_issuer` writes one; a localcube the suite starts "
        "gets one from its own issuer.",
    )
    other_audience_api_token: str | None = token(
        "An access token of the caller's issuer for an audience other than the Router's "
        "`--jwt-audience` (`@requires.other-audience-token`). Never printed. `python -m "
        "oidc_issuer` writes one; a localcube the suite starts gets one.",
    )
    other_issuer_api_token: str | None = token(
        "An access token signed with the issuer's key but naming another issuer "
        "(`@requires.other-issuer-token`). Never printed. `python -m oidc_issuer` writes "
        "one; a localcube the suite starts gets one.",
    )
    token_dir: str | None = setting(
        parse_token_dir,
        None,
        "A directory of token files, one token per file named after its setting "
        "(`api_token`, `second_api_token`, `admin_api_token`, `no_role_api_token`, "
        "`expired_api_token`, `other_audience_api_token`, `other_issuer_api_token`), as "
        "`python -m oidc_issuer --token-dir` writes them: each fills its setting when the "
        "environment does not. Tokens never reach a command line this way.",
        shown="unset: tokens from the environment only",
    )
    workload_manager_token: str | None = token(
        "Bearer token of the calls the suite makes to the WorkloadManager itself (opening and "
        "deleting sessions there), where it is not the Router's token: with the "
        "WorkloadManager's auth on (`--enable-auth`, which upstream PR #433 would have the "
        "chart pass), a Kubernetes service-account token, e.g. `kubectl create token "
        "agentcube-router -n agentcube`. Never printed.",
        shown="unset: the Router's token",
    )

    # Runtimes under test.
    echo_agent: str = setting(
        resource_name, "echo-agent", "AgentRuntime serving `fixtures/runtimes/echo-agent.yaml`."
    )
    python_interpreter: str = setting(
        resource_name, "python-interpreter", "CodeInterpreter without a warm pool."
    )
    warm_interpreter: str = setting(
        resource_name, "python-interpreter-warm", "CodeInterpreter with a warm pool."
    )
    stateful_interpreter: str | None = setting(
        resource_name,
        None,
        "CodeInterpreter whose sessions keep their variables from one run of code to the "
        "next (`@requires.stateful-interpreter`), reached with `POST /api/run_code` in the "
        "shape of E2B's `run_code`. Upstream has none yet (its issue #223); localcube serves "
        "`python-interpreter-stateful`, one Jupyter kernel per session.",
        shown="unset: `python-interpreter-stateful` on a localcube the suite starts; "
        "other targets skip those scenarios",
    )
    short_timeout_agent: str | None = setting(
        resource_name,
        None,
        "An AgentRuntime already deployed in `namespace` whose sessionTimeout is "
        "`short_session_timeout` (upstream's e2e deploys one). The idle-timeout scenario then "
        "uses it instead of applying its own copy of the echo agent, so it runs on any target; "
        "where sandboxes cannot be observed it is judged by the Router's refusal alone, and "
        "the end of the run says that the sandbox's removal was not observed.",
        shown="unset: the scenario applies its own (`@requires.runtime-admin`)",
    )

    # Timings.
    request_timeout: float = duration(
        "30s",
        "Connect and read timeout of every HTTP call (a first call starts a sandbox).",
    )
    ready_timeout: float = duration(
        "20s",
        "How long to wait for localcube to start and the target to report ready.",
    )
    short_session_timeout: float = duration(
        "2s",
        "`sessionTimeout` of the runtime the idle-timeout scenarios apply. When `@ttl` "
        "scenarios run, the preflight times a cold start of the echo agent: left at its "
        "default, this is scaled to last 3 of them; set, it must last 2, else the run stops "
        "naming the value that fits (docs/running.md).",
    )
    ttl_grace: float = duration(
        "1s",
        "Time allowed past a session's timeout for garbage collection to end it.",
    )
    gc_interval: float = duration(
        "1s",
        "How often the target's garbage collector runs (localcube's default; the localcube "
        "the suite starts collects every 100 ms). Between the end of a hard lifetime, when "
        "the sandbox goes, and the collector's next pass, which removes the session, a call "
        "may fail with the sandbox gone; the refusal as not found is waited for that long.",
    )
    poll_interval: float = duration(
        "100ms", "Pause between two probes while waiting for a condition."
    )
    short_session_lifetime: float = duration(
        "3s",
        "Hard lifetime of a session in the lifetime scenarios: the `maxSessionDuration` of "
        "the runtime they apply, or the `ttl` a session asks for. Longer than "
        "`short_session_timeout`, and fitted to a cold start as it is.",
    )
    long_task_duration: float = duration(
        "2s",
        "How long the long command of the long-task scenario runs. On a cluster choose it "
        "longer than any request timeout between the suite and the sandbox (an ingress, a "
        "load balancer).",
    )
    fail_fast: float = duration(
        "5s",
        "How soon a call in a session whose sandbox died must be answered with an error.",
    )
    sandbox_gone_timeout: float = duration(
        "5s",
        "How long a killed sandbox may take until the platform no longer shows it running.",
    )
    answer_allowance: float = duration(
        "10s",
        "How long past a call's own duration (a long command, a slow agent, a held call) to "
        "wait for its answer.",
    )
    clock_allowance: float = duration(
        "1s",
        "How much earlier than its idle timeout or hard lifetime a session may end: the "
        "granularity of the target's clocks (upstream, and localcube as it, store activity "
        "and expiry in whole seconds).",
    )
    stream_event_spacing: float = duration(
        "100ms",
        "Time between two events or chunks the echo agent streams in the streaming "
        "scenarios. A stream of events spans 7 spacings, and its first event must reach the "
        "caller at least half that span before the agent sends the last (judged by the "
        "agent's own stamps, whatever the target's latency): on a target whose latency "
        "varies by more than that, choose it longer.",
    )
    router_read_timeout: float = duration(
        "30s",
        "The Router's read timeout (upstream's `ReadTimeout`, pkg/router/server.go:196: 30 s), "
        "which a WebSocket conversation of the streaming scenarios outlives: that scenario "
        "holds one 1.5 times this long. Against a localcube of your own, start it with "
        "`--read-timeout 1s` to keep that scenario short: the preflight reads it from "
        "localcube's admin API.",
        shown="30s, upstream's; a localcube's own, read from its admin API (1s for "
        "one the suite starts, which it gives that `--read-timeout`)",
    )
    warm_pool_timeout: float = duration(
        "20s",
        "How long a warm pool may take to be full and ready again after a claim.",
    )
    burst_gather_timeout: float = duration(
        "30s",
        "How long the callers of one concurrent burst wait for each other, so that they "
        "call at the same moment.",
    )
    overload_hold: float = duration(
        "500ms",
        "How long each call of the overload scenario holds its slot in the limited Router; "
        "the refused calls must be answered sooner.",
    )

    # Load.
    load_sessions: int = setting(
        parse_positive_int,
        "100",
        "How many sessions the sustained-load scenarios (`@load`, left out by default) open, "
        "each with one command, as upstream's load test does.",
    )
    load_rate: int = setting(
        parse_positive_int,
        "10",
        "How many of those sessions are opened per second, at a steady rate.",
    )
    load_required_share: float = setting(
        parse_percentage,
        "100%",
        "The share of the load scenarios' sessions that must succeed (upstream's own load "
        "test accepts 90%).",
    )
    max_concurrent_requests: int | None = setting(
        parse_positive_int,
        None,
        "The Router's `--max-concurrent-requests`, declared so that the overload scenario "
        "(`@requires.overload`) can exceed it (it holds this many calls at once, and 2 "
        "more), and so that the scenario of many sessions at once opens no more than this "
        "many at the same moment, wave after wave (more would be rightly refused).",
        shown="unset: a localcube the suite starts runs that scenario against a "
        "second localcube with a limit of 4; other targets skip it",
    )

    # Reports and what is kept.
    keep_on_failure: bool = setting(
        parse_flag,
        "false",
        "`true`: a failed scenario's sessions and runtimes are kept, not deleted, and the "
        "end of the run says how to reach them (a localcube the suite started keeps running).",
    )
    reports_dir: str = setting(
        parse_directory,
        "reports",
        "Where the run writes its files: the log of the localcube it starts, and the HTML "
        "and JUnit reports of `./dev report` and `./dev parallel`.",
    )
    results_dir: str | None = setting(
        parse_directory,
        None,
        "Set by `./dev parallel`: each behave process writes its results there as JSON "
        "instead of printing the end-of-run summary, which the parallel command prints once.",
        shown="unset: the run prints its summary",
    )

    @property
    def since_pr_460(self) -> bool:
        """Whether the target has upstream PR #460: SESSION_NOT_FOUND and per-session ttl
        (the preflight resolves `auto`)."""
        return self.agentcube_release != "pre-460"


SETTINGS = declared(Settings)


def load_settings(
    userdata: Mapping[str, str],
    environ: Mapping[str, str],
    defaults: Mapping[str, str] | None = None,
) -> Settings:
    """Every setting read, with the chosen platform's `defaults` (by name); raise
    ConfigError. acceptance.platforms.target checks the platform's name."""
    known = {setting.name for setting in SETTINGS}
    if stray := sorted(set(defaults or {}) - known):
        raise ConfigError(f"a platform gives a default to {stray[0]}, which is no setting")
    unknown = sorted(
        name for name in set(userdata) - known if not name.startswith(FOREIGN_USERDATA)
    )
    if unknown:
        raise ConfigError(
            f"unknown setting -D {unknown[0]}; the settings are: {', '.join(sorted(known))}"
        )
    values = read_all(SETTINGS, userdata, environ, defaults)
    values.update(tokens_from_files(values))
    return Settings(**values)


# The settings a token_dir's files may fill, each from the file of its name: every token
# but the WorkloadManager's own.
TOKEN_FILE_SETTINGS = tuple(
    s.name for s in SETTINGS if s.secret and s.name != "workload_manager_token"
)


def tokens_from_files(values: Mapping[str, Any]) -> dict[str, str]:
    """The token settings left unset that a file of token_dir fills; raise ConfigError
    naming a bad file."""
    directory = values.get("token_dir")
    if not directory:
        return {}
    found = {}
    for name in TOKEN_FILE_SETTINGS:
        path = Path(directory) / name
        if values.get(name) or not path.exists():
            continue
        try:
            found[name] = parse_token(path.read_text().strip())
        except (OSError, UnicodeDecodeError) as error:
            raise ConfigError(f"setting token_dir: cannot read {path}: {error}") from None
        except ValueError as error:
            raise ConfigError(f"setting token_dir: the token in {path} {error}") from None
        if not found[name]:
            raise ConfigError(f"setting token_dir: {path} is empty")
    return found


def read_setting(setting: Setting, userdata: Mapping[str, str], environ: Mapping[str, str]) -> Any:
    """The setting from -D, else its environment variable, else its default, parsed (None:
    unset); raise ConfigError naming it, and the value unless it is secret."""
    if setting.secret and setting.name in userdata:
        raise ConfigError(
            f"setting {setting.name} is read from {setting.env} only: a -D value would show "
            "in shell history and process lists"
        )
    if userdata.get(setting.name):
        source, text = f"-D {setting.name}", userdata[setting.name]
    elif environ.get(setting.env):
        source, text = setting.env, environ[setting.env]
    elif setting.default is not None:
        source, text = f"the default of {setting.name}", setting.default
    else:
        return None
    try:
        return setting.parse(text.strip())
    except ValueError as error:
        shown = "the value" if setting.secret else repr(text)
        raise ConfigError(
            f"setting {setting.name} ({source}): {shown} {error}. Meaning: {setting.meaning}"
        ) from None
