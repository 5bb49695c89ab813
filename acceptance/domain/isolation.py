"""Sessions kept apart: named sessions with files of their own, session ids that are never
issued twice, many sessions opened at the same moment, and namespaces that keep their
runtimes and sessions to themselves."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import requests
from hamcrest import (
    all_of,
    assert_that,
    described_as,
    has_entry,
    has_item,
    has_length,
    is_in,
    is_not,
)
from hamcrest.core.matcher import Matcher

from acceptance.core import matchers
from acceptance.core.clients import session_id_of
from acceptance.core.matchers import Answer, Refusal, a_uuid4, json_body
from acceptance.core.polling import eventually
from acceptance.core.runtimes import Role, Runtime, RuntimeKind, fixture_manifest
from acceptance.core.settings import Settings
from acceptance.domain.interpreters import exits_with
from acceptance.domain.lifetimes import ECHO_AGENT_FIXTURE
from acceptance.domain.load import all_at_once, within_the_limit
from acceptance.domain.sessions import open_session
from acceptance.domain.world import Session, World, required, sandbox_identity
from acceptance.platforms.base import Platform, Sandbox
from agentcube_contract.session import SESSION_HEADER


def neighbour_echo_agent(home: Runtime, namespace: str) -> dict[str, Any]:
    """The manifest of an echo agent named as the run's own, in this other namespace."""
    manifest = fixture_manifest(RuntimeKind.AGENT_RUNTIME, ECHO_AGENT_FIXTURE)
    manifest["metadata"] = {**manifest["metadata"], "name": home.name, "namespace": namespace}
    return manifest


class Isolation:
    def __init__(self, world: World, settings: Settings, platform: Platform) -> None:
        self._world = world
        self._settings = settings
        self._platform = platform
        self._named: dict[str, Session] = {}
        self._issued_before: list[str] = []  # the run's session ids before a series of sessions
        self._series: list[Session] = []  # sessions opened one after another, or together
        self._first_answers: list[requests.Response] = []
        self._closed: dict[Session, Sandbox | None] = {}

    # Named sessions.

    def open_named(self, role: Role, names: list[str]) -> None:
        for name in names:
            self._named[name] = open_session(self._world, role)

    def store(self, name: str, path: str, text: str) -> None:
        session = self._named[name]
        answer = self._world.in_session(session).upload_file(path, text.encode())
        assert_that(
            answer,
            matchers.all_met(
                matchers.succeeded(f"session {name} to store {path}"),
                matchers.carries_session_id(session.session_id),
            ),
        )

    def read(self, name: str, path: str) -> requests.Response:
        return self._world.in_session(self._named[name]).download_file(path)

    def expect_holds(self, name: str, path: str, text: str) -> None:
        assert_that(
            self.read(name, path),
            matchers.holds_bytes(f"session {name} to read {text!r} from {path}", text.encode()),
        )

    def expect_cannot_find(self, name: str, path: str) -> None:
        """The sandbox of this very session says the file is not there."""
        session = self._named[name]
        assert_that(
            self.read(name, path),
            matchers.all_met(
                matchers.refused_with(404, "File not found"),
                matchers.carries_session_id(session.session_id),
            ),
        )

    # Namespaces.

    def call_under_a_namespace_without(self, role: Role) -> None:
        """Call the runtime, without a session, under a namespace of its own name that
        nothing is ever applied in (a new one for each call)."""
        runtime = self._world.runtime(role)
        elsewhere = f"{runtime.namespace}-empty-{uuid.uuid4().hex[:8]}"
        self._world.calls(Runtime(runtime.kind, elsewhere, runtime.name)).touch()

    def apply_neighbour_echo_agent(self) -> None:
        """An echo agent named as the run's own, in the namespace beside the run's:
        neighbour_namespace, else (only on a platform that serves any namespace, localcube)
        the run's namespace with "-neighbour" added."""
        settings = self._settings
        namespace = settings.neighbour_namespace or f"{settings.namespace}-neighbour"
        manifest = neighbour_echo_agent(self._world.runtime(Role.ECHO_AGENT), namespace)
        self._world.apply_runtime(Role.NEIGHBOUR_ECHO_AGENT, manifest)

    def expect_served_only_by_the_sessions_own_sandbox(self) -> None:
        """The last call presented the session through another namespace's path: the
        sandbox that served the scenario's first echo (which opened the session) answered
        it, or it was refused."""
        call = self._world.last_call
        missing = "no echo has shown which sandbox serves the session"
        reports = required(self._world.sandbox_reports() or None, missing)
        assert_that(
            call.response,
            OwnSandboxOrRefusal(call.presented_session_id, reports[0], call.runtime),
        )

    # Session ids.

    def open_and_close_in_turn(self, count: int, role: Role) -> None:
        """Open sessions one after another with a first call each, closing each before the
        next; the ids the Router returns are judged afterwards, whether the closes succeed
        is not this series' concern."""
        runtime = self._world.runtime(role)
        self._issued_before = [session.session_id for session in self._world.ledger.sessions]
        for _ in range(count):
            answer = self._world.calls(runtime).touch()
            assert_that(answer, matchers.succeeded(f"the Router to open a session of {runtime}"))
            session = Session(session_id_of(answer) or "", runtime, self._world.caller)
            self._series.append(session)
            self._world.close_session(session)

    def expect_ids_never_issued_before(self) -> None:
        ids = [session.session_id for session in self._series]
        assert_that(ids, new_session_ids(self._issued_before))

    # Many sessions at once.

    def open_together(self, count: int, role: Role) -> None:
        """`count` callers each open a session with a first call, as many at the same moment
        as the Router's declared concurrency limit allows (all of them when none is
        declared), wave after wave; the call writes a file named after the caller."""
        runtime = self._world.runtime(role)
        limit = self._settings.max_concurrent_requests
        print(
            f"{count} sessions opened {within_the_limit(self._settings, count)} at a time"
            + (f": the declared max_concurrent_requests is {limit}" if limit else "")
        )

        def first_call(number: int) -> requests.Response:
            code = f"open('mine-{number}.txt', 'w').write('{number}')"
            return self._world.calls(runtime).execute(["python3", "-c", code])

        self._first_answers = all_at_once(self._world, self._settings, count, first_call)

    def expect_each_got_a_session(self) -> None:
        for number, answer in enumerate(self._first_answers):
            assert_that(answer, exits_with(0), f"caller {number} was not served")
        ids = [session_id_of(answer) or "" for answer in self._first_answers]
        assert_that(ids, new_session_ids(()), "the callers did not get sessions apart")

    def expect_each_holds_its_file_and_no_others(self) -> None:
        """Files the image put in the workspace (a real image's home directory has some)
        are no other caller's: only the callers' own files are judged."""
        sessions = self._sessions_of_first_answers()
        files = [f"mine-{number}.txt" for number in range(len(sessions))]
        for number, session in enumerate(sessions):
            listing = self._world.in_session(session).list_files(".")
            others = files[:number] + files[number + 1 :]
            assert_that(
                listing,
                lists_one_and_none_of(files[number], others),
                f"the workspace of caller {number}'s {session} holds files not its own",
            )

    def close_together(self) -> None:
        sessions = self._sessions_of_first_answers()
        serving = self._platform.sandboxes_of(session.session_id for session in sessions)
        for session in sessions:
            self._closed[session] = serving.get(session.session_id)
            self._world.close_session(session)

    def expect_no_sandbox_left(self) -> None:
        """Every closed session's sandbox is gone from the platform within ttl_grace."""
        platform, settings = self._platform, self._settings

        def left() -> list[str]:
            serving = platform.sandboxes_of(session.session_id for session in self._closed)
            return [
                f"{session}: {sandbox}"
                for session, sandbox in self._closed.items()
                if session.session_id in serving
                or (sandbox is not None and platform.is_running(sandbox))
            ]

        eventually(
            left,
            described_as("no sandbox of the closed sessions", has_length(0)),
            timeout=settings.ttl_grace,
            poll=settings.poll_interval,
            waiting_for=f"the sandboxes of {len(self._closed)} closed sessions to be gone",
        )

    def _sessions_of_first_answers(self) -> list[Session]:
        return [self._world.opened_by(answer) for answer in self._first_answers]


