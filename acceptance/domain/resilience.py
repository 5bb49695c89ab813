"""The Router under stress: more calls at once than its concurrency limit, a restart of the
Router, and a sandbox that dies under a live session."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

import requests
from hamcrest import assert_that, described_as, equal_to, has_key

from acceptance.core import matchers
from acceptance.core.matchers import Answer, Refusal, json_body
from acceptance.core.polling import eventually
from acceptance.core.runtimes import Role
from acceptance.core.settings import Settings
from acceptance.core.transport import NoAnswer
from acceptance.domain.calls import TOUCH_TEXT, Caller
from acceptance.domain.load import in_waves
from acceptance.domain.long_tasks import finished_long_call
from acceptance.domain.sessions import expect_served_by_the_same_sandbox, open_session
from acceptance.domain.world import Session, World, required, sandbox_serving
from acceptance.platforms.base import Platform, Target

# The limit of the second localcube a localcube the suite started runs for the overload
# scenario (a cluster declares its Router's limit with max_concurrent_requests).
LOCAL_LIMIT = 4


class Resilience:
    def __init__(
        self, world: World, settings: Settings, platform: Platform, target: Target
    ) -> None:
        self._world = world
        self._settings = settings
        self._platform = platform
        self._target = target
        self._limit = 0
        self._limited: Caller | None = None
        self._burst: list[tuple[requests.Response, float]] = []  # answers and their latency
        self._kept_files: dict[tuple[Session, str], bytes] = {}
        self._failed_call: tuple[requests.Response | None, float, str] | None = None

    # Overload.

    @contextmanager
    def limited_router(self) -> Iterator[None]:
        """A Router whose concurrency limit is known, while in use (@fixture.limited-router):
        the target's, when declared, else a second localcube with a low limit."""
        declared = self._settings.max_concurrent_requests
        self._limit = declared or LOCAL_LIMIT
        router: AbstractContextManager[str] = (
            nullcontext(self._target.router_url)
            if declared
            else self._platform.concurrency_limited_router(LOCAL_LIMIT)
        )
        with router as url:
            # Its calls hold their slot on purpose: their latencies would mislead the run's.
            self._limited = self._world.caller_through(url)
            yield

    def open_session_on_limited_router(self) -> None:
        runtime = self._world.runtime(Role.ECHO_AGENT)
        answer = self._world.calls(runtime, caller=self._limited_caller).invoke("echo", json={})
        assert_that(answer, matchers.succeeded("the limited Router to open a session"))

    def burst(self, extra: int) -> None:
        """As many slow calls as the limit, and `extra` more, all at the same moment."""
        session, caller = self._world.session, self._limited_caller
        count = self._limit + extra

        def slow_call(_: int) -> tuple[requests.Response, float]:
            started = time.perf_counter()
            answer = caller.router.invoke(
                session.runtime,
                "echo/sleep",
                session_id=session.session_id,
                json={"seconds": self._settings.overload_hold},
                timeout=self._settings.overload_hold + self._settings.answer_allowance,
                token=caller.token,
            )
            return answer, time.perf_counter() - started

        gather_timeout = self._settings.burst_gather_timeout
        self._burst = in_waves(count, count, slow_call, gather_timeout=gather_timeout)

    def expect_limit_served(self) -> None:
        served = self._burst_part(False, f"{self._limit} calls served, as many as the limit")
        for answer, _ in served:
            assert_that(answer, finished_long_call())

    def expect_extra_refused_at_once(self, extra: int) -> None:
        refused = self._burst_part(True, f"{extra} calls over the limit refused", extra)
        for answer, seconds in refused:
            assert_that(answer, refused_as_overloaded())
            assert_that(
                seconds < self._settings.overload_hold,
                f"a call over the limit was refused only after {seconds:.2f} s, not at once",
            )

    def expect_served_again(self) -> None:
        answer = self._world.in_session().echo(TOUCH_TEXT)
        assert_that(answer, matchers.echoes(TOUCH_TEXT))

    def _burst_part(
        self, refused: bool, expectation: str, count: int | None = None
    ) -> list[tuple[requests.Response, float]]:
        """The burst's calls refused as overloaded (429), or the others: `count` of them
        (None: as many as the limit)."""
        part = [(answer, s) for answer, s in self._burst if (answer.status_code == 429) == refused]
        statuses = sorted(answer.status_code for answer, _ in self._burst)
        assert_that(
            len(part),
            described_as(expectation, equal_to(self._limit if count is None else count)),
            f"with a limit of {self._limit}, the burst's statuses were {statuses}",
        )
        return part

    @property
    def _limited_caller(self) -> Caller:
        return required(
            self._limited,
            "the scenario has no Router with a known limit: tag it @fixture.limited-router",
        )

    # Router restart.

    def open_answered_session(self, role: Role) -> None:
        session = open_session(self._world, role)
        answer = self._world.in_session(session).touch()
        assert_that(answer, matchers.succeeded(f"{session} to answer a call"))

    def open_session_holding(self, role: Role, path: str) -> None:
        session = open_session(self._world, role)
        content = f"kept by {session.session_id}".encode()
        answer = self._world.in_session(session).upload_file(path, content)
        assert_that(answer, matchers.succeeded(f"{session} to store {path}"))
        self._kept_files[session, path] = content

    def expect_agent_session_survived(self, role: Role) -> None:
        """The agent session is served after the restart, by the same sandbox."""
        expect_served_by_the_same_sandbox(self._world, self._session_of(role), "across the restart")

    def expect_file_survived(self, role: Role, path: str) -> None:
        session = self._session_of(role)
        missing = f"the scenario has not stored {path} in {session}"
        content = required(self._kept_files.get((session, path)), missing)
        answer = self._world.in_session(session).download_file(path)
        assert_that(
            answer,
            matchers.holds_bytes(f"{session} to still hold {path} after the restart", content),
        )

    def _session_of(self, role: Role) -> Session:
        runtime = self._world.runtime(role)
        found = (one for one in reversed(self._world.sessions) if one.runtime == runtime)
        return required(next(found, None), f"the scenario has no session of the {role.phrase}")

    # A sandbox that dies.

    def kill_sandbox(self) -> None:
        """Kill the session's sandbox and wait until the platform shows it dead: a killed
        process can linger for a moment. On a cluster that is the killed pod gone (by its
        uid), not every object of the session: agent-sandbox recreates the pod under the
        same name within seconds, and the Sandbox and its claim stay until the
        WorkloadManager's collector removes the session."""
        platform = self._platform
        sandbox = sandbox_serving(platform, self._world.session)
        platform.kill_sandbox(sandbox)
        eventually(
            lambda: platform.is_killed(sandbox),
            described_as(f"{sandbox} no longer running", equal_to(True)),
            timeout=self._settings.sandbox_gone_timeout,
            poll=self._settings.poll_interval,
            waiting_for=f"the platform to show the killed {sandbox} gone (sandbox_gone_timeout)",
        )

    def call_dead_session(self) -> None:
        """One call in the session, waiting no longer than fail_fast for an answer."""
        limit = self._settings.fail_fast
        answer: requests.Response | None = None
        problem, started = "", time.perf_counter()
        try:
            answer = self._world.in_session().execute(["python3", "-c", "pass"], wait=limit)
        except NoAnswer as error:
            problem = str(error)
        self._failed_call = (answer, time.perf_counter() - started, problem)

    def expect_failed_fast(self) -> None:
        missing = "the scenario has not called the session since its sandbox died"
        answer, seconds, problem = required(self._failed_call, missing)
        limit = self._settings.fail_fast
        if answer is None:
            raise AssertionError(
                f"a call in a session whose sandbox died must fail within fail_fast "
                f"({limit:g} s) with 502, 503 or 504; it hung instead: {problem}"
            )
        assert_that(answer, SandboxGone())
        assert_that(
            seconds <= limit,
            f"the call failed only after {seconds:.2f} s, past fail_fast ({limit:g} s)",
        )


