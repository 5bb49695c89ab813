"""Warm pools, watched on the platform: which sandbox serves a session's first call, whether
the pool refills, and how long a first call from the pool takes beyond a call in a session."""

from __future__ import annotations

from collections.abc import Iterable

from hamcrest import (
    all_of,
    assert_that,
    described_as,
    equal_to,
    has_item,
    has_length,
    is_in,
    is_not,
)

from acceptance.core import matchers
from acceptance.core.polling import eventually
from acceptance.core.runtimes import Role
from acceptance.core.settings import Settings
from acceptance.domain.calls import Calls
from acceptance.domain.interpreters import prints_line
from acceptance.domain.sessions import open_session
from acceptance.domain.world import World, required, sandbox_serving
from acceptance.platforms.base import Platform, Sandbox

# How many first calls from the pool are timed (the fixture's warm pool holds 2), and how
# many calls in the last of their sessions.
FIRST_CALLS = 2
CALLS_IN_SESSION = 3
# What a first call served from the pool may take beyond a call in an existing session:
# opening the session (a claim of a waiting sandbox, the session's record), never a
# sandbox's start. Upstream's promise: the pool's sandboxes are started in advance, so a
# claim does not wait for one to start (docs/design/agentcube-proposal.md:371-384). Anchored
# to the same run's call in a session, not to its cold starts, whose time varies from run to
# run; a claim that waits on a one-second poll (pkg/workloadmanager/handlers.go:331-340)
# exceeds it every run.
CLAIM_BUDGET = 0.5
# The first call's command: as quick as possible, so that the call's time is the session's.
_PROBE = ["echo", "2"]


