"""Evidence: every HTTP exchange of a scenario, printed when the scenario fails. Secrets
never reach it: Authorization-like headers are replaced, Bearer credentials and every
registered secret masked wherever they appear.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import requests

from agentcube_contract.session import SESSION_HEADER

REDACTED = "<redacted>"
BODY_EXCERPT = 600

_SECRET_HEADERS = {"authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key"}
# What requests adds to every call; it says nothing about the exchange.
_ROUTINE_REQUEST_HEADERS = {"user-agent", "accept-encoding", "accept", "connection"}
_BEARER = re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]+")
_secrets: set[str] = set()


def register_secret(value: str | None) -> None:
    """Mask this value in everything the suite prints from now on."""
    if value:
        _secrets.add(value)


def redact(text: str) -> str:
    """The text with Bearer credentials and registered secrets masked."""
    for secret in sorted(_secrets, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return _BEARER.sub(rf"\1 {REDACTED}", text)


def session_id_in(headers: Mapping[str, str]) -> str | None:
    """The session id among headers kept as a plain dict (any case)."""
    return next((value for key, value in headers.items() if key.lower() == SESSION_HEADER), None)


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    return {
        name: REDACTED if name.lower() in _SECRET_HEADERS else redact(value)
        for name, value in headers.items()
    }


def excerpt(body: bytes | str | None, limit: int = BODY_EXCERPT) -> str:
    """A printable, redacted excerpt of a message body: its first `limit` characters once
    redacted, and its length when there is more. A body may be megabytes, so only a head
    of it is redacted, grown until it runs `margin` past `limit` once redacted, so that no
    secret cut at its end is shown in part: no part of a secret becomes longer than a mask
    per character (it may hold shorter secrets)."""
    if not body:
        return "(empty)"
    if isinstance(body, bytes):
        try:
            body = body.decode("utf-8")
        except UnicodeDecodeError:
            return f"({len(body)} bytes of binary data)"
    margin = 1 + len(REDACTED) * max(map(len, _secrets), default=0)
    size = limit + margin
    head = redact(body[:size])
    while size < len(body) and len(head) < limit + margin:
        size *= 2
        head = redact(body[:size])
    if size >= len(body) and len(head) <= limit:
        return head
    return f"{head[:limit]}... ({len(body)} characters)"


# A small table of evidence: its headings, then its rows, every cell a text.
Table = tuple[tuple[str, ...], ...]


def text_table(table: Table, justify: Callable[[str, int], str] = str.rjust) -> str:
    """The table as aligned text, each column as wide as its widest cell."""
    widths = [max(len(row[column]) for row in table) for column in range(len(table[0]))]
    return "\n".join(
        "  ".join(justify(cell, width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in table
    )


@dataclass(frozen=True)
class Exchange:
    """One HTTP request and its answer, or the error that stood in for the answer."""

    method: str
    url: str
    request_headers: Mapping[str, str]
    request_body: bytes | str | None
    status: int | None = None
    reason: str = ""
    response_headers: Mapping[str, str] = field(default_factory=dict)
    response_body: bytes = b""
    elapsed: float = 0.0
    error: str | None = None
    timeline: Table = ()  # a stream's parts: when the agent sent each, when it arrived

    @classmethod
    def of(cls, response: requests.Response) -> Exchange:
        request = response.request
        return cls(
            method=request.method or "",
            url=request.url or "",
            request_headers=dict(request.headers),
            request_body=request.body,
            status=response.status_code,
            reason=response.reason or "",
            response_headers=dict(response.headers),
            response_body=response.content,
            elapsed=response.elapsed.total_seconds(),
        )

    def _shown_request_headers(self) -> dict[str, str]:
        return {
            name: value
            for name, value in redact_headers(self.request_headers).items()
            if name.lower() not in _ROUTINE_REQUEST_HEADERS
        }

    def alike(self) -> tuple[object, ...]:
        """What two exchanges share when one stands for the other in the evidence: request,
        status and the session id answered."""
        return (
            self.method,
            self.url,
            tuple(sorted(self._shown_request_headers().items())),
            excerpt(self.request_body),
            self.status,
            session_id_in(self.response_headers),
        )

    def format(self) -> str:
        outcome = (
            f"no answer: {redact(self.error)}"
            if self.error is not None
            else f"{self.status} {self.reason} in {self.elapsed:.2f} s"
        )
        lines = [f"{self.method} {redact(self.url)} -> {outcome}"]
        lines += [f"  > {name}: {value}" for name, value in self._shown_request_headers().items()]
        if self.request_body:
            lines.append(f"  > {excerpt(self.request_body)}")
        if self.error is None:
            lines += [f"  < {k}: {v}" for k, v in redact_headers(self.response_headers).items()]
            lines.append(f"  < {excerpt(self.response_body)}")
        if self.timeline:
            lines += [f"  | {row}" for row in text_table(self.timeline).splitlines()]
        return "\n".join(lines)


def describe_response(response: requests.Response) -> str:
    """One answer as assertion messages show it: its exchange, as the evidence shows it."""
    return Exchange.of(response).format()


@dataclass
class ExchangeLog:
    """The HTTP exchanges of one scenario, in order."""

    exchanges: list[Exchange] = field(default_factory=list)

    def format(self, start: int = 0, whose: str = "this scenario") -> str:
        """Numbered exchanges from the `start`-th on; a run of alike ones (polls) is shown
        once, by its last, with its count."""
        exchanges = self.exchanges[start:]
        if not exchanges:
            return f"HTTP exchanges of {whose}: none"
        lines = [f"HTTP exchanges of {whose} ({len(exchanges)}):"]
        runs = itertools.groupby(
            enumerate(exchanges, start=start + 1),
            key=lambda numbered: numbered[1].alike(),
        )
        for _, run in runs:
            numbered = list(run)
            first, (last, exchange) = numbered[0][0], numbered[-1]
            label = f"[{first}]" if first == last else f"[{first}-{last}, {len(numbered)} alike]"
            lines.append(f"{label} {exchange.format()}")
        return "\n".join(lines)

    def timelines(self) -> list[tuple[str, Table]]:
        """The streams' timelines (when each part was sent and arrived), each with the
        call it belongs to, redacted."""
        return [
            (f"{exchange.method} {redact(exchange.url)}", exchange.timeline)
            for exchange in self.exchanges
            if exchange.timeline
        ]
