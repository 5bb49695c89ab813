"""The scenario's world: its calls, the sessions they opened and its cleanups, nothing
else. It registers every session and runtime for deletion the moment it exists; a session
is called and deleted by the `Caller` that opened it. The steps get each capability's helper
with ``world.part(Helper)``."""

from __future__ import annotations

import dataclasses
import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import requests
from hamcrest import assert_that, has_entries
from hamcrest.core.matcher import Matcher

from acceptance.core import matchers
from acceptance.core.clients import Router, WorkloadManager, session_id_of
from acceptance.core.evidence import describe_response
from acceptance.core.matchers import json_body
from acceptance.core.measurements import Measurements
from acceptance.core.runtimes import Role, Runtime, RuntimeKind, configured_runtimes
from acceptance.core.settings import Settings
from acceptance.core.transport import NoAnswer, Transport
from acceptance.domain.calls import Call, Caller, Calls
from acceptance.platforms.base import Platform, Sandbox, Target
from agentcube_contract.session import SESSION_HEADER

RegisterCleanup = Callable[..., None]
Part = TypeVar("Part")
T = TypeVar("T")
# A call that reaches a kept session of each kind (path under invocations/, JSON body).
_EXAMPLE_CALL = {
    RuntimeKind.AGENT_RUNTIME: ("echo", '{"input": "hello"}'),
    RuntimeKind.CODE_INTERPRETER: ("api/execute", '{"command": ["ls", "-l"]}'),
}


@dataclass(frozen=True)
class Session:
    """A session the scenario opened; `caller` opened it and makes every later call in it,
    its deletion included. `opened_at` (time.monotonic) is taken before the call that
    opened it: counted from it, a deadline is never too short, and neither is the span the
    session lasted (a cold start, which upstream counts in a lifetime, lies within)."""

    session_id: str
    runtime: Runtime
    caller: Caller = field(compare=False, repr=False)
    opened_at: float = field(default_factory=time.monotonic, compare=False)

    def __str__(self) -> str:
        return f"session {self.session_id} of {self.runtime}"


@dataclass
class RunLedger:
    """What the scenarios of one run add to, for its end: the sessions they opened, the
    latencies of their calls, what could not be cleaned up, what the target did not let
    them observe, and what they measured beyond latencies (a load's outcome)."""

    sessions: list[Session] = field(default_factory=list)
    measurements: Measurements = field(default_factory=Measurements)
    leaks: list[str] = field(default_factory=list)
    unobserved: list[str] = field(default_factory=list)
    measured: list[str] = field(default_factory=list)


