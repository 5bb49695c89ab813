"""Bearer-token authentication of `/v1/*` and session ownership, with the Router's bodies.

Upstream validates OIDC tokens; localcube maps static tokens to subjects. Tokens are
compared in constant time and never logged.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web

SUBJECT_KEY = "localcube.subject"  # the authenticated subject, on the request
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class TokenTable:
    """Subjects by token; empty means authentication is off."""

    def __init__(self, entries: list[tuple[str, str]]) -> None:
        self._entries = [(subject, token.encode()) for subject, token in entries]

    @classmethod
    def parse(cls, specs: list[str], files: list[Path]) -> TokenTable:
        """From `SUBJECT=TOKEN` strings and files of such lines; raise ValueError when bad."""
        lines = [(spec, "--token") for spec in specs]
        for file in files:
            for number, line in enumerate(file.read_text().splitlines(), start=1):
                if line.strip() and not line.lstrip().startswith("#"):
                    lines.append((line.strip(), f"{file}:{number}"))
        entries = []
        for text, origin in lines:
            subject, separator, token = text.partition("=")
            if not separator or not subject.strip() or not token.strip():
                raise ValueError(f"{origin}: expected SUBJECT=TOKEN")
            entries.append((subject.strip(), token.strip()))
        return cls(entries)

    @property
    def enabled(self) -> bool:
        return bool(self._entries)

    def subject_of(self, token: str) -> str | None:
        candidate = token.encode()
        found = None
        for subject, known in self._entries:
            if hmac.compare_digest(candidate, known):
                found = subject
        return found


def unauthorized(message: str) -> web.Response:
    return web.json_response({"error": message, "code": "UNAUTHORIZED"}, status=401)


def forbidden(message: str) -> web.Response:
    return web.json_response({"error": message, "code": "FORBIDDEN"}, status=403)


def middleware(tokens: TokenTable) -> Callable:
    """Require a known bearer token on /v1/* when any token is configured."""

    @web.middleware
    async def authenticate(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not tokens.enabled or not request.path.startswith("/v1/"):
            return await handler(request)
        header = request.headers.get("Authorization", "")
        if not header:
            return unauthorized("missing authorization header")
        scheme, space, credential = header.partition(" ")
        if scheme.lower() != "bearer" or not space:
            return unauthorized("invalid authorization header format")
        subject = tokens.subject_of(credential.strip())
        if subject is None:
            return unauthorized("invalid or expired token")
        request[SUBJECT_KEY] = subject
        return await handler(request)

    return authenticate


def owner_refusal(request: web.Request, owner: str | None) -> web.Response | None:
    """403 when an authenticated caller uses a session created by another subject."""
    subject = request.get(SUBJECT_KEY)
    if subject is None or subject == owner:
        return None
    if owner is None:
        return forbidden("sandbox has no owner record")
    return forbidden("you do not own this sandbox")