class WarmPools:
    def __init__(self, world: World, settings: Settings, platform: Platform) -> None:
        self._world = world
        self._platform = platform
        self._settings = settings
        self._waiting: frozenset[str] = frozenset()  # sandbox ids in the pool before the call
        self._first_calls: list[float] = []
        self._in_session: list[float] = []
        self._closed: Sandbox | None = None  # the pooled sandbox of the session closed

    def wait_until_full(self, role: Role) -> None:
        runtime = self._world.runtime(role)
        size = self._platform.warm_pool_size(runtime)
        waiting = eventually(
            lambda: self._platform.warm_sandboxes(runtime),
            described_as(f"{size} sandboxes waiting in the pool", has_length(size)),
            timeout=self._settings.warm_pool_timeout,
            poll=self._settings.poll_interval,
            waiting_for=f"the warm pool of {runtime} to be full",
        )
        self._waiting = _ids(waiting)

    def expect_no_pool(self, role: Role) -> None:
        runtime = self._world.runtime(role)
        size = self._platform.warm_pool_size(runtime)
        assert_that(
            size == 0, f"{runtime} was expected without a warm pool, but warmPoolSize is {size}"
        )
        # Every sandbox that exists before the call: any waiting, and those serving the
        # run's sessions, so that handing out one of them cannot pass for a new start.
        serving = (self._platform.sandbox_of(s.session_id) for s in self._world.ledger.sessions)
        existing = {*self._platform.warm_sandboxes(runtime), *filter(None, serving)}
        self._waiting = _ids(existing)

    def open_session_from_pool(self, role: Role) -> None:
        open_session(self._world, role)
        self.expect_served_from_pool()

    def close_session(self) -> None:
        """Close the session as a client does, remembering the sandbox that served it."""
        self._closed = self._serving_sandbox()
        session = self._world.session
        answer = self._world.close_session(session)
        assert_that(answer, matchers.succeeded(f"the WorkloadManager to close {session}"))

    def expect_closed_sandbox_gone(self) -> None:
        """The pooled sandbox of the closed session (its claim, sandbox and pod on a
        cluster) is soon gone: not handed back to the pool, not left running."""
        sandbox = required(self._closed, "the scenario has not closed a session of the pool yet")
        eventually(
            lambda: self._platform.is_running(sandbox),
            described_as(f"{sandbox} no longer running", equal_to(False)),
            timeout=self._settings.warm_pool_timeout,
            poll=self._settings.poll_interval,
            waiting_for=f"{sandbox} of the closed {self._world.session} to be gone",
        )

    def expect_served_from_pool(self, from_pool: bool = True) -> None:
        """The session is served by a sandbox that was waiting in the pool before its first
        call, or (`from_pool` False) by one that did not exist before it."""
        waiting = sorted(self._waiting)
        wanted = f"one of the {len(waiting)} sandboxes waiting in the pool before the call"
        expected, problem = is_in(waiting), "was not served by a sandbox from the warm pool"
        if not from_pool:
            wanted, expected = "a sandbox that did not exist before the call", is_not(expected)
            problem = "was served by a sandbox that already existed"
        assert_that(
            self._serving_sandbox().sandbox_id,
            described_as(wanted, expected),
            f"{self._world.session} {problem}",
        )

    def expect_pool_refilled(self, role: Role) -> None:
        """The pool is back to its size, with a new sandbox in place of the one taken."""
        runtime = self._world.runtime(role)
        size = self._platform.warm_pool_size(runtime)
        claimed = (self._closed or self._serving_sandbox()).sandbox_id
        eventually(
            lambda: _ids(self._platform.warm_sandboxes(runtime)),
            described_as(
                f"{size} sandboxes waiting, none of them {claimed}",
                all_of(has_length(size), is_not(has_item(claimed))),
            ),
            timeout=self._settings.warm_pool_timeout,
            poll=self._settings.poll_interval,
            waiting_for=f"the warm pool of {runtime} to refill after a session took {claimed}",
        )

    def time_first_calls(self, role: Role) -> None:
        """Open sessions of the interpreter with first calls, each timed from send to
        answer: as many as its warm pool holds (each a claim), at least one, at most FIRST_CALLS."""
        runtime = self._world.runtime(role)
        count = max(1, min(FIRST_CALLS, self._platform.warm_pool_size(runtime)))
        calls = self._world.calls(runtime)
        self._first_calls = [self._timed(calls, f"a first call to {runtime}") for _ in range(count)]

    def time_calls_in_session(self) -> None:
        """Time calls in the scenario's last session: what a call costs without opening one."""
        session = self._world.session
        calls = self._world.in_session(session)
        self._in_session = [
            self._timed(calls, f"a call in {session}") for _ in range(CALLS_IN_SESSION)
        ]

    def expect_claim_within_budget(self) -> None:
        """Print both times (in the scenario's output and report), then require that the
        fastest first call took at most CLAIM_BUDGET longer than the fastest call in a
        session: the fastest, since no load makes a call faster."""
        first, in_session = min(self._first_calls), min(self._in_session)
        print(
            f"fastest first call from the warm pool {first:.3f} s, fastest call in its "
            f"session {in_session:.3f} s: opening the session took {first - in_session:.3f} s"
        )
        assert_that(
            first - in_session <= CLAIM_BUDGET,
            f"the first call from the warm pool took {first:.3f} s at best, "
            f"{first - in_session:.3f} s more than the {in_session:.3f} s of a call in its "
            f"session: more than the {CLAIM_BUDGET:g} s a claim of a waiting sandbox may take",
        )

    def _timed(self, calls: Calls, what: str) -> float:
        """The seconds from sending the probe to its answer, which must be right."""
        assert_that(calls.execute(_PROBE), prints_line("2"), f"{what} failed")
        call = self._world.last_call
        return call.answered_at - call.sent_at

    def _serving_sandbox(self) -> Sandbox:
        return sandbox_serving(self._platform, self._world.session)


def _ids(sandboxes: Iterable[Sandbox]) -> frozenset[str]:
    return frozenset(sandbox.sandbox_id for sandbox in sandboxes)
