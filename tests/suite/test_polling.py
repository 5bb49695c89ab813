from __future__ import annotations

import io
import itertools
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from hamcrest import equal_to, greater_than
from hamcrest.core.base_matcher import BaseMatcher
from hamcrest.core.description import Description

from acceptance.core import polling
from acceptance.core.polling import consistently, eventually, waiting


def test_eventually_returns_the_first_matching_value() -> None:
    values = iter([1, 2, 3, 4])
    assert eventually(lambda: next(values), equal_to(3), timeout=2, poll=0.01, waiting_for="3") == 3


def test_eventually_reports_the_last_value_seen_when_it_gives_up() -> None:
    counter = itertools.count()
    with pytest.raises(AssertionError) as error:
        eventually(
            lambda: next(counter),
            greater_than(1000),
            timeout=0.2,
            poll=0.05,
            waiting_for="a big number",
        )
    message = str(error.value)
    assert "waiting for a big number" in message
    assert "Expected: a value greater than <1000>" in message
    assert "probes) waiting for a big number" in message
    assert "     but: was <" in message


def test_eventually_tolerates_the_exceptions_it_is_told_to_ignore() -> None:
    attempts = iter([ConnectionError("down"), ConnectionError("down"), "up"])

    def probe() -> str:
        value = next(attempts)
        if isinstance(value, Exception):
            raise value
        return value

    assert (
        eventually(
            probe,
            equal_to("up"),
            timeout=2,
            poll=0.01,
            waiting_for="up",
            ignoring=(ConnectionError,),
        )
        == "up"
    )


def test_eventually_reports_an_ignored_exception_as_the_last_thing_seen() -> None:
    def probe() -> str:
        raise ConnectionError("still down")

    with pytest.raises(AssertionError, match="the last probe raised ConnectionError: still down"):
        eventually(
            probe,
            equal_to("up"),
            timeout=0.1,
            poll=0.02,
            waiting_for="up",
            ignoring=(ConnectionError,),
        )


def test_eventually_lets_other_exceptions_through() -> None:
    def probe() -> str:
        raise KeyError("bug")

    with pytest.raises(KeyError):
        eventually(probe, equal_to("up"), timeout=1, poll=0.01, waiting_for="up")


def test_consistently_returns_every_value_seen() -> None:
    values = consistently(lambda: 5, equal_to(5), duration=0.1, poll=0.02, holding="it is 5")
    assert len(values) >= 3 and set(values) == {5}


def test_consistently_fails_at_the_first_value_that_breaks_the_expectation() -> None:
    values = iter([5, 5, 6, 5])
    with pytest.raises(AssertionError) as error:
        consistently(lambda: next(values), equal_to(5), duration=2, poll=0.01, holding="it is 5")
    message = str(error.value)
    assert "(probe 3), it no longer held that it is 5" in message
    assert "Expected: <5>" in message and "but: was <6>" in message


class _JudgedOnceOnly(BaseMatcher[int]):
    """A matcher whose verdict flips after its first judgement: a wait that judged a value
    again to write its message would report a failure as a pass, or a value as an error."""

    def __init__(self) -> None:
        self.judgements = itertools.count()

    def _matches(self, item: int) -> bool:
        return next(self.judgements) > 0

    def describe_to(self, description: Description) -> None:
        description.append_text("a value judged once")


def test_eventually_reports_the_value_it_gave_up_on_as_judged_when_it_gave_up() -> None:
    with pytest.raises(AssertionError, match=r"(?s)Expected: a value judged once.*but: was <7>"):
        eventually(lambda: 7, _JudgedOnceOnly(), timeout=0, poll=0.01, waiting_for="seven")


def test_consistently_fails_on_the_value_that_broke_it_as_judged_when_it_broke() -> None:
    with pytest.raises(AssertionError, match=r"(?s)no longer held that seven.*but: was <7>"):
        consistently(lambda: 7, _JudgedOnceOnly(), duration=1, poll=0.01, holding="seven")


def test_long_waits_print_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(polling, "PROGRESS_EVERY", 0.05)
    stream = io.StringIO()
    with pytest.raises(AssertionError):
        eventually(
            lambda: 0,
            equal_to(1),
            timeout=0.3,
            poll=0.02,
            waiting_for="one",
            progress_stream=stream,
        )
    lines = stream.getvalue().splitlines()
    assert lines, "no progress was printed"
    assert "elapsed, deadline 0.3 s: waiting for one" in lines[0]


def test_a_long_blocking_call_prints_progress_until_it_returns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(polling, "PROGRESS_EVERY", 0.05)
    stream = io.StringIO()
    with waiting("the answer to GET /slow", 30, stream):
        time.sleep(0.3)
    printed = stream.getvalue()
    lines = printed.splitlines()
    assert lines, "no progress was printed"
    assert "elapsed, deadline 30.0 s: waiting for the answer to GET /slow" in lines[0]
    time.sleep(0.2)
    assert stream.getvalue() == printed, "progress goes on after the call returned"


def test_short_waits_print_nothing() -> None:
    stream = io.StringIO()
    eventually(
        lambda: 1, equal_to(1), timeout=5, poll=0.01, waiting_for="one", progress_stream=stream
    )
    assert stream.getvalue() == ""


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_progress_is_one_line_erased_at_the_end(monkeypatch) -> None:
    monkeypatch.setattr(polling, "PROGRESS_EVERY", 0.05)
    terminal = Terminal()
    eventually(
        iter([0, 0, 0, 0, 0, 0, 0, 0, 1]).__next__,
        equal_to(1),
        timeout=5,
        poll=0.02,
        waiting_for="one",
        progress_stream=terminal,
    )
    output = terminal.getvalue()
    assert "\n" not in output
    assert output.startswith("\r\x1b[K      ... ")
    assert "deadline 5.0 s: waiting for one" in output
    assert output.endswith("\r\x1b[K")


def test_calls_waiting_at_once_for_the_same_answer_share_one_progress_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(polling, "PROGRESS_EVERY", 0.05)
    # A registry of its own: one left by an earlier test ticks at the old pace.
    own_waiting = polling._BlockingWaits().waiting
    stream = io.StringIO()
    callers = 20
    gate = threading.Barrier(callers)

    def call() -> None:
        gate.wait()
        with own_waiting("the answer to POST /v1/code-interpreter", 30, stream):
            time.sleep(0.3)

    with ThreadPoolExecutor(callers) as pool:
        list(pool.map(lambda _: call(), range(callers)))
    lines = stream.getvalue().splitlines()
    assert lines, "no progress was printed"
    assert len(lines) < callers, f"one line per tick, not per caller: {lines}"
    assert any(f"({callers} calls at once)" in line for line in lines), lines
    assert all("waiting for the answer to POST /v1/code-interpreter" in line for line in lines)
