"""Streams through the Router: an agent's events as it produces them, an answer of unknown
length, WebSocket conversations, and many callers streaming at once, each getting only
their own.

Whether events came as produced is judged by the agent's own stamps (`sent_at`, its clock)
against their arrival (the caller's clock), through differences only: each event's delay
beyond the quickest event's. A Router that flushes as events come delays none of them; one
that buffers the answer holds the first until the last is sent.
"""

from __future__ import annotations

import asyncio
import enum
import math
from collections.abc import Coroutine, Sequence
from typing import Any
from urllib.parse import urlencode

from hamcrest import assert_that
from hamcrest.core.matcher import Matcher

from acceptance.core import matchers
from acceptance.core.runtimes import Role
from acceptance.core.settings import Settings
from acceptance.core.streams import (
    Conversation,
    StreamedAnswer,
    StreamingClient,
    StreamKind,
    Timeline,
)
from acceptance.domain.credentials import not_given_credentials
from acceptance.domain.load import all_at_once, within_the_limit
from acceptance.domain.world import Session, World, required, sandbox_identity, sandbox_report
from acceptance.platforms.base import Target

EVENTS = 8  # a stream of events spans 7 spacings
CHUNKS = 6
# What a conversation sends: text and binary, the binary holding every byte value.
MESSAGES: tuple[str | bytes, ...] = ("hello", bytes(range(256)), "still there?", b"\x00\xff")
_NORMAL_CLOSURE = 1000
_NO_STREAM = "the scenario has read no stream yet"


class Together(enum.Enum):
    """What many callers do at once in their sessions, and what each gets back, as the
    features phrase them."""

    CALL = ("call the agent", "answer")
    READ_EVENTS = ("read a stream of events", "events")
    CONVERSE = ("hold a WebSocket conversation", "messages")

    def __init__(self, phrase: str, answers: str) -> None:
        self.phrase = phrase
        self.answers = answers