class World:
    def __init__(
        self,
        settings: Settings,
        target: Target,
        transport: Transport,
        register_cleanup: RegisterCleanup,
        ledger: RunLedger,
    ) -> None:
        """`transport`: the scenario's one, which its clients and platform call through."""
        self._settings = settings
        self._target = target
        self.transport = transport
        self._workload_manager = WorkloadManager(transport, target.workload_manager_url)
        self.platform = target.platform(transport)
        self._register_cleanup = register_cleanup
        self.ledger = ledger  # what the run's end reports, the run's sessions among it
        self._calls: list[Call] = []
        self._sessions: list[Session] = []
        self._last_activity: dict[str, Call] = {}
        # The runtimes the settings name, and those the scenario applies or names itself.
        self._runtimes: dict[Role, Runtime] = configured_runtimes(settings)
        # Runtimes applied for the run or the scenario and not yet served (see Calls).
        self._unserved: set[Runtime] = set(target.created_runtimes)
        self._parts: dict[type, Any] = {}
        self._kept: list[str] | None = None
        self._closed: set[str] = set()  # session ids the scenario deleted itself
        warm = [self._runtimes[Role.WARM_INTERPRETER]]  # whose first calls are warm starts
        router = Router(transport, target.router_url, ledger.measurements, warm_pooled=warm)
        self.caller = Caller(router, target.api_token)  # the scenario's own

    # What the capability helpers build on.

    def part(self, kind: type[Part]) -> Part:
        """The scenario's helper of this kind, created on first use with what its
        constructor asks for by name, and no more: `world`, `settings`, `target` (URLs,
        tokens, capabilities) and `platform` (what the suite can do beside HTTP calls)."""
        if kind not in self._parts:
            given = {
                "world": self,
                "settings": self._settings,
                "target": self._target,
                "platform": self.platform,
            }
            wanted = inspect.signature(kind).parameters
            unknown = sorted(set(wanted) - set(given))
            if unknown:
                raise TypeError(f"{kind.__name__} asks for {unknown}, which a World does not give")
            self._parts[kind] = kind(**{name: given[name] for name in wanted})
        return cast(Part, self._parts[kind])

    def caller_presenting(self, token: str | None, token_variable: str) -> Caller:
        """A caller presenting another bearer token (None: none), held by `token_variable`."""
        return Caller(self.caller.router, token, token_variable)

    def caller_through(self, url: str) -> Caller:
        """The scenario's caller through a Router of its own at `url`, its latencies apart
        from the run's."""
        return dataclasses.replace(self.caller, router=Router(self.transport, url, Measurements()))

    # What the scenario has seen so far (its HTTP exchanges: transport.log).

    def runtime(self, role: Role) -> Runtime:
        if role in self._runtimes:
            return self._runtimes[role]
        if role.setting is not None:
            raise AssertionError(f"no {role.phrase} is configured (setting {role.setting})")
        raise AssertionError(f"the scenario has not applied the {role.phrase} yet")

    @property
    def last_call(self) -> Call:
        return required(self._calls or None, "the scenario has not called anything yet")[-1]

    @property
    def last_answer(self) -> requests.Response:
        return self.last_call.response

    def expect_last_answer(self, expected: Matcher[requests.Response]) -> None:
        """For the Then steps that judge the last answer alone."""
        assert_that(self.last_answer, expected)

    @property
    def session(self) -> Session:
        return required(self._sessions or None, "the scenario has no session yet")[-1]

    @property
    def sessions(self) -> list[Session]:
        return list(self._sessions)

    def opened_by(self, answer: requests.Response) -> Session:
        """The session a first call's answer opened."""
        for session in self._sessions:
            if session.session_id == session_id_of(answer):
                return session
        raise AssertionError(f"the call opened no session: {describe_response(answer)}")

    def last_activity(self, session: Session) -> Call:
        """The session's last call that it answered successfully. The target stamped the
        session active between its `sent_at` and `answered_at` (upstream: as it forwards the
        call and as the call ends, in whole seconds), so idleness judged from `sent_at` is
        never too long, and a deadline counted from `answered_at` never too short."""
        return self._last_activity[session.session_id]

    def sandbox_reports(self) -> list[dict[str, Any]]:
        """What the echo agent said about its sandbox, for each successful echo, in order."""
        return [
            sandbox_report(call.response)
            for call in self._calls
            if call.runtime.kind is RuntimeKind.AGENT_RUNTIME and call.response.status_code == 200
        ]

    # Calls through the Router.

    def calls(
        self, runtime: Runtime, session_id: str | None = None, *, caller: Caller | None = None
    ) -> Calls:
        """Calls to the runtime presenting this session id (None: calls that open a
        session), by this caller (None: the scenario's own)."""
        return Calls(
            runtime,
            session_id,
            caller or self.caller,
            record=self._record,
            unserved=self._unserved,
            settings=self._settings,
        )

    def in_session(self, session: Session | None = None) -> Calls:
        """Calls in the session (None: the scenario's last), by the caller that opened it."""
        session = session or self.session
        return self.calls(session.runtime, session.session_id, caller=session.caller)

    def _record(self, call: Call) -> None:
        """Remember a finished call, and adopt the session it opened as its caller's."""
        known = tuple(session.session_id for session in self._sessions)
        self._calls.append(dataclasses.replace(call, known_before=known))
        returned = session_id_of(call.response)
        if returned and returned not in known:
            self._adopt(Session(returned, call.runtime, call.caller, call.sent_at))
        if call.response.status_code == 200:
            for active in {sid for sid in (call.sent_session_id, returned) if sid}:
                self._last_activity[active] = call

    # Sessions.

    def open_session_at_workload_manager(self, role: Role, *, ttl: int | None = None) -> Session:
        """Open a session through the WorkloadManager's API, as the SDK does; `ttl` asks for a
        hard lifetime in seconds. Upstream records no owner for such a session, so where
        tokens are required only an admin may use it: its caller is then the admin subject
        (admin_api_token)."""
        admin_token = self._target.admin_api_token
        caller = self.caller
        if admin_token:
            caller = self.caller_presenting(admin_token, "AGENTCUBE_ADMIN_API_TOKEN")
        runtime = self.runtime(role)
        opened_at = time.monotonic()
        response = self._workload_manager.create_session(
            runtime, ttl=ttl, token=self._workload_manager_token(caller)
        )
        if response.status_code == 401 and not self._settings.workload_manager_token:
            raise AssertionError(
                "the WorkloadManager refused with 401 the token the Router accepts: with its "
                "auth on (`--enable-auth`, which upstream PR #433 would have its chart pass) it "
                "admits Kubernetes service-account tokens only. Set workload_manager_token "
                "(AGENTCUBE_WORKLOAD_MANAGER_TOKEN) to one, e.g. `kubectl create token "
                f"agentcube-router -n agentcube`. The answer was {describe_response(response)}"
            )
        assert_that(
            response,
            matchers.holds_json(
                f"the WorkloadManager to create a session of {runtime}",
                has_entries(sessionId=matchers.a_uuid4()),
            ),
        )
        session = Session(response.json()["sessionId"], runtime, caller, opened_at)
        self._adopt(session)
        opening = Call(caller, runtime, None, response, opened_at, time.monotonic())
        self._last_activity[session.session_id] = opening
        return session

    def close_session(self, session: Session) -> requests.Response:
        """Delete the session at the WorkloadManager now, as a client does; cleanup skips it."""
        response = self._delete_at_workload_manager(session)
        if response.status_code == 200:
            self._closed.add(session.session_id)
        return response

    def _workload_manager_token(self, caller: Caller) -> str | None:
        """The WorkloadManager's own credential (workload_manager_token), else the caller's."""
        return self._settings.workload_manager_token or caller.token

    def _delete_at_workload_manager(self, session: Session) -> requests.Response:
        token = self._workload_manager_token(session.caller)
        return self._workload_manager.delete_session(
            session.runtime.kind, session.session_id, token=token
        )

    def _adopt(self, session: Session) -> None:
        self._sessions.append(session)
        self.ledger.sessions.append(session)
        self._register_cleanup(self._delete_session, session)

    def keep_for_inspection(self, kept: list[str]) -> None:
        """From now on the cleanups keep sessions and runtimes, adding how to reach each."""
        self._kept = kept

    def _how_to_reach(self, session: Session) -> str:
        caller = session.caller
        auth = f' -H "Authorization: Bearer ${caller.token_variable}"' if caller.token else ""
        path, body = _EXAMPLE_CALL[session.runtime.kind]
        delete_url = self._workload_manager.session_url(session.runtime.kind, session.session_id)
        return (
            f"{session}: call it with curl{auth} -H '{SESSION_HEADER}: {session.session_id}' "
            f"-H 'Content-Type: application/json' -d '{body}' "
            f"{caller.router.invocation_url(session.runtime, path)} ; delete it with curl{auth} "
            f"-X DELETE {delete_url}"
        )

    def _delete_session(self, session: Session) -> None:
        """Cleanup: a session that is already gone (expired, never issued) is fine."""
        if session.session_id in self._closed:
            return
        if self._kept is not None:
            self._kept.append(self._how_to_reach(session))
            return
        try:
            response = self._delete_at_workload_manager(session)
        except NoAnswer as error:
            self.ledger.leaks.append(f"{session}: {error}")
            return
        if response.status_code not in (200, 404):
            self.ledger.leaks.append(f"{session}: {describe_response(response)}")

    # Runtimes the scenario applies for itself.

    def apply_runtime(self, role: Role, manifest: dict[str, Any]) -> Runtime:
        """Apply a runtime resource for this scenario, deleted at its end, in this role."""
        runtime = Runtime.of_manifest(manifest)
        if runtime.kind is not role.kind:
            raise ValueError(f"{runtime} cannot play the {role.phrase}")
        self._register_cleanup(self._delete_runtime, runtime)
        self._runtimes[role] = self.platform.apply_runtime(manifest)
        self._unserved.add(self._runtimes[role])
        return self._runtimes[role]

    def use_deployed_runtime(self, role: Role, name: str) -> Runtime:
        """Play this role with a runtime already deployed in the namespace (not deleted)."""
        self._runtimes[role] = Runtime(role.kind, self._settings.namespace, name)
        return self._runtimes[role]

    def _delete_runtime(self, runtime: Runtime) -> None:
        if self._kept is not None:
            self._kept.append(f"{runtime}: kept on platform {self.platform.name!r}")
            return
        try:
            self.platform.delete_runtime(runtime)
        except AssertionError as error:
            self.ledger.leaks.append(f"{runtime}: {error}")


def sandbox_report(sent: requests.Response | Any) -> Any:
    """The echo agent's account of the sandbox that served the call (None if absent), from
    its answer or from what it sent already read (a conversation's greeting, an event)."""
    body = json_body(sent) if isinstance(sent, requests.Response) else sent
    return body.get("sandbox") if isinstance(body, dict) else None


def sandbox_identity(report: Any) -> dict[str, Any]:
    """What tells the echo agent's sandboxes apart in its report of the one that served."""
    known = report if isinstance(report, dict) else {}
    return {key: known.get(key) for key in ("hostname", "pid", "started_at")}


def sandbox_serving(platform: Platform, session: Session) -> Sandbox:
    """The sandbox the platform shows serving the session, which must have one."""
    missing = f"the platform shows no sandbox serving {session}"
    return required(platform.sandbox_of(session.session_id), missing)


def required(value: T | None, missing: str) -> T:
    """`value`, which an earlier step sets; `missing` says which step was left out."""
    if value is None:
        raise AssertionError(missing)
    return value
