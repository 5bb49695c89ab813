"""The one way a test waits for something to happen: `wait_until`, on the suite's own
`acceptance.core.polling.eventually` (tenacity), never a fixed sleep or a loop of its own.

A timeout here only bounds how long a broken program makes the test wait before it fails; a
loaded machine makes the wait longer, never the test fail. So timeouts are generous, and a
test judges order and causality (what happened before what), not how fast.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any, TypeVar

from hamcrest.core.base_matcher import BaseMatcher
from hamcrest.core.description import Description
from hamcrest.core.matcher import Matcher

from acceptance.core.polling import consistently, eventually

T = TypeVar("T")


class _Satisfying(BaseMatcher[Any]):
    def __init__(self, check: Callable[[Any], bool], description: str) -> None:
        self._check = check
        self._description = description

    def _matches(self, item: Any) -> bool:
        return bool(self._check(item))

    def describe_to(self, description: Description) -> None:
        description.append_text(self._description)


def satisfying(check: Callable[[T], bool], description: str) -> Matcher[T]:
    """A matcher of the values `check` holds of, described as `description`."""
    return _Satisfying(check, description)


def wait_until(
    probe: Callable[[], T],
    what: str,
    *,
    matching: Matcher[T] | None = None,
    timeout: float = 30.0,
    poll: float = 0.02,
    ignoring: tuple[type[BaseException], ...] = (),
) -> T:
    """The first value of `probe` that is true (or that `matching` matches); after `timeout`
    seconds the test fails, naming `what` and the last value seen."""
    return eventually(
        probe,
        matching if matching is not None else satisfying(bool, "a true value"),
        timeout=timeout,
        poll=poll,
        waiting_for=what,
        ignoring=ignoring,
        progress_stream=io.StringIO(),  # the test's own report says what it waited for
    )


def holds_for(
    probe: Callable[[], T], matching: Matcher[T], what: str, *, seconds: float, poll: float = 0.05
) -> None:
    """That nothing happens: every value of `probe` for `seconds` matches (`consistently`).
    A loaded machine probes less often in that time, which makes the check weaker, never
    wrong."""
    consistently(
        probe,
        matching,
        duration=seconds,
        poll=poll,
        holding=what,
        progress_stream=io.StringIO(),
    )