# What its answers are expected to be.


def lists_one_and_none_of(name: str, others: Sequence[str]) -> Answer:
    def listed(file_name: str) -> Matcher[Any]:
        return has_item(has_entry("name", file_name))

    return Answer(
        f"the workspace listing to hold {name} and none of {', '.join(others)}",
        status=200,
        body=has_entry("files", all_of(listed(name), *(is_not(listed(o)) for o in others))),
    )


def new_session_ids(earlier: Collection[str]) -> Matcher[Sequence[str]]:
    """Session ids, in the order they were issued: each a UUID v4 that neither an earlier
    one in the sequence nor any of `earlier` had."""

    def problem(ids: Sequence[str]) -> str | None:
        seen = set(earlier)
        for position, session_id in enumerate(ids, start=1):
            if not a_uuid4().matches(session_id):
                return f"session id {session_id!r} (number {position}) is not a UUID v4"
            if session_id in seen:
                return f"session id {session_id} (number {position}) was issued before"
            seen.add(session_id)
        return None

    return matchers.without_problem(
        "every session id a UUID v4 never issued before in this run "
        f"({len(set(earlier))} issued earlier)",
        problem,
        lambda ids: f"the ids were {', '.join(ids)}",
    )


class OwnSandboxOrRefusal(Answer):
    """The answer to a call in a session through a path that names a runtime the session
    does not belong to. Upstream's Router looks an existing session up by its id alone and
    forwards the call to the session's own sandbox; a Router that binds a session to its
    path refuses it (404, or 409 as upstream's open PR #324 proposes). Either way no other
    sandbox serves it and no new session is opened: a refusal is the Router's own (see
    Refusal()), with no session id and no sandbox's report. `sandbox`: the echo agent's
    report of the session's own."""

    def __init__(self, session_id: str, sandbox: Mapping[str, Any], runtime: Runtime) -> None:
        expectation = (
            f"the call to {runtime} in session {session_id} to be served by the session's own "
            "sandbox or refused with 404 or 409, never by another sandbox or in a new session"
        )
        self.refusals = {
            status: Refusal(expectation, status, (), by_the_router=True) for status in (404, 409)
        }
        super().__init__(
            expectation,
            status={200, *self.refusals},
            headers={SESSION_HEADER: is_in([None, session_id])},
        )
        self.identity = sandbox_identity(sandbox)

    def _own_problem(self, response: requests.Response) -> str | None:
        body = json_body(response)
        if response.status_code in self.refusals:
            problem = self.refusals[response.status_code]._problem(response)
            if problem is None and "sandbox" in body:
                return "a sandbox answered the refusal"
            return problem
        if not isinstance(body, dict):
            return "the body is not a JSON object"
        served_by = sandbox_identity(body.get("sandbox"))
        if served_by != self.identity:
            return f"it was served by sandbox {served_by}, not by the session's {self.identity}"
        if response.headers.get(SESSION_HEADER) is None:
            return f"the answer carries no {SESSION_HEADER}"
        return None
