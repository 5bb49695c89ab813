"""The scenario's world: what the steps do, in the platform's words.

A World lives for one scenario. It makes the calls, remembers the answers and the sessions
they opened, registers every session and runtime for deletion the moment it exists, and
waits (never sleeps) for the platform where the contract allows time.
"""

from __future__ import annotations

import shlex
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import requests
from hamcrest import all_of, assert_that, described_as, equal_to, has_entries, none

from acceptance import matchers
from acceptance.clients import Router, WorkloadManager, session_id_of
from acceptance.evidence import ExchangeLog, describe_response
from acceptance.measurements import Measurements
from acceptance.platforms import Platform, Sandbox
from acceptance.polling import consistently, eventually
from acceptance.runtimes import (
    FIXTURE_SCRIPTS,
    Role,
    Runtime,
    RuntimeKind,
    derive_manifest,
    fixture_manifest,
)
from acceptance.settings import Settings
from acceptance.transport import NoAnswer

# The fixture the short-timeout agent is derived from (fixtures/runtimes/echo-agent.yaml).
ECHO_AGENT_FIXTURE = "echo-agent"
# The Router records activity just before it answers; the answer reaches us a little later.
CLOCK_ALLOWANCE = 0.25

RegisterCleanup = Callable[..., None]


@dataclass(frozen=True)
class Session:
    session_id: str
    runtime: Runtime

    def __str__(self) -> str:
        return f"session {self.session_id} of {self.runtime}"


@dataclass(frozen=True)
class Call:
    """One call through the Router: where it went, the session it presented, the answer,
    the sessions known before it, and when the answer arrived (time.monotonic)."""

    runtime: Runtime
    sent_session_id: str | None
    response: requests.Response
    known_before: tuple[str, ...]
    answered_at: float

    @property
    def presented_session_id(self) -> str:
        """The session id the call presented; a step that needs one fails without it."""
        if self.sent_session_id is None:
            raise AssertionError("the last call presented no session id")
        return self.sent_session_id


