"""A hard lifetime may end up to clock_allowance early: upstream keeps a session's expiry in
whole seconds, so on a cluster (allowance 1 s by default there) a session asked for with a
lifetime of L may end after L - 1 s. A stand-in session that ends 0.6 s early passes with an
allowance of 1 s and fails with the 250 ms localcube allows."""

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
    now = time.monotonic()
    session = SimpleNamespace(session_id="s-1", runtime=None, opened_at=now, confirmed_at=now)

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
        lasted_its_lifetime(world_whose_session_ends_early(answer))


def test_the_cluster_profile_allows_upstreams_whole_second() -> None:
    assert CLUSTER_DEFAULTS["clock_allowance"][0] == "1s"
