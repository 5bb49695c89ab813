"""Waiting without fixed sleeps: `eventually` (on tenacity) and `consistently` probe a value
and judge it with a PyHamcrest matcher, failing with the expectation and the last value
seen; `waiting` reports one blocking call. A wait longer than a couple of seconds prints
its progress past behave's output capture, one line for many threads waiting alike.
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, TypeVar

from hamcrest.core.matcher import Matcher
from hamcrest.core.string_description import StringDescription
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    retry_if_result,
    stop_before_delay,
    wait_fixed,
)

T = TypeVar("T")

PROGRESS_EVERY = 2.0
_ERASE_LINE = "\r\x1b[K"


class Progress:
    """Reports a long wait every PROGRESS_EVERY seconds: on a terminal in one line, erased
    at the end so that behave's pretty formatter can rewrite its step line; in a log, a
    line each time; `waiters`: how many calls wait for the same."""

    def __init__(self, what: str, deadline: float, stream: IO[str] | None = None) -> None:
        self._what = what
        self._deadline = deadline
        self._stream = stream or sys.__stderr__ or sys.stderr
        self._live = self._stream.isatty()
        self._next = PROGRESS_EVERY
        self._shown = False
        self._started = time.monotonic()
        self.waiters = 1

    def tick(self) -> None:
        elapsed = time.monotonic() - self._started
        if elapsed < self._next:
            return
        self._next = elapsed + PROGRESS_EVERY
        line = f"      ... {elapsed:.1f} s elapsed, deadline {self._deadline:.1f} s: {self._what}"
        if self.waiters > 1:
            line += f" ({self.waiters} calls at once)"
        if self._live:  # one line, cut to the terminal's width: a wrapped line cannot be erased
            width = shutil.get_terminal_size().columns - 1
            if len(line) > width:
                line = line[: width - 3] + "..."
            self._stream.write(_ERASE_LINE + line)
        else:
            self._stream.write(f"{line}\n")
        self._stream.flush()
        self._shown = True

    def close(self) -> None:
        if self._live and self._shown:
            self._stream.write(_ERASE_LINE)
            self._stream.flush()


class _BlockingWaits:
    """Every blocking call waiting now, by what it waits for: calls made at once for the
    same thing are reported as one line with their count, by one ticking thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[tuple[str, float, int], Progress] = {}
        self._ticking = False

    @contextmanager
    def waiting(self, what: str, deadline: float, stream: IO[str] | None = None) -> Iterator[None]:
        """Report progress while the block waits in one blocking call (an HTTP request)."""
        key = (what, deadline, id(stream))
        with self._lock:
            progress = self._waiting.get(key)
            if progress is None:
                progress = self._waiting[key] = Progress(f"waiting for {what}", deadline, stream)
            else:
                progress.waiters += 1
            if not self._ticking:
                self._ticking = True
                threading.Thread(target=self._tick, name="progress", daemon=True).start()
        try:
            yield
        finally:
            with self._lock:
                progress.waiters -= 1
                if progress.waiters == 0:
                    del self._waiting[key]
                    progress.close()

    def _tick(self) -> None:
        while True:
            time.sleep(PROGRESS_EVERY / 4)
            with self._lock:
                if not self._waiting:
                    self._ticking = False
                    return
                for progress in self._waiting.values():
                    progress.tick()


waiting = _BlockingWaits().waiting


def _mismatch(matcher: Matcher[T], value: T) -> str:
    description = StringDescription()
    matcher.describe_mismatch(value, description)
    return str(description)


def _failure(reason: str, matcher: Matcher[T], but: str) -> AssertionError:
    """hamcrest's message for a verdict the wait already reached: the value is not judged
    again, so a matcher whose verdict changes cannot turn a failure into a pass."""
    expected = StringDescription().append_description_of(matcher)
    return AssertionError(f"{reason}\nExpected: {expected}\n     but: {but}")


def eventually(
    probe: Callable[[], T],
    matcher: Matcher[T],
    *,
    timeout: float,
    poll: float,
    waiting_for: str,
    ignoring: tuple[type[BaseException], ...] = (),
    progress_stream: IO[str] | None = None,
) -> T:
    """Probe until the value matches and return it; fail after `timeout` seconds.
    Exceptions of the `ignoring` types count as "not yet"; others end the wait at once."""
    progress = Progress(f"waiting for {waiting_for}", timeout, progress_stream)
    retrying = Retrying(
        stop=stop_before_delay(timeout),
        wait=wait_fixed(poll),
        retry=retry_if_exception_type(ignoring) | retry_if_result(lambda v: not matcher.matches(v)),
        before_sleep=lambda _: progress.tick(),
        retry_error_callback=lambda state: state,
    )
    try:
        result = retrying(probe)
    finally:
        progress.close()
    if isinstance(result, RetryCallState):
        outcome = result.outcome
        assert outcome is not None  # tenacity gives up after an attempt, never before
        gave_up = (
            f"Gave up after {result.seconds_since_start:.1f} s "
            f"({result.attempt_number} probes) waiting for {waiting_for}."
        )
        if outcome.failed:
            error = outcome.exception()
            but = f"the last probe raised {type(error).__name__}: {error}"
        else:
            but = _mismatch(matcher, outcome.result())
        raise _failure(gave_up, matcher, but)
    return result


def consistently(
    probe: Callable[[], T],
    matcher: Matcher[T],
    *,
    duration: float,
    poll: float,
    holding: str,
    progress_stream: IO[str] | None = None,
    raising: bool = True,
) -> list[T]:
    """Probe for `duration` seconds; every value must match. Returns the values seen, up
    to the first that did not match; `raising`: fail with that value instead."""
    seen: list[T] = []
    progress = Progress(f"checking that {holding}", duration, progress_stream)
    started = time.monotonic()
    try:  # as tenacity's stop_before_delay: no probe starts past the duration
        seen.append(probe())
        while (held := matcher.matches(seen[-1])) and time.monotonic() - started + poll < duration:
            time.sleep(poll)
            progress.tick()
            seen.append(probe())
    finally:
        progress.close()
    if raising and not held:
        after = f"After {time.monotonic() - started:.1f} s of {duration:.1f} s"
        reason = f"{after} (probe {len(seen)}), it no longer held that {holding}."
        raise _failure(reason, matcher, _mismatch(matcher, seen[-1]))
    return seen
