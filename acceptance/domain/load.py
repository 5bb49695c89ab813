"""Load within what the target declares: bursts of calls at the same moment, never more at
once than the Router's declared max_concurrent_requests (past it, its 429 would be right),
and sustained load as upstream's load tests apply it (test/e2e/e2e_test.go:1490-1605):
sessions opened at a steady rate, each by a command that must print what it was asked to,
each closed once answered, reported whether or not load_required_share of them succeeded."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

import requests
from hamcrest import assert_that

from acceptance.core.clients import session_id_of
from acceptance.core.matchers import json_body
from acceptance.core.measurements import percentile
from acceptance.core.runtimes import Role, Runtime
from acceptance.core.settings import Settings
from acceptance.core.transport import NoAnswer
from acceptance.domain.calls import Caller
from acceptance.domain.world import Session, World, required
from acceptance.platforms.base import Target

PERCENTILES = (0.5, 0.9, 0.99)
T = TypeVar("T")


def within_the_limit(settings: Settings, count: int) -> int:
    """How many of `count` calls may be made at the same moment: all of them, or no more
    than the Router's declared max_concurrent_requests."""
    limit = settings.max_concurrent_requests
    return count if limit is None else min(count, limit)


def in_waves(
    count: int, at_once: int, call: Callable[[int], T], *, gather_timeout: float
) -> list[T]:
    """`call(0)` to `call(count - 1)`, `at_once` of them at the same moment, wave after wave
    (each wave's callers wait for each other up to gather_timeout); the results in order."""
    results: list[T] = []
    for first in range(0, count, at_once):
        wave = range(first, min(first + at_once, count))
        gate = threading.Barrier(len(wave), timeout=gather_timeout)

        def gathered(number: int, gate: threading.Barrier = gate) -> T:
            gate.wait()
            return call(number)

        with ThreadPoolExecutor(len(wave)) as callers:
            results += callers.map(gathered, wave)
    return results


def all_at_once(world: World, settings: Settings, count: int, call: Callable[[int], T]) -> list[T]:
    """`call(0)` to `call(count - 1)` through the scenario's Router, as many at the same
    moment as its declared limit allows, their latencies kept apart from the run's."""
    at_once = within_the_limit(settings, count)
    with world.caller.router.at_once(at_once):
        return in_waves(count, at_once, call, gather_timeout=settings.burst_gather_timeout)


@dataclass(frozen=True)
class Outcome:
    """One session of the load: its first call's seconds, and the kind of what went wrong."""

    seconds: float
    error: str | None = None


def error_kind(answer: requests.Response, expected_stdout: str) -> str | None:
    """What was wrong with a first call's answer, in words that group alike failures."""
    body = json_body(answer)
    if answer.status_code != 200:
        error = body.get("error") if isinstance(body, dict) else None
        return f"status {answer.status_code}" + (f": {error}" if error else "")
    if not session_id_of(answer):
        return "no session id in the answer"
    if not isinstance(body, dict):
        return "an answer that is not PicoD's JSON"
    return None if body.get("stdout") == expected_stdout else "wrong output"


class SustainedLoad:
    def __init__(self, world: World, settings: Settings, target: Target) -> None:
        self._world = world
        self._settings = settings
        self._target = target
        self._outcomes: list[Outcome] = []
        self._elapsed = 0.0
        self._runtime: Runtime | None = None

    def apply(self, role: Role) -> None:
        """Open load_sessions sessions, load_rate a second, each in a thread of its own
        (as upstream's goroutines), and report what they saw."""
        self._runtime = runtime = self._world.runtime(role)
        count, rate = self._settings.load_sessions, self._settings.load_rate
        # A Router of its own: loaded latencies must not mix with the run's.
        caller = self._world.caller_through(self._target.router_url)
        started = time.monotonic()
        with ThreadPoolExecutor(count) as callers:
            futures = []
            for number in range(count):
                time.sleep(max(0.0, started + number / rate - time.monotonic()))
                futures.append(callers.submit(self._one_session, caller, runtime, number))
            self._outcomes = [future.result() for future in futures]
        self._elapsed = time.monotonic() - started
        report = self.report()
        print(report)  # in the scenario's output and report
        self._world.ledger.measured.append(report)  # and at the end of the run, passed or not

    def _one_session(self, caller: Caller, runtime: Runtime, number: int) -> Outcome:
        text = f"Load test request {number}!"
        started = time.perf_counter()
        try:
            answer = self._world.calls(runtime, caller=caller).execute(["echo", text])
        except NoAnswer:
            return Outcome(time.perf_counter() - started, "no answer")
        seconds = time.perf_counter() - started
        error = error_kind(answer, f"{text}\n")
        session_id = session_id_of(answer)
        if session_id:
            closing = self._world.close_session(Session(session_id, runtime, caller=caller))
            if closing.status_code != 200 and error is None:
                error = f"closing the session: status {closing.status_code}"
        return Outcome(seconds, error)

    def report(self) -> str:
        """What the load saw, in the words of upstream's report and a few more."""
        count = len(self._outcomes)
        succeeded = [outcome.seconds for outcome in self._outcomes if outcome.error is None]
        lines = [
            f"Sustained load on {self._runtime}: {count} sessions, "
            f"{self._settings.load_rate} a second (from the first call to the last answer "
            f"{self._elapsed:.1f} s, {count / self._elapsed:.2f} a second)",
            f"    succeeded: {len(succeeded)} of {count} ({self.share:.1%}; required "
            f"{self._settings.load_required_share:.0%})",
        ]
        if succeeded:
            shown = ", ".join(
                f"p{round(fraction * 100)} {percentile(succeeded, fraction):.3f} s"
                for fraction in PERCENTILES
            )
            lines.append(f"    first-call latency of those: {shown}, max {max(succeeded):.3f} s")
        errors = Counter(outcome.error for outcome in self._outcomes if outcome.error)
        lines += [f"    error: {kind}: {times}" for kind, times in errors.most_common()]
        return "\n".join(lines)

    @property
    def share(self) -> float:
        outcomes = required(self._outcomes or None, "the scenario has applied no load yet")
        return sum(outcome.error is None for outcome in outcomes) / len(outcomes)

    def expect_required_share(self) -> None:
        wanted = self._settings.load_required_share
        assert_that(
            self.share >= wanted,
            f"only {self.share:.1%} of the sessions succeeded, fewer than the "
            f"{wanted:.0%} required:\n{self.report()}",
        )
