"""Sessions as a client sees them: opened by a first call through the Router, named by the
session id an answer carries, served throughout by the sandbox that served them first; and
the texts the echo agent must return unchanged in them (as upstream's own e2e test sends)."""

from __future__ import annotations

import enum
import json
import uuid
from collections.abc import Collection, Sequence
from typing import Any

import requests
from hamcrest import all_of, assert_that, is_in, is_not
from hamcrest.core.matcher import Matcher

from acceptance.core import matchers
from acceptance.core.matchers import Answer, a_uuid4
from acceptance.core.runtimes import Role
from acceptance.domain.calls import TOUCH_TEXT
from acceptance.domain.world import Session, World, required, sandbox_identity
from agentcube_contract.session import SESSION_HEADER


class SampleText(enum.Enum):
    """A text as the features phrase it, and the text itself."""

    EMPTY = ("an empty text", "")
    SPECIAL = (
        "a text full of quotes, backslashes, newlines and non-ASCII characters",
        "quotes \" and ' , backslashes \\ and \\n, a newline\nand a tab\t, "
        "h\u00e9llo \u2013 \u4f60\u597d \U0001f680, and @#$%^&*()",
    )

    def __init__(self, phrase: str, text: str) -> None:
        self.phrase = phrase
        self.text = text


class Sessions:
    def __init__(self, world: World) -> None:
        self._world = world
        self._sent: SampleText | None = None

    def call_with_unknown_session(self, role: Role) -> None:
        self._world.calls(self._world.runtime(role), str(uuid.uuid4())).touch()

    def expect_new_session_id(self) -> None:
        call = self._world.last_call
        assert_that(call.response, carries_new_session_id(call.known_before))

    def expect_same_session_id(self) -> None:
        call = self._world.last_call
        assert_that(call.response, matchers.carries_session_id(call.presented_session_id))

    def send_text(self, role: Role, text: str, *, in_session: bool) -> None:
        """An echo of the role's runtime opening a session, or in the scenario's session by
        the caller that opened it (whichever runtime the session belongs to)."""
        world = self._world
        if in_session:
            session = world.session
            world.calls(world.runtime(role), session.session_id, caller=session.caller).echo(text)
        else:
            world.calls(world.runtime(role)).echo(text)

    def send(self, sample: SampleText, role: Role) -> None:
        self._sent = sample
        self.send_text(role, sample.text, in_session=False)

    def expect_served_by_one_sandbox(self) -> None:
        """Every echo of the scenario so far came from the one sandbox."""
        assert_that(self._world.sandbox_reports(), served_by_one_sandbox())

    def expect_still_served(self, since: str) -> None:
        """A call in the scenario's session `since` something is served by its sandbox."""
        expect_served_by_the_same_sandbox(self._world, self._world.session, since)

    def expect_echoed_unchanged(self) -> None:
        sent = required(self._sent, "the scenario has sent no sample text yet")
        assert_that(self._world.last_answer, matchers.echoes(sent.text))


def open_session(world: World, role: Role) -> Session:
    """Open a session as a client the Router authorises does: with a first call through
    the Router, which must succeed and return a new session id."""
    runtime = world.runtime(role)
    answer = world.calls(runtime).touch()
    assert_that(
        answer,
        matchers.all_met(
            matchers.succeeded(f"the Router to open a session of {runtime}"),
            carries_new_session_id(world.last_call.known_before),
        ),
    )
    return world.session


def expect_served_by_the_same_sandbox(world: World, session: Session, since: str) -> None:
    """A harmless call is served in the session by the sandbox that served it so far."""
    assert_that(world.in_session(session).touch(), echoed_in(session))
    assert_that(
        world.sandbox_reports(),
        served_by_one_sandbox(),
        f"{session} changed sandbox {since}",
    )


# What its answers are expected to be.


def echoed_in(session: Session, text: str = TOUCH_TEXT) -> Matcher[requests.Response]:
    """The echo agent's echo of `text` (a touch's, unless given), in the session."""
    return matchers.all_met(matchers.echoes(text), matchers.carries_session_id(session.session_id))


def carries_new_session_id(known: Collection[str]) -> Answer:
    """A session id that is a UUID v4 and none of the ids the scenario already knew."""
    return Answer(
        f"the answer to carry a new session id in {SESSION_HEADER}",
        headers={SESSION_HEADER: all_of(a_uuid4(), is_not(is_in(list(known))))},
    )


def served_by_one_sandbox() -> Matcher[Sequence[Any]]:
    """The echo agent's sandbox reports of consecutive calls: one process (same hostname,
    pid and start time) whose call counter went 1, 2, ... with no call in between."""

    def seen(reports: Sequence[Any]) -> list[Any]:
        return [
            {**sandbox_identity(report), "calls": report.get("calls")}
            if isinstance(report, dict)
            else report
            for report in reports
        ]

    def one(reports: Sequence[Any]) -> bool:
        first = sandbox_identity(reports[0]) if reports else {}
        counted = [{**first, "calls": number} for number in range(1, len(reports) + 1)]
        return len(reports) >= 2 and seen(reports) == counted

    return matchers.meets(
        "every call served by one sandbox (same hostname, pid and start time), "
        "its call counter going 1, 2, ... in order",
        one,
        lambda reports: "the sandboxes reported " + json.dumps(seen(reports)),
    )
