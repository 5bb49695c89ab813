"""How the launcher knows a part is ready: one probe per part, tried until it passes
(`wait_until`, the one waiting loop of the cluster, on tenacity)."""

from __future__ import annotations

import json
import socket
import ssl
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from tenacity import Retrying, retry_if_result, stop_after_delay, stop_never, wait_fixed

PROBE_TIMEOUT = 2.0
T = TypeVar("T")


def wait_until(condition: Callable[[], T], timeout: float | None, interval: float) -> T | None:
    """The first true value `condition` returns, tried every `interval` seconds; None once
    `timeout` seconds have passed without one (never, for None). It is tried at least once,
    and an exception it raises ends the wait."""
    retrying = Retrying(
        stop=stop_never if timeout is None else stop_after_delay(timeout),
        wait=wait_fixed(interval),
        retry=retry_if_result(lambda value: not value),
        retry_error_callback=lambda _: None,
    )
    return retrying(condition)


@dataclass(frozen=True)
class HttpProbe:
    """Ready when GET `url` answers 200 (and `accept` likes the body, when given).

    HTTPS is verified against `ca`, or not at all with `verify=False` (a program's own
    self-signed serving certificate); `token_file` holds a bearer token to send.
    """

    url: str
    ca: Path | None = None
    verify: bool = True
    token_file: Path | None = None
    accept: Callable[[bytes], bool] | None = None

    def __call__(self) -> bool:
        request = urllib.request.Request(self.url)
        if self.token_file is not None:
            token = self.token_file.read_text(encoding="utf-8").strip()
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(
                request, timeout=PROBE_TIMEOUT, context=self._context()
            ) as answer:
                body = answer.read()
        except (urllib.error.URLError, OSError, ValueError):
            return False
        return self.accept is None or self.accept(body)

    def _context(self) -> ssl.SSLContext | None:
        if not self.url.startswith("https:"):
            return None
        if not self.verify:
            return ssl._create_unverified_context()
        return ssl.create_default_context(cafile=str(self.ca) if self.ca else None)

    def __str__(self) -> str:
        return f"GET {self.url} answering 200" + (" as expected" if self.accept else "")


@dataclass(frozen=True)
class RedisProbe:
    """Ready when redis answers PING with PONG."""

    host: str
    port: int

    def __call__(self) -> bool:
        try:
            with socket.create_connection((self.host, self.port), timeout=PROBE_TIMEOUT) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(64).startswith(b"+PONG")
        except OSError:
            return False

    def __str__(self) -> str:
        return f"PING to {self.host}:{self.port} answered PONG"


def node_is_ready(body: bytes) -> bool:
    """A Node object whose Ready condition is True."""
    try:
        conditions = json.loads(body).get("status", {}).get("conditions", [])
    except (ValueError, AttributeError):
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