class Streams:
    def __init__(self, world: World, settings: Settings, target: Target) -> None:
        self._world = world
        self._settings = settings
        self._target = target
        self._answer: StreamedAnswer | None = None
        self._count = 0
        self._conversation: Conversation | None = None
        self._callers: list[Session] = []
        self._identities: dict[str, dict[str, Any]] = {}
        self._results: list[Any] = []

    # One caller.

    def read_events(self, *, past_idle_timeout: bool) -> None:
        """EVENTS of the agent's events in the session; or events that keep coming for the
        idle timeout and ttl_grace: had the platform not counted the stream as activity, it
        would have ended the session meanwhile."""
        settings = self._settings
        duration = settings.short_session_timeout + settings.ttl_grace
        count = math.ceil(duration / settings.stream_event_spacing) + 1
        self._read("events", count if past_idle_timeout else EVENTS)

    def read_chunks(self) -> None:
        self._read("chunks", CHUNKS)

    def _read(self, kind: StreamKind, count: int) -> None:
        self._count = count
        self._answer = asyncio.run(self._stream(self._world.session, kind, count, "mine"))

    def expect_every_event(self) -> None:
        count = self._count
        numbered = f"the agent's {count} events, numbered 0 to {count - 1}, in order"
        expected = streamed(f"{numbered}, and the stream's end", "number", list(range(count)))
        assert_that(required(self._answer, _NO_STREAM), expected)

    def expect_events_as_produced(self) -> None:
        timeline = Timeline.of(required(self._answer, _NO_STREAM))
        if len(timeline.rows) < 2:
            raise AssertionError(
                f"the stream held {len(timeline.rows)} stamped events: too few to judge"
            )
        assert_that(timeline, passed_on_as_produced())

    def expect_every_chunk(self) -> None:
        chunks = [f"chunk {number} of {CHUNKS}: mine" for number in range(CHUNKS)]
        expectation = f"an answer of unknown length holding {chunks!r}, whole and in order"
        expected = streamed(f"{expectation}, and its end", None, chunks)
        assert_that(required(self._answer, _NO_STREAM), expected)

    def converse(self, *, past_read_timeout: bool) -> None:
        """A WebSocket conversation in the scenario's session; held idle, halfway, for half
        as long again as the Router's read timeout when asked."""
        hold = 1.5 * self._settings.router_read_timeout if past_read_timeout else 0
        self._conversation = asyncio.run(self._converse(self._world.session, MESSAGES, hold))

    def expect_switched_in_session(self) -> None:
        assert_that(self._conversed(), switched_in(self._world.session))

    def expect_echoed_in_order(self) -> None:
        expected = [_echo(message) for message in MESSAGES]
        assert_that(
            self._conversed(),
            replied(
                f"every message echoed in order, text as text and binary as binary: {expected!r}",
                expected,
            ),
        )

    def expect_clean_close(self) -> None:
        assert_that(
            self._conversed(),
            matchers.meets(
                f"the conversation to close cleanly (code {_NORMAL_CLOSURE}) when the caller "
                "closed it",
                lambda c: c.error is None and c.close_code == _NORMAL_CLOSURE,
                _described,
            ),
        )

    def expect_served_by_the_session_sandbox(self) -> None:
        conversation = self._conversed()
        reports = [report for report in self._world.sandbox_reports() if report]
        missing = "no call in the session reported its sandbox"
        own = sandbox_identity(required(reports or None, missing)[-1])
        assert_that(
            sandbox_identity(sandbox_report(conversation.greeting)),
            matchers.meets(
                f"the conversation served by the sandbox of {self._world.session}, {own}",
                lambda greeting: greeting == own,
                lambda greeting: f"it was served by {greeting}",
            ),
        )

    def expect_no_caller_token(self) -> None:
        report = sandbox_report(self._conversed().greeting)
        assert_that(report, not_given_credentials(self._target.callers_tokens()))

    # Many callers at once.

    def open_sessions_of_callers(self, most: int) -> None:
        """As many callers as the concurrency limit allows, up to `most`, each opening a
        session of the echo agent of its own with a first call, all at the same moment."""
        count = within_the_limit(self._settings, most)
        runtime = self._world.runtime(Role.ECHO_AGENT)
        calls = self._world.calls(runtime)
        answers = all_at_once(
            self._world, self._settings, count, lambda number: calls.echo(f"caller {number}")
        )
        for number, answer in enumerate(answers):
            assert_that(
                answer, matchers.echoes(f"caller {number}"), f"caller {number} got no session"
            )
            session = self._world.opened_by(answer)
            self._callers.append(session)
            self._identities[session.session_id] = sandbox_identity(sandbox_report(answer))

    def act_together(self, act: Together) -> None:
        callers = self._callers
        if act is Together.CALL:
            self._results = all_at_once(
                self._world,
                self._settings,
                len(callers),
                lambda number: self._world.in_session(callers[number]).echo(_tag(number)),
            )
            return

        def one(number: int, session: Session) -> Coroutine[Any, Any, Any]:
            if act is Together.READ_EVENTS:
                return self._stream(session, "events", EVENTS, _tag(number))
            return self._converse(session, [_tag(number), _tag(number).encode()], 0)

        async def together() -> list[Any]:
            return list(await asyncio.gather(*(one(*pair) for pair in enumerate(callers))))

        self._results = asyncio.run(together())

    def expect_each_own(self, act: Together) -> None:
        """Each caller's answer, events or messages are its own, and so is the sandbox that
        each of them (each event, the conversation's greeting) reports."""
        for number, (session, got) in enumerate(zip(self._callers, self._results, strict=True)):
            expected: Matcher[Any]
            match act:
                case Together.CALL:
                    expected, reports = matchers.echoes(_tag(number)), [sandbox_report(got)]
                case Together.READ_EVENTS:
                    tag = _tag(number)
                    wanted = f"caller {number} to get its {EVENTS} events, each tagged {tag!r}"
                    expected = streamed(f"{wanted}, in {session}", "tag", [tag] * EVENTS)
                    reports = [sandbox_report(part.data) for part in got.parts]
                case Together.CONVERSE:
                    own = [_echo(_tag(number)), _tag(number).encode()]
                    wanted = f"caller {number} to get back its own messages {own!r} in {session}"
                    expected, reports = replied(wanted, own), [sandbox_report(got.greeting)]
            assert_that(got, expected, f"caller {number} in {session}")
            for report in reports:
                self._expect_own_sandbox(number, session, report)

    def _expect_own_sandbox(self, number: int, session: Session, report: Any) -> None:
        own, came_from = self._identities[session.session_id], sandbox_identity(report)
        other = next((sid for sid, known in self._identities.items() if known == came_from), None)
        whose = f"the sandbox of session {other}" if other else "no caller's sandbox"
        assert_that(
            came_from,
            matchers.meets(
                f"caller {number}'s answer to come from the sandbox of its {session}, {own}",
                lambda got: got == own,
                lambda got: f"it came from {got}, {whose}",
            ),
        )

    # Helpers.

    def _client(self, session: Session, duration: float) -> StreamingClient:
        """The session's caller's client, waiting `duration` more than a call's timeout."""
        wait = duration + self._settings.answer_allowance
        return session.caller.router.streams(session.caller.token, wait)

    def _stream(
        self, session: Session, kind: StreamKind, count: int, tag: str
    ) -> Coroutine[Any, Any, StreamedAnswer]:
        """The agent's `count` events or chunks (`kind`), each tagged `tag`, in the session."""
        spacing = self._settings.stream_event_spacing
        client = self._client(session, count * spacing)
        url = session.caller.router.invocation_url(session.runtime, f"echo/{kind}")
        query = urlencode({"count": count, "spacing": spacing, "tag": tag})
        return client.stream(f"{url}?{query}", session.session_id, kind)

    def _converse(
        self, session: Session, messages: Sequence[str | bytes], hold: float
    ) -> Coroutine[Any, Any, Conversation]:
        """A WebSocket conversation in the session, held idle halfway for `hold` seconds."""
        url = session.caller.router.invocation_url(session.runtime, "echo/ws")
        return self._client(session, hold).converse(url, session.session_id, messages, hold)

    def _conversed(self) -> Conversation:
        return required(self._conversation, "the scenario has held no WebSocket conversation yet")


