"""The first call a busy session does not serve at its hard lifetime must say the session
ended: 404 SESSION_NOT_FOUND (localcube, and upstream for the next call), or, for a call in
flight as the session ended, that its sandbox is gone (upstream: 503 once its pod is deleted
under the call). A 500, a 200 that is no echo, or echoes past the lifetime fail."""

from __future__ import annotations

import pytest

from tests.suite.stand_in_session import (
    LIFETIME,
    NOT_FOUND,
    busy_until_it_ends,
    world_whose_session_ends,
)


@pytest.mark.parametrize(
    "ending",
    [
        (404, NOT_FOUND),
        (503, {"error": "sandbox unreachable"}),
        (502, {"error": "sandbox unreachable"}),
        (504, {"error": "sandbox timeout"}),
    ],
    ids=["not-found", "cut-off-503", "refused-502", "timed-out-504"],
)
def test_an_answer_that_says_the_session_ended_passes(answer, ending) -> None:
    busy_until_it_ends(world_whose_session_ends(answer, LIFETIME, ending))


@pytest.mark.parametrize(
    "ending",
    [
        (500, {"error": "internal server error"}),
        (200, {"output": "slept"}),
        (404, {"error": "Not found"}),
        (503, {"error": "busy"}),
    ],
    ids=["500", "200-no-echo", "agents-own-404", "503-without-the-words"],
)
def test_an_answer_that_does_not_say_so_fails(answer, ending) -> None:
    with pytest.raises(AssertionError, match="must say that the session ended"):
        busy_until_it_ends(world_whose_session_ends(answer, LIFETIME, ending))


def test_a_session_still_served_past_its_lifetime_fails(answer) -> None:
    world = world_whose_session_ends(answer, 60, (404, NOT_FOUND), ttl_grace="500ms")
    with pytest.raises(AssertionError, match="to end at its hard lifetime"):
        busy_until_it_ends(world)
