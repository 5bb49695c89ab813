"""Streams through the Router, read as a caller reads them with aiohttp (requests cannot
speak WebSocket): server-sent events and answers of unknown length part by part, each
stamped with its arrival, and WebSocket conversations; each recorded as evidence.

Arrival times are the caller's `time.time()`, compared with the agent's own stamps only
through differences, so a target whose clock is off is judged as fairly as a local one.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from acceptance.core.evidence import Exchange, ExchangeLog, Table, session_id_in, text_table
from agentcube_contract.session import SESSION_HEADER

# What a streamed answer is read as: events (server-sent) or chunks (lines of text).
StreamKind = Literal["events", "chunks"]


@dataclass(frozen=True)
class Part:
    """An event's data (parsed JSON) or a chunk's text, and when it reached the caller."""

    data: Any
    arrived_at: float


@dataclass(frozen=True)
class StreamedAnswer:
    """A streamed answer as it came, and what broke it off, if anything."""

    status: int | None
    headers: Mapping[str, str]
    parts: list[Part]
    error: str | None = None


@dataclass
class Conversation:
    """A WebSocket conversation: whether the Router switched, the agent's greeting (its
    sandbox report), the replies in order, and how it closed; `error`: what broke it off, or the
    Router's refusal to switch."""

    switched: bool = False
    headers: Mapping[str, str] = field(default_factory=dict)
    greeting: Any = None
    replies: list[str | bytes] = field(default_factory=list)
    close_code: int | None = None
    error: str | None = None

    @property
    def session_id(self) -> str | None:
        return session_id_in(self.headers)


@dataclass(frozen=True)
class Timeline:
    """When each event was sent (agent's clock) and arrived (caller's clock), as offsets
    from the first event's send and arrival, and each event's delay beyond the quickest."""

    rows: list[tuple[Any, float, float, float]]  # number, sent, arrived, extra delay

    @classmethod
    def of(cls, answer: StreamedAnswer) -> Timeline:
        events = [
            (part.data, part.arrived_at)
            for part in answer.parts
            if isinstance(part.data, dict) and isinstance(part.data.get("sent_at"), int | float)
        ]
        if not events:
            return cls([])
        first_sent, first_arrived = events[0][0]["sent_at"], events[0][1]
        quickest = min(arrived - event["sent_at"] for event, arrived in events)
        return cls(
            [
                (
                    event.get("number"),
                    event["sent_at"] - first_sent,
                    arrived - first_arrived,
                    arrived - event["sent_at"] - quickest,
                )
                for event, arrived in events
            ]
        )

    def cells(self) -> Table:
        return (
            ("event", "sent by the agent", "arrived at the caller", "later than the quickest"),
            *(
                (str(number), f"{sent:+.3f} s", f"{arrived:+.3f} s", f"{extra:.3f} s")
                for number, sent, arrived, extra in self.rows
            ),
        )

    def table(self) -> str:
        return text_table(self.cells())


