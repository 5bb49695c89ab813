"""The checks before any scenario, each problem told in one line that names what to fix:
the Router and the WorkloadManager are ready (a refused connection fails at once; "not
ready" is waited for up to ready_timeout), they accept the tokens, the runtimes the
features call exist, and the short timings fit a timed cold start (acceptance.run.timings).

The token is tried on a session id never issued, for a runtime that does not exist, which
starts nothing: upstream authenticates every /v1 call before looking the session up
(pkg/router/server.go:162-180, pkg/router/session_manager.go:137-150), so 401 means a
refused token and 404 an accepted one. An accepted token is tried again without it: a
Router that answers that too ignores tokens. The WorkloadManager likewise answers 401 or
404 to deleting a session it never issued (pkg/workloadmanager/server.go:123-133,
handlers.go:497-503). With agentcube_release `auto`, the same 404 tells the release: since
PR #460 it carries `code: SESSION_NOT_FOUND` (pkg/router/session_manager.go:144-147),
before, no code; any other answer stops the run asking for the setting.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace

import requests
from hamcrest import has_entries

from acceptance.core.clients import Router, WorkloadManager
from acceptance.core.evidence import ExchangeLog, excerpt
from acceptance.core.matchers import holds_json, refused_because_session_not_found
from acceptance.core.measurements import Measurements
from acceptance.core.polling import eventually
from acceptance.core.runtimes import (
    Role,
    Runtime,
    RuntimeKind,
    configured_runtimes,
)
from acceptance.core.settings import AUTO_RELEASE, SETTINGS, Given, Settings
from acceptance.core.transport import NoAnswer, Transport
from acceptance.domain.isolation import neighbour_echo_agent
from acceptance.platforms.base import NEIGHBOUR_NAMESPACE, Platform, Target
from acceptance.run.results import first_line
from acceptance.run.timings import NoColdStart, TimingsDoNotFit, fitted, measure_cold_start
from agentcube_contract.session import SESSION_NOT_FOUND

# The name of the runtime the token check calls: none has it, so no sandbox can start.
PROBE_RUNTIME = "agentcube-preflight-probe"


class PreflightFailed(Exception):
    """The target cannot run the suite: one line per problem."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Release:
    """The AgentCube release a run is held to, and why."""

    name: str
    why: str

    def account(self) -> str:
        return f"AgentCube release: {self.name} ({self.why})"


_ENV = {setting.name: setting.env for setting in SETTINGS}


def setting_names(name: str) -> str:
    """A setting as the user gives it: its -D name and its environment variable."""
    return f"{name} / {_ENV[name]}"


