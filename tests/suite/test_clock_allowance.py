"""A hard lifetime may end up to clock_allowance early: upstream (and localcube as it) keeps a
session's expiry in whole seconds, so a session asked for with a lifetime of L may end after
L - 1 s (the allowance is 1 s by default). A stand-in session that ends 0.6 s early passes
with an allowance of 1 s and fails with one of 250 ms."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from acceptance.core.settings import load_settings
from acceptance.domain.lifetimes import Lifetimes
from acceptance.domain.world import TOUCH_TEXT
from acceptance.platforms.base import Sandbox
from acceptance.platforms.kubernetes.settings import CLUSTER_DEFAULTS

LIFETIME = 1.0
EARLY = 0.6


def world_whose_session_ends_early(answer, **userdata: str) -> SimpleNamespace:
    settings = load_settings(
        {"short_session_lifetime": f"{LIFETIME:g}s", "poll_interval": "20ms", **userdata}, {}
    )
    session = SimpleNamespace(session_id="s-1", runtime=None, opened_at=time.monotonic())

    def touch(runtime: object, session_id: str):
        if time.monotonic() - session.opened_at < LIFETIME - EARLY:
            return answer(200, {"output": f"echo: {TOUCH_TEXT}"})
        return answer(404, {"error": "gone", "code": "SESSION_NOT_FOUND"})

    platform = SimpleNamespace(sandbox_of=lambda session_id: Sandbox("sandbox-1"))
    return SimpleNamespace(settings=settings, session=session, touch=touch, platform=platform)


def lasted_its_lifetime(world: SimpleNamespace) -> None:
    lifetimes = Lifetimes(world)  # type: ignore[arg-type]
    lifetimes.keep_session_busy_until_it_ends()
    lifetimes.expect_session_lasted_its_lifetime()


def test_a_session_ending_within_the_clock_allowance_has_lasted_its_lifetime(answer) -> None:
    lasted_its_lifetime(world_whose_session_ends_early(answer, clock_allowance="1s"))


def test_a_session_ending_earlier_than_the_allowance_fails(answer) -> None:
    with pytest.raises(AssertionError, match="before its hard lifetime of 1 s"):
        lasted_its_lifetime(world_whose_session_ends_early(answer, clock_allowance="250ms"))


def test_the_cluster_profile_allows_upstreams_whole_second() -> None:
    assert CLUSTER_DEFAULTS["clock_allowance"][0] == "1s"