# What the streams and conversations are expected to hold.


def streamed(expectation: str, key: str | None, expected: list[Any]) -> Matcher[StreamedAnswer]:
    """A stream that ended whole, its parts' `key` (None: the part itself, a line) in order
    as `expected`; a failure shows them, and the events' timeline."""
    return matchers.meets(
        expectation,
        lambda answer: (
            answer.status == 200 and answer.error is None and _field(answer, key) == expected
        ),
        lambda answer: (
            f"{_shown(answer)} with {key or 'line'}s {_field(answer, key)!r}"
            + ("" if key is None else "\n" + Timeline.of(answer).table())
        ),
    )


def passed_on_as_produced() -> Matcher[Timeline]:
    """The first event reached the caller at least half the stream's span before the agent
    sent the last one (judged by differences only: see the module's docstring)."""

    def span(timeline: Timeline) -> float:
        return float(timeline.rows[-1][1])

    def first_delay(timeline: Timeline) -> float:
        return float(timeline.rows[0][3])

    return matchers.meets(
        "the first event to reach the caller at least half the stream's span before the agent "
        "sent the last, as a Router that passes events on as they come does",
        lambda timeline: first_delay(timeline) <= span(timeline) / 2,
        lambda timeline: (
            f"it arrived {first_delay(timeline):.2f} s later than the quickest "
            f"event, {span(timeline) - first_delay(timeline):.2f} s before the last was sent "
            f"(span {span(timeline):.2f} s): the answer was held back (buffered) on its way\n"
            + timeline.table()
        ),
    )


def switched_in(session: Session) -> Matcher[Conversation]:
    return matchers.meets(
        f"the Router to switch the call in {session} to WebSocket, naming the session in its "
        "answer",
        lambda conversation: (
            conversation.switched and conversation.session_id == session.session_id
        ),
        _described,
    )


def replied(expectation: str, expected: list[str | bytes]) -> Matcher[Conversation]:
    return matchers.meets(
        expectation, lambda conversation: conversation.replies == expected, _described
    )


def _field(answer: StreamedAnswer, key: str | None) -> list[Any]:
    """Each part's `key` (None: the part itself, a line)."""
    return [part.data if key is None else part.data.get(key) for part in answer.parts]


def _tag(number: int) -> str:
    return f"caller {number}'s own"


def _echo(message: str | bytes) -> str | bytes:
    return message if isinstance(message, bytes) else f"echo: {message}"


def _shown(answer: StreamedAnswer) -> str:
    ending = f", broken off: {answer.error}" if answer.error else ""
    return f"status {answer.status}, {len(answer.parts)} parts{ending}"


def _described(conversation: Conversation) -> str:
    if not conversation.switched:
        return f"the Router did not switch to WebSocket: {conversation.error}"
    return (
        f"switched (session {conversation.session_id}), replies {conversation.replies!r}, "
        f"closed with code {conversation.close_code}"
        + (f", broken off: {conversation.error}" if conversation.error else "")
    )