class StreamingClient:
    """Streams and WebSockets at one Router, presenting `authorization` (a caller's)."""

    def __init__(self, log: ExchangeLog, authorization: Mapping[str, str], timeout: float) -> None:
        self._log = log
        self._authorization = dict(authorization)
        self._timeout = timeout

    def _headers(self, session_id: str | None) -> dict[str, str]:
        headers = dict(self._authorization)
        if session_id:
            headers[SESSION_HEADER] = session_id
        return headers

    async def stream(self, url: str, session_id: str | None, kind: StreamKind) -> StreamedAnswer:
        """GET a streamed answer, part by part as it arrives: `events`, each event's `data:`
        lines parsed as JSON, or `chunks` of unknown length, each line of text a part. The
        exchange keeps the timeline of the events the agent stamped."""
        import aiohttp  # here: a run that streams nothing never loads it (0.2 s)

        extra, split = (
            ({"Accept": "text/event-stream"}, _events) if kind == "events" else ({}, _lines)
        )
        headers = {**self._headers(session_id), **extra}
        timeout = aiohttp.ClientTimeout(total=self._timeout)
        parts: list[Part] = []
        status, answer_headers, error, raw = None, {}, None, b""
        started = time.monotonic()
        try:
            async with (
                aiohttp.ClientSession(timeout=timeout) as client,
                client.get(url, headers=headers) as response,
            ):
                status, answer_headers = response.status, dict(response.headers)
                pending = b""
                async for data in response.content.iter_any():
                    arrived = time.time()
                    raw += data
                    pending += data
                    found, pending = split(pending)
                    parts += [Part(item, arrived) for item in found]
        except (aiohttp.ClientError, TimeoutError, ValueError) as failure:
            error = f"{type(failure).__name__}: {failure}"
        answer = StreamedAnswer(status, answer_headers, parts, error)
        timeline = Timeline.of(answer)
        self._log.exchanges.append(
            Exchange(
                method="GET",
                url=url,
                request_headers=headers,
                request_body=None,
                status=status,
                response_headers=answer_headers,
                response_body=raw,
                elapsed=time.monotonic() - started,
                error=error if status is None else None,
                timeline=timeline.cells() if timeline.rows else (),
            )
        )
        return answer

    async def converse(
        self, url: str, session_id: str | None, messages: Sequence[str | bytes], hold: float
    ) -> Conversation:
        """Open a WebSocket, read the agent's greeting, send `messages` one by one, each
        answered before the next, holding the conversation `hold` seconds before the second
        half; then close it."""
        headers = self._headers(session_id)
        conversation = Conversation()
        started = time.monotonic()
        import aiohttp

        timeout = aiohttp.ClientWSTimeout(ws_receive=self._timeout, ws_close=self._timeout)
        try:
            async with (
                aiohttp.ClientSession() as client,
                client.ws_connect(url, headers=headers, timeout=timeout) as socket,
            ):
                conversation.switched = True
                # The 101's headers: aiohttp keeps them on the private `_response` alone.
                conversation.headers = dict(socket._response.headers)
                conversation.greeting = json.loads(await socket.receive_str())
                half = (len(messages) + 1) // 2
                for number, message in enumerate(messages):
                    if number == half:
                        await asyncio.sleep(hold)  # the conversation idles, on purpose
                    if isinstance(message, bytes):
                        await socket.send_bytes(message)
                    else:
                        await socket.send_str(message)
                    reply = await socket.receive()
                    if reply.type not in (aiohttp.WSMsgType.TEXT, aiohttp.WSMsgType.BINARY):
                        ended = f"the conversation ended instead of a reply ({reply.type.name})"
                        raise aiohttp.ClientError(ended)
                    conversation.replies.append(reply.data)
                await socket.close()
                conversation.close_code = socket.close_code
        except aiohttp.WSServerHandshakeError as refusal:
            conversation.error = f"{refusal.status} {refusal.message}"
            conversation.headers = dict(refusal.headers or {})
        except (aiohttp.ClientError, TimeoutError, ValueError, TypeError) as failure:
            conversation.error = f"{type(failure).__name__}: {failure}"
        replies = ", ".join(repr(reply) for reply in conversation.replies)
        ending = conversation.error or f"closed with code {conversation.close_code}"
        self._log.exchanges.append(
            Exchange(
                method="GET (WebSocket)",
                url=url,
                request_headers=headers,
                request_body=f"{len(messages)} messages",
                status=101 if conversation.switched else None,
                response_headers=conversation.headers,
                response_body=f"replies: [{replies}]; {ending}".encode(),
                elapsed=time.monotonic() - started,
                error=None if conversation.switched else conversation.error,
            )
        )
        return conversation


def _events(pending: bytes) -> tuple[list[Any], bytes]:
    """The whole events in `pending` (their data as JSON), and what is left of it."""
    events = []
    while b"\n\n" in pending:
        block, pending = pending.split(b"\n\n", 1)
        data = [line[5:].strip() for line in block.split(b"\n") if line.startswith(b"data:")]
        if data:
            event = json.loads(b"\n".join(data))
            events.append(event if isinstance(event, dict) else {"data": event})
    return events, pending


def _lines(pending: bytes) -> tuple[list[Any], bytes]:
    """The whole lines in `pending` (text), and what is left of it."""
    *lines, rest = pending.split(b"\n")
    return [line.decode() for line in lines], rest