class World:
    def __init__(
        self,
        settings: Settings,
        *,
        router: Router,
        workload_manager: WorkloadManager,
        platform: Platform,
        register_cleanup: RegisterCleanup,
        log: ExchangeLog,
        leaks: list[str],
        measurements: Measurements,
    ) -> None:
        self._settings = settings
        self._log = log
        self._router = router
        self._wm = workload_manager
        self._platform = platform
        self._register_cleanup = register_cleanup
        self._leaks = leaks
        self._measurements = measurements
        self._calls: list[Call] = []
        self._sessions: list[Session] = []
        self._last_activity: dict[str, float] = {}
        self._applied: dict[Role, Runtime] = {}
        self._expiring: Sandbox | None = None

    # What the scenario has seen so far.

    def evidence(self) -> str:
        """Every HTTP exchange of the scenario, redacted, for a failure report."""
        return self._log.format()

    def runtime(self, role: Role) -> Runtime:
        if role.setting is not None:
            return Runtime(
                role.kind, self._settings.namespace, getattr(self._settings, role.setting)
            )
        if role not in self._applied:
            raise AssertionError(f"the scenario has not applied the {role.phrase} yet")
        return self._applied[role]

    @property
    def last_call(self) -> Call:
        if not self._calls:
            raise AssertionError("the scenario has not called anything yet")
        return self._calls[-1]

    @property
    def last_answer(self) -> requests.Response:
        return self.last_call.response

    @property
    def session(self) -> Session:
        """The session the scenario opened last."""
        if not self._sessions:
            raise AssertionError("the scenario has no session yet")
        return self._sessions[-1]

    def sandbox_reports(self) -> list[dict[str, Any]]:
        """What the echo agent said about its sandbox, for each successful echo, in order."""
        return [
            _sandbox_report(call.response)
            for call in self._calls
            if call.runtime.kind is RuntimeKind.AGENT_RUNTIME and call.response.status_code == 200
        ]

    # Calls through the Router.

    def _call(
        self,
        runtime: Runtime,
        session_id: str | None,
        send: Callable[[str | None], requests.Response],
    ) -> requests.Response:
        known = tuple(session.session_id for session in self._sessions)
        response = send(session_id)
        call = Call(runtime, session_id, response, known, time.monotonic())
        self._calls.append(call)
        returned = session_id_of(response)
        if returned and returned not in known:
            self._adopt(Session(returned, runtime))
        if response.status_code == 200:
            for active in {session_id, returned} - {None}:
                self._last_activity[active] = call.answered_at
        return response

    def _echo(self, runtime: Runtime, text: str, session_id: str | None) -> requests.Response:
        return self._call(
            runtime,
            session_id,
            lambda sid: self._router.invoke(runtime, "echo", session_id=sid, json={"input": text}),
        )

    def _execute(
        self, runtime: Runtime, command: list[str], session_id: str | None
    ) -> requests.Response:
        return self._call(
            runtime, session_id, lambda sid: self._router.execute(runtime, command, session_id=sid)
        )

    def _touch(self, runtime: Runtime, session_id: str | None) -> requests.Response:
        """A harmless call of the runtime's kind: an echo, or a Python no-op."""
        if runtime.kind is RuntimeKind.AGENT_RUNTIME:
            return self._echo(runtime, "still there?", session_id)
        return self._execute(runtime, ["python3", "-c", "pass"], session_id)

    def send_to_agent(self, role: Role, text: str, *, in_session: bool) -> None:
        self._echo(self.runtime(role), text, self.session.session_id if in_session else None)

    def run_python(self, role: Role, code: str, *, in_session: bool) -> None:
        session_id = self.session.session_id if in_session else None
        self._execute(self.runtime(role), ["python3", "-c", code], session_id)

    def run_python_in_session(self, code: str) -> None:
        self._execute(self.session.runtime, ["python3", "-c", code], self.session.session_id)

    def run_command_in_session(self, command_line: str) -> None:
        self._execute(self.session.runtime, shlex.split(command_line), self.session.session_id)

    def prepare_session_with_python(self, code: str) -> None:
        """Run code that sets the scenario up; it must succeed."""
        self.run_python_in_session(code)
        assert_that(self.last_answer, matchers.exits_with(0), "setting the session up failed")

    def call_missing_runtime(self, kind: RuntimeKind) -> None:
        runtime = Runtime(kind, self._settings.namespace, f"missing-{uuid.uuid4().hex[:12]}")
        self._touch(runtime, None)

    def call_with_unknown_session(self, role: Role) -> None:
        self._touch(self.runtime(role), str(uuid.uuid4()))

    # Sessions.

    def open_session(self, role: Role) -> None:
        """Open a session through the WorkloadManager, as the SDK does."""
        runtime = self.runtime(role)
        response = self._wm.create_session(runtime)
        assert_that(
            response,
            matchers.holds_json(
                f"the WorkloadManager to create a session of {runtime}",
                has_entries(sessionId=matchers.a_uuid4()),
            ),
        )
        session = Session(response.json()["sessionId"], runtime)
        self._adopt(session)
        self._last_activity[session.session_id] = time.monotonic()

    def _adopt(self, session: Session) -> None:
        self._sessions.append(session)
        self._register_cleanup(self._delete_session, session)

    def _delete_session(self, session: Session) -> None:
        """Cleanup: a session that is already gone (expired, never issued) is fine."""
        try:
            response = self._wm.delete_session(session.runtime.kind, session.session_id)
        except NoAnswer as error:
            self._leaks.append(f"{session}: {error}")
            return
        if response.status_code not in (200, 404):
            self._leaks.append(f"{session}: {describe_response(response)}")

    # Code-interpreter workspace.

    def upload_script(self, name: str) -> None:
        content = (FIXTURE_SCRIPTS / name).read_bytes()
        session = self.session
        response = self._router.upload_file(
            session.runtime, name, content, session_id=session.session_id
        )
        assert_that(
            response,
            matchers.holds_json(
                f"PicoD to store {name} ({len(content)} bytes) in the workspace",
                has_entries(size=len(content)),
            ),
        )

    def list_workspace(self) -> requests.Response:
        session = self.session
        return self._router.list_files(session.runtime, ".", session_id=session.session_id)

    def download(self, path: str) -> requests.Response:
        session = self.session
        return self._router.download_file(session.runtime, path, session_id=session.session_id)

    # Idle timeout and expiry.

    def apply_short_timeout_agent(self) -> None:
        """Apply a uniquely named copy of the echo agent whose sessionTimeout is short."""
        runtime = Runtime(
            RuntimeKind.AGENT_RUNTIME,
            self._settings.namespace,
            f"echo-agent-idle-{uuid.uuid4().hex[:8]}",
        )
        self._register_cleanup(self._delete_runtime, runtime)
        manifest = derive_manifest(
            fixture_manifest(RuntimeKind.AGENT_RUNTIME, ECHO_AGENT_FIXTURE),
            name=runtime.name,
            namespace=runtime.namespace,
            session_timeout=self._settings.short_session_timeout,
        )
        self._applied[Role.SHORT_TIMEOUT_AGENT] = self._platform.apply_runtime(manifest)

    def _delete_runtime(self, runtime: Runtime) -> None:
        try:
            self._platform.delete_runtime(runtime)
        except AssertionError as error:
            self._leaks.append(f"{runtime}: {error}")

    def expect_session_kept_alive(self) -> None:
        """Call the session every third of its timeout for twice its timeout: had the calls
        not counted as activity, it would have expired half-way."""
        timeout = self._settings.short_session_timeout
        session = self.session
        answers = consistently(
            lambda: self._touch(session.runtime, session.session_id),
            all_of(
                matchers.echoes("still there?"), matchers.carries_session_id(session.session_id)
            ),
            duration=2 * timeout,
            poll=timeout / 3,
            holding=f"session {session.session_id} is served while called every {timeout / 3:g} s",
        )
        reports = [_sandbox_report(answer) for answer in answers]
        assert_that(reports, matchers.served_by_one_sandbox(), f"{session} changed sandbox")

    def leave_session_idle_until_it_ends(self) -> None:
        """Watch the platform, without touching the session, until its sandbox is released;
        this must happen after the timeout and within the grace period that follows it."""
        timeout, grace = self._settings.short_session_timeout, self._settings.ttl_grace
        session = self.session
        self._expiring = self._platform.sandbox_of(session.session_id)
        if self._expiring is None:
            raise AssertionError(f"the platform shows no sandbox serving the live {session}")
        idle_since = self._last_activity[session.session_id]
        eventually(
            lambda: self._platform.sandbox_of(session.session_id),
            described_as("no sandbox serving the session", none()),
            timeout=self._remaining_until_expired(idle_since),
            poll=self._settings.poll_interval,
            waiting_for=(
                f"the platform to end session {session.session_id} within its sessionTimeout "
                f"({timeout:g} s) and ttl_grace ({grace:g} s) of idleness"
            ),
        )
        idle = time.monotonic() - idle_since
        assert idle >= timeout - CLOCK_ALLOWANCE, (
            f"{session} ended after {idle:.2f} s idle, before its sessionTimeout of {timeout:g} s"
        )

    def _remaining_until_expired(self, idle_since: float) -> float:
        deadline = idle_since + self._settings.short_session_timeout + self._settings.ttl_grace
        return max(deadline - time.monotonic(), self._settings.poll_interval)

    def expect_session_refused_as_not_found(self) -> None:
        session = self.session
        eventually(
            lambda: self._touch(session.runtime, session.session_id),
            matchers.refused_because_session_not_found(session.session_id),
            timeout=self._remaining_until_expired(self._last_activity[session.session_id]),
            poll=self._settings.poll_interval,
            waiting_for=f"the Router to refuse the expired session {session.session_id}",
        )

    def expect_sandbox_gone(self) -> None:
        sandbox = self._expiring
        if sandbox is None:
            raise AssertionError("no sandbox was observed before the session expired")
        eventually(
            lambda: self._platform.is_running(sandbox),
            described_as("the sandbox neither listed nor running", equal_to(False)),
            timeout=self._settings.ttl_grace,
            poll=self._settings.poll_interval,
            waiting_for=f"{sandbox} of the expired session {self.session.session_id} to be gone",
        )


def _sandbox_report(response: requests.Response) -> Any:
    """The echo agent's account of the sandbox that served the call (None if absent)."""
    try:
        return response.json().get("sandbox")
    except (ValueError, AttributeError):
        return None
