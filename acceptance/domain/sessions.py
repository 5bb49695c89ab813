"""Sessions as a client sees them: one opened by a first call through the Router, the
session id an answer carries, a session id never issued, and a session served throughout
by the one sandbox that served it first."""

from __future__ import annotations

import uuid

from hamcrest import assert_that

from acceptance.core import matchers
from acceptance.core.runtimes import Role
from acceptance.domain.calls import TOUCH_TEXT
from acceptance.domain.world import Session, World


class Sessions:
    def __init__(self, world: World) -> None:
        self._world = world

    def open(self, role: Role) -> None:
        open_session(self._world, role)

    def call_with_unknown_session(self, role: Role) -> None:
        self._world.calls(self._world.runtime(role), str(uuid.uuid4())).touch()

    def expect_new_session_id(self) -> None:
        call = self._world.last_call
        assert_that(call.response, matchers.carries_new_session_id(call.known_before))

    def expect_same_session_id(self) -> None:
        call = self._world.last_call
        assert_that(call.response, matchers.carries_session_id(call.presented_session_id))


def open_session(world: World, role: Role) -> Session:
    """Open a session as a client the Router authorises does: with a first call through
    the Router, which must succeed and return a new session id."""
    runtime = world.runtime(role)
    known = [session.session_id for session in world.sessions]
    answer = world.calls(runtime).touch()
    assert_that(
        answer,
        matchers.all_met(
            matchers.succeeded(f"the Router to open a session of {runtime}"),
            matchers.carries_new_session_id(known),
        ),
    )
    return world.session


def expect_served_by_the_same_sandbox(world: World, session: Session, since: str) -> None:
    """A harmless call is served in the session by the sandbox that served it so far."""
    answer = world.in_session(session).touch()
    assert_that(
        answer,
        matchers.all_met(
            matchers.echoes(TOUCH_TEXT), matchers.carries_session_id(session.session_id)
        ),
    )
    assert_that(
        world.sandbox_reports(),
        matchers.served_by_one_sandbox(),
        f"{session} changed sandbox {since}",
    )
