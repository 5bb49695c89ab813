"""The refusal after a hard lifetime, as a real cluster gives it: agent-sandbox deletes the pod
at the Sandbox's shutdownTime and the WorkloadManager's collector removes the session up to
15 s later, so the first call not served may fail with the sandbox gone (502) and only the
calls after the collector's pass are refused as not found (issue 22). The suite waits for
that refusal within gc_interval; a session the Router never refuses still fails. A stand-in
session answers 502 for a while after its lifetime, then 404."""

from __future__ import annotations

import time
from collections.abc import Callable
from types import SimpleNamespace

import pytest
import requests

from acceptance.domain.calls import Call
from tests.suite.stand_in_session import (
    LIFETIME,
    NOT_FOUND,
    lifetimes_of,
    world_whose_session_ends,
)

SANDBOX_GONE = (502, {"error": "sandbox unreachable: dial tcp 10.244.0.7:8080: refused"})


def world_collected_after(
    answer: Callable[..., requests.Response], removed_after: float | None, **userdata: str
) -> SimpleNamespace:
    """A session echoing for its LIFETIME, then failing with its sandbox gone, then refused
    as not found `removed_after` seconds later (never, when None); `calls` counts the
    calls, and the latest is the world's `last_call`."""
    world = world_whose_session_ends(answer, LIFETIME, SANDBOX_GONE, **userdata)
    served_then_gone = world.touch
    world.calls = 0

    def touch(runtime: object, session_id: str) -> requests.Response:
        since_lifetime = time.monotonic() - world.session.opened_at - LIFETIME
        if removed_after is not None and since_lifetime >= removed_after:
            response = answer(404, NOT_FOUND)
        else:
            response = served_then_gone(runtime, session_id)
        world.calls += 1
        world.last_call = Call(
            None, runtime, session_id, response, time.monotonic(), time.monotonic()
        )  # type: ignore[arg-type]
        return response

    world.touch = touch
    return world


def busy_until_refused(world: SimpleNamespace) -> None:
    """The steps of the lifetime scenarios: busy until not served, the span, the refusal."""
    lifetimes = lifetimes_of(world)
    lifetimes.keep_session_busy_until_it_ends()
    lifetimes.expect_session_lasted_its_lifetime()
    lifetimes.expect_call_refused_as_not_found()


def test_a_sandbox_gone_before_the_collector_runs_is_followed_by_the_refusal(answer) -> None:
    world = world_collected_after(answer, removed_after=0.3, gc_interval="1s")
    busy_until_refused(world)
    assert world.last_call.response.status_code == 404


def test_a_refusal_that_never_comes_fails_naming_the_collector_interval(answer) -> None:
    world = world_collected_after(answer, removed_after=None, gc_interval="300ms")
    with pytest.raises(AssertionError) as failure:
        busy_until_refused(world)
    assert "answered 502 (sandbox gone)" in str(failure.value)
    assert "gc_interval (0.3 s" in str(failure.value)
    assert "the status was 502, not 404" in str(failure.value)


def test_a_refusal_later_than_the_collector_interval_fails(answer) -> None:
    world = world_collected_after(answer, removed_after=1.5, gc_interval="200ms")
    with pytest.raises(AssertionError, match="once the collector has removed it"):
        busy_until_refused(world)


def test_a_first_call_refused_as_not_found_is_judged_without_another_call(answer) -> None:
    world = world_collected_after(answer, removed_after=0.0)
    busy_until_refused(world)
    calls = world.calls
    lifetimes_of(world).expect_call_refused_as_not_found()
    assert world.calls == calls, "a call refused as not found is judged as it was answered"


def test_a_call_failed_elsewhere_is_not_waited_on(answer) -> None:
    """Only the first call not served at the end of a lifetime may be followed by the
    refusal; any other 502 is judged as it is, at once."""
    world = world_collected_after(answer, removed_after=None)
    world.last_call = Call(None, None, "s-1", answer(*SANDBOX_GONE), 0, time.monotonic())  # type: ignore[arg-type]
    with pytest.raises(AssertionError, match="the status was 502, not 404"):
        lifetimes_of(world).expect_call_refused_as_not_found()
    assert world.calls == 0