class Preflight:
    """The checks, in the order the run needs them: `check_target` before the target
    prepares (a cluster's fixtures), `check_runtimes` after; `account` says what passed."""

    def __init__(self, settings: Settings, target: Target) -> None:
        self._settings = settings
        self._target = target
        timeout = min(settings.request_timeout, settings.ready_timeout)
        self._transport = Transport(timeout=timeout, log=ExchangeLog())
        self._router = Router(self._transport, target.router_url, Measurements())
        self._checked: list[str] = []
        self.checks_tokens = False  # known once check_target has passed

    def close(self) -> None:
        self._transport.close()

    def account(self) -> str:
        return "Preflight: " + "; ".join(self._checked) + "."

    def check_target(self) -> Release:
        """Both services answer and are ready and the tokens are accepted: the release the
        run is held to; raises PreflightFailed."""
        target = self._target
        workload_manager = WorkloadManager(self._transport, target.workload_manager_url)
        same_url = target.workload_manager_url == target.router_url
        problems = self._readiness("the Router", "router_url", self._router.ready, "ready")
        if not (problems and same_url):  # one service behind one URL: one problem is enough
            problems += self._readiness(
                "the WorkloadManager", "workload_manager_url", workload_manager.healthy, "healthy"
            )
        if problems:
            raise PreflightFailed(problems)
        self._checked.append(
            f"Router and WorkloadManager ready at {target.router_url}"
            if same_url
            else f"Router ready at {target.router_url}, WorkloadManager at "
            f"{target.workload_manager_url}"
        )
        problems, session_id, answer = self._router_refusal("api_token", target.api_token)
        for setting in ("second_api_token", "admin_api_token"):
            if token := getattr(target, setting):
                problems += self._router_refusal(setting, token)[0]
        if not same_url:
            problems += self._workload_manager_refusal(workload_manager)
        if problems:
            raise PreflightFailed(problems)
        assert answer is not None  # the Router answered: no problem was told
        self.checks_tokens = bool(target.api_token) and self._refuses_no_token()
        self._checked.append(self._tokens_account())
        return self._release(session_id, answer)

    def _refuses_no_token(self) -> bool:
        """Whether the Router refuses the token check's call without a token."""
        problems, _, answer = self._router_refusal("api_token", None)
        if answer is None:
            raise PreflightFailed([f"{problem} to a call without a token" for problem in problems])
        return answer.status_code == 401

    def _tokens_account(self) -> str:
        """The preflight's words on tokens; raises PreflightFailed when must_authenticate
        is not met."""
        if self.checks_tokens:
            return "token accepted"
        if self._settings.must_authenticate:
            raise PreflightFailed(
                [
                    f"the Router at {self._target.router_url} answers a call that carries no "
                    f"token: it authenticates no caller, though "
                    f"{setting_names('must_authenticate')} says it must"
                ]
            )
        if self._target.api_token:
            return (
                "token ignored: the Router answers calls without any token, so the scenarios "
                "that need a target that checks tokens are skipped"
            )
        return "no token needed"

    def _release(self, session_id: str, answer: requests.Response) -> Release:
        """The release set, or the one the Router's 404 for a session id shows."""
        configured = self._settings.agentcube_release
        if configured != AUTO_RELEASE:
            return Release(configured, f"set by {setting_names('agentcube_release')}")
        if refused_because_session_not_found(session_id, code_required=True).matches(answer):
            return Release(
                "main",
                f"detected: the Router's 404 for an unknown session carries code "
                f"{SESSION_NOT_FOUND}",
            )
        if refused_because_session_not_found(session_id, code_required=False).matches(answer):
            return Release(
                "pre-460", "detected: the Router's 404 for an unknown session carries no code"
            )
        raise PreflightFailed(
            [
                f"the Router's answer to a session id never issued tells no AgentCube release "
                f"({answer.status_code} {excerpt(answer.content, 120)}; a Router answers 404 "
                f"naming the session, with code {SESSION_NOT_FOUND} since upstream PR #460 and "
                f"without any code before): set {setting_names('agentcube_release')} to main "
                "or pre-460"
            ]
        )

    def check_runtimes(self) -> None:
        """The runtimes the features call exist in the namespace, when the platform can
        tell; raises PreflightFailed naming each one missing and its setting."""
        platform = self._target.platform(self._transport)
        namespace = self._settings.namespace
        runtimes = configured_runtimes(self._settings)
        problems = []
        for role, runtime in runtimes.items():
            try:
                found = platform.has_runtime(runtime)
            except AssertionError as error:
                raise PreflightFailed(
                    [f"platform {platform.name} could not list the runtimes: {first_line(error)}"]
                ) from None
            if found is None:
                self._checked.append(
                    f"runtimes not checked: platform {platform.name} cannot list them without "
                    "starting a sandbox (a missing one fails its scenarios with 404)"
                )
                return
            if not found:
                assert role.setting is not None
                problems.append(
                    f"{runtime} does not exist (the {role.phrase}): check "
                    f"{setting_names(role.setting)} and {setting_names('namespace')}"
                )
        if problems and len(problems) == len(runtimes):  # rather the namespace than each name
            names = ", ".join(
                f"{runtime.kind.kind} {runtime.name}" for runtime in runtimes.values()
            )
            problems = [
                f"none of the runtimes the suite calls exists in namespace {namespace} "
                f"({names}): check {setting_names('namespace')}"
            ]
        if problems:
            raise PreflightFailed(problems)
        created = len(self._target.created_runtimes & set(runtimes.values()))
        self._checked += self._target.account
        self._checked.append(
            f"{len(runtimes)} runtimes {'in' if created else 'found in'} namespace {namespace}"
            + (f", {created} of them created by this run" if created else "")
            + f" (platform {platform.name})"
        )
        self._check_neighbour_namespace(platform, runtimes[Role.ECHO_AGENT])

    def read_told_settings(self, settings: Settings, given: Given) -> Settings:
        """`settings` with the Router's read timeout the target tells (localcube's admin
        API) unless the user set it: a WebSocket scenario outlives the target's own."""
        if "router_read_timeout" in given:
            return settings
        told = self._target.platform(self._transport).router_read_timeout()
        if told is None or told == settings.router_read_timeout:
            return settings
        self._checked.append(f"router_read_timeout {told:g} s, as the target tells")
        return replace(settings, router_read_timeout=told)

    def fit_timings(self, settings: Settings, given: Given) -> Settings:
        """`settings` with the short timings fitted to a cold start of the echo agent;
        raises PreflightFailed naming a setting the user set that does not fit."""
        try:
            cold_start = measure_cold_start(self._target, settings)
            settings, told = fitted(settings, cold_start, given, setting_names)
        except NoColdStart as why_not:
            told = f"short timings kept, no cold start measured: {why_not}"
        except TimingsDoNotFit as error:
            raise PreflightFailed([str(error)]) from None
        self._checked.append(told)
        return settings

    def _check_neighbour_namespace(self, platform: Platform, echo_agent: Runtime) -> None:
        """That the namespaces scenario's echo agent can be created in neighbour_namespace
        (a dry run); raises PreflightFailed."""
        neighbour = self._settings.neighbour_namespace
        if neighbour is None or NEIGHBOUR_NAMESPACE not in self._target.capabilities:
            return
        names = setting_names("neighbour_namespace")
        if neighbour == self._settings.namespace:
            raise PreflightFailed(
                [f"{names} is {neighbour}, the namespace under test itself: name another one"]
            )
        try:
            platform.check_can_apply(neighbour_echo_agent(echo_agent, neighbour))
        except AssertionError as refused:
            raise PreflightFailed(
                [
                    f"the namespaces scenario cannot apply its echo agent in {neighbour} "
                    f"({first_line(refused)}): create that namespace and bind the suite's "
                    f"role there (docs/examples/rbac.yaml), or unset {names} to skip the "
                    "scenario"
                ]
            ) from None
        self._checked.append(f"runtimes can be applied in neighbour namespace {neighbour}")

    def _readiness(
        self, service: str, setting: str, probe: Callable[[], requests.Response], status: str
    ) -> list[str]:
        """A problem unless the service at the URL `setting` names answers {status: `status`}
        within ready_timeout (a service that does not answer at all: at once)."""
        url: str = getattr(self._target, setting)
        seen: list[requests.Response] = []

        def probe_and_keep() -> requests.Response:
            seen.append(probe())
            return seen[-1]

        try:
            eventually(
                probe_and_keep,
                holds_json(
                    f"the health check to answer {{status: {status}}}", has_entries(status=status)
                ),
                timeout=self._settings.ready_timeout,
                poll=self._settings.poll_interval,
                waiting_for=f"{service} at {url} to report ready",
            )
        except NoAnswer as error:
            return [f"{service} at {url} {_unanswered(error)}: check {setting_names(setting)}"]
        except AssertionError:
            last = seen[-1]
            return [
                f"{service} at {url} is not ready after {self._settings.ready_timeout:g} s "
                f"({last.request.method} {last.request.path_url} answered {last.status_code} "
                f"{excerpt(last.content, 120)}): check {setting_names(setting)}, or allow a "
                f"slower start with {setting_names('ready_timeout')}"
            ]
        return []

    def _router_refusal(
        self, setting: str, token: str | None
    ) -> tuple[list[str], str, requests.Response | None]:
        """A problem when the Router refuses this token (None: none) on a session id never
        issued, that id, and the Router's answer if any."""
        probe = Runtime(RuntimeKind.AGENT_RUNTIME, self._settings.namespace, PROBE_RUNTIME)
        session_id = str(uuid.uuid4())
        try:
            answer = self._router.invoke(probe, "", session_id=session_id, json={}, token=token)
        except NoAnswer as error:
            return (
                [f"the Router at {self._target.router_url} {_unanswered(error)}"],
                session_id,
                None,
            )
        return _refusal("the Router", answer, setting, token), session_id, answer

    def _workload_manager_refusal(self, workload_manager: WorkloadManager) -> list[str]:
        """A problem when the WorkloadManager refuses its token (workload_manager_token, else
        api_token) on deleting a session it never issued."""
        own_token = self._settings.workload_manager_token
        setting = "workload_manager_token" if own_token else "api_token"
        token = own_token or self._target.api_token
        try:
            answer = workload_manager.delete_session(
                RuntimeKind.AGENT_RUNTIME, str(uuid.uuid4()), token=token
            )
        except NoAnswer as error:
            return [f"the WorkloadManager {_unanswered(error)}"]
        problems = _refusal("the WorkloadManager", answer, setting, token)
        if problems and answer.status_code == 401 and not own_token:
            problems[0] += (
                " (a WorkloadManager with its auth on, as upstream PR #433 would have the chart "
                "run it, takes Kubernetes service-account tokens only: set workload_manager_token)"
            )
        return problems


def _refusal(service: str, answer: requests.Response, setting: str, token: str | None) -> list[str]:
    shown = f"{answer.status_code} {excerpt(answer.content, 120)}"
    variable = _ENV[setting]
    if answer.status_code == 401 and token:
        return [f"{service} refused the token in {variable} ({shown}): set a valid token"]
    if answer.status_code == 401:
        return [f"{service} requires a bearer token ({shown}): set {variable}"]
    if answer.status_code == 403:
        return [
            f"{service} accepted the token in {variable} but refused its permissions ({shown}): "
            "use a token of a subject with the role the Router requires"
        ]
    return []


def _unanswered(error: NoAnswer) -> str:
    message = str(error)
    if "Connection refused" in message:
        return "refused the connection"
    if "Failed to resolve" in message or "Name or service not known" in message:
        return "has a host name that does not resolve"
    if "timed out" in message:
        return "did not answer in time"
    return f"did not answer ({message})"