# What its answers are expected to be.

# What upstream's Router answers when it cannot reach a session's sandbox, by status
# (pkg/router/handlers.go:246-257 at 939abb5): a refused connection, a dial or read that
# timed out (a pod address that stops answering), and any other error.
SANDBOX_GONE_ERRORS = {
    502: "sandbox unreachable",
    503: "sandbox unreachable",
    504: "sandbox timeout",
}


def refused_as_overloaded() -> Answer:
    """The Router's 429 past --max-concurrent-requests (pkg/router/server.go:142-148)."""
    return Refusal(
        "the Router to refuse the call with 429 because it is overloaded, opening no session "
        "(code SERVER_OVERLOADED)",
        429,
        ("server overloaded",),
        code="SERVER_OVERLOADED",
        by_the_router=True,
    )


class SandboxGone(Answer):
    """What the Router answers when the session's sandbox is gone: 502, 503 or 504, each
    with the error words upstream gives that status."""

    def __init__(self) -> None:
        super().__init__(
            "the Router to answer 502 or 503 (sandbox unreachable) or 504 (sandbox timeout) "
            "because the session's sandbox is gone",
            status=SANDBOX_GONE_ERRORS,
            body=has_key("error"),
        )

    def _own_problem(self, response: requests.Response) -> str | None:
        words = SANDBOX_GONE_ERRORS[response.status_code]
        error = json_body(response).get("error")
        if not isinstance(error, str) or words not in error.lower():
            return f"a {response.status_code} must say {words!r}, but the error was {error!r}"
        return None
