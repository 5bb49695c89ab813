"""A hard lifetime may end up to clock_allowance early: upstream (and localcube as it) keeps a
session's expiry in whole seconds, so a session asked for with a lifetime of L may end after
L - 1 s (the allowance is 1 s by default). A stand-in session that ends 0.6 s early passes
with an allowance of 1 s and fails with one of 250 ms."""

from __future__ import annotations

import pytest

from acceptance.platforms.kubernetes.settings import CLUSTER_DEFAULTS
from tests.suite.stand_in_session import (
    LIFETIME,
    NOT_FOUND,
    busy_until_it_ends,
    world_whose_session_ends,
)

EARLY = 0.6


def test_a_session_ending_within_the_clock_allowance_has_lasted_its_lifetime(answer) -> None:
    busy_until_it_ends(world_whose_session_ends(answer, LIFETIME - EARLY, (404, NOT_FOUND)))


def test_a_session_ending_earlier_than_the_allowance_fails(answer) -> None:
    world = world_whose_session_ends(
        answer, LIFETIME - EARLY, (404, NOT_FOUND), clock_allowance="250ms"
    )
    with pytest.raises(AssertionError, match="before its hard lifetime of 1 s"):
        busy_until_it_ends(world)


def test_a_lifetime_counted_from_the_start_of_a_slow_opening_call_has_been_lasted(answer) -> None:
    """Upstream counts a session's lifetime from its creation, before its sandbox is ready:
    a cold start of half a second is part of it, not a reason to fail."""
    world = world_whose_session_ends(
        answer, LIFETIME - 0.1, (404, NOT_FOUND), opening=0.5, clock_allowance="250ms"
    )
    busy_until_it_ends(world)


def test_the_cluster_profile_allows_upstreams_whole_second() -> None:
    assert CLUSTER_DEFAULTS["clock_allowance"][0] == "1s"
