"""Warm pools, watched on the platform: which sandbox serves a session's first call, whether
the pool refills, and how long a first call takes with a pool and without one."""

from __future__ import annotations

import time

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
from hamcrest.core.matcher import Matcher

from acceptance.core import matchers
from acceptance.core.polling import eventually
from acceptance.core.runtimes import Role, Runtime
from acceptance.core.settings import Settings
from acceptance.domain.sessions import open_session
from acceptance.domain.world import World
from acceptance.platforms.base import Platform, Sandbox

# How many first calls of each kind are timed (the fixture's warm pool holds 2).
FIRST_CALLS = 2
# How much slower than the fastest cold first call the fastest warm one may be: a pool must
# not make first calls slower, but where a cold start forks in milliseconds (localcube) the
# two differ by less than a command's own noise. A pool that does not help at all (a warm
# first call waiting for a start) is slower by far more.
WARM_TO_COLD_BOUND = 1.5
# The first call's command: as quick as possible, so that the call's time is the session's.
_PROBE = ["echo", "2"]


class WarmPools:
    def __init__(self, world: World, settings: Settings, platform: Platform) -> None:
        self._world = world
        self._platform = platform
        self._settings = settings
        self._waiting: frozenset[str] = frozenset()  # sandbox ids in the pool before the call
        self._first_calls: dict[Role, list[float]] = {}
        self._closed: Sandbox | None = None  # the pooled sandbox of the session closed

    def wait_until_full(self, role: Role) -> None:
        """Wait until the pool holds warmPoolSize sandboxes, and remember them."""
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
        assert size == 0, f"{runtime} was expected without a warm pool, but warmPoolSize is {size}"
        # Every sandbox that exists before the call: any waiting, and those serving the
        # run's sessions, so that handing out one of them cannot pass for a new start.
        serving = (self._platform.sandbox_of(s.session_id) for s in self._world.run_sessions)
        existing = {*self._platform.warm_sandboxes(runtime), *filter(None, serving)}
        self._waiting = _ids(existing)

    def open_session_from_pool(self, role: Role) -> None:
        """Open a session, which a sandbox that was waiting in the pool must serve."""
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
        sandbox = self._closed_sandbox
        eventually(
            lambda: self._platform.is_running(sandbox),
            described_as(f"{sandbox} no longer running", equal_to(False)),
            timeout=self._settings.warm_pool_timeout,
            poll=self._settings.poll_interval,
            waiting_for=f"{sandbox} of the closed {self._world.session} to be gone",
        )

    def expect_served_from_pool(self) -> None:
        self._expect_serving_sandbox(
            is_in(sorted(self._waiting)),
            f"one of the {len(self._waiting)} sandboxes waiting in the pool before the call",
            "was not served by a sandbox from the warm pool",
        )

    def expect_started_for_session(self) -> None:
        self._expect_serving_sandbox(
            is_not(is_in(sorted(self._waiting))),
            "a sandbox that did not exist before the call",
            "was served by a sandbox that already existed",
        )

    def _expect_serving_sandbox(self, matcher: Matcher[str], wanted: str, problem: str) -> None:
        assert_that(
            self._serving_sandbox().sandbox_id,
            described_as(wanted, matcher),
            f"{self._world.session} {problem}",
        )

    def expect_pool_refilled(self, role: Role) -> None:
        """The pool is back to its size, with a sandbox that was not there before in place
        of the one the session took."""
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
        answer: as many as its warm pool holds (a pool's every one is a claim), at most
        FIRST_CALLS; the fastest of them is compared, which no load can make faster."""
        runtime = self._world.runtime(role)
        pool = self._platform.warm_pool_size(runtime)
        count = min(FIRST_CALLS, pool) if pool else FIRST_CALLS
        self._first_calls[role] = [self._timed_first_call(runtime) for _ in range(count)]

    def _timed_first_call(self, runtime: Runtime) -> float:
        started = time.perf_counter()
        answer = self._world.calls(runtime).execute(_PROBE)
        elapsed = time.perf_counter() - started
        assert_that(answer, matchers.prints_line("2"), f"the first call to {runtime} failed")
        return elapsed

    def expect_warm_faster(self, warm: Role, cold: Role) -> None:
        """Print the ratio seen (in the scenario's output and report), then require that the
        fastest warm first call was not slower than the fastest cold one, beyond noise."""
        warm_seconds, cold_seconds = min(self._first_calls[warm]), min(self._first_calls[cold])
        ratio = warm_seconds / cold_seconds
        print(
            f"fastest first call with a warm pool {warm_seconds:.3f} s, without "
            f"{cold_seconds:.3f} s: warm/cold = {ratio:.2f}"
        )
        assert ratio <= WARM_TO_COLD_BOUND, (
            f"the first call with a warm pool took {warm_seconds:.3f} s at best, slower than "
            f"the {cold_seconds:.3f} s of the fastest cold start (warm/cold = {ratio:.2f}, "
            f"bound {WARM_TO_COLD_BOUND:g})"
        )

    @property
    def _closed_sandbox(self) -> Sandbox:
        if self._closed is None:
            raise AssertionError("the scenario has not closed a session of the pool yet")
        return self._closed

    def _serving_sandbox(self) -> Sandbox:
        session = self._world.session
        sandbox = self._platform.sandbox_of(session.session_id)
        if sandbox is None:
            raise AssertionError(f"the platform shows no sandbox serving {session}")
        return sandbox


def _ids(sandboxes: frozenset[Sandbox]) -> frozenset[str]:
    return frozenset(sandbox.sandbox_id for sandbox in sandboxes)
