"""Upstream's session records in Redis or Valkey, with the commands upstream issues.

The WorkloadManager stores a placeholder (SETNX and both index entries, one pipeline), then
the full record (SET XX), and ends a session with DEL and two ZREMs
(pkg/store/store_redis.go:146-228); the Router reads `session:<id>` and moves the session's
score in `session:last_activity` only while the record exists (store_redis.go:300-334).
Calls are synchronous and short, as the SQLite store's: the server is on this machine.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

from localcube.store import StoreError
from localcube.upstream_router.session_records import ACTIVITY_INDEX, EXPIRY_INDEX, session_key

SCHEMES = {"redis": "redis", "valkey": "redis", "rediss": "rediss", "valkeys": "rediss"}
PASSWORD_VARIABLES = ("REDIS_PASSWORD", "VALKEY_PASSWORD")
_TIMEOUT = 2.0
# The Router's UpdateSessionLastActivity: move the score only while the record exists.
_TOUCH = """
if redis.call("EXISTS", KEYS[1]) == 0 then
    return 0
end
redis.call("ZADD", KEYS[2], ARGV[2], ARGV[1])
return 1
"""


def check_url(url: str) -> str:
    """`url` if localcube can use it as its store; raise ValueError saying why not."""
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES:
        raise ValueError(
            f"unsupported scheme {parts.scheme!r} (use redis://HOST:PORT or valkey://)"
        )
    if parts.password is not None:
        raise ValueError("put the password in REDIS_PASSWORD, not on the command line")
    if not parts.hostname:
        raise ValueError("the URL names no host")
    return url


class RedisRecords:
    """Upstream's keys in one Redis or Valkey database."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(check_url(url))
        password = next(
            (os.environ[name] for name in PASSWORD_VARIABLES if name in os.environ), None
        )
        # Imported here: the Redis client costs every localcube start 45 ms, and most
        # serve from SQLite alone.
        import redis

        self.url = url
        self._error = redis.RedisError
        self._client = redis.Redis.from_url(
            parts._replace(scheme=SCHEMES[parts.scheme]).geturl(),
            password=password,
            socket_timeout=_TIMEOUT,
            socket_connect_timeout=_TIMEOUT,
        )
        self._touch = self._client.register_script(_TOUCH)

    def close(self) -> None:
        self._client.close()

    def ping(self) -> None:
        self._call(self._client.ping)

    def store(self, session_id: str, placeholder: bytes, expires_at: float, now: float) -> None:
        """StoreSandbox: the placeholder unless the key exists, and both index entries."""
        pipe = self._client.pipeline(transaction=False)
        pipe.setnx(session_key(session_id), placeholder)
        pipe.zadd(EXPIRY_INDEX, {session_id: math.floor(expires_at)})
        pipe.zadd(ACTIVITY_INDEX, {session_id: math.floor(now)})
        self._call(pipe.execute)

    def update(self, session_id: str, record: bytes) -> None:
        """UpdateSandbox: replace the record only if it still exists; indexes untouched."""
        if not self._call(self._client.set, session_key(session_id), record, xx=True):
            raise StoreError(f"record of session {session_id} vanished while it opened")

    def delete(self, session_id: str) -> None:
        pipe = self._client.pipeline(transaction=False)
        pipe.delete(session_key(session_id))
        pipe.zrem(EXPIRY_INDEX, session_id)
        pipe.zrem(ACTIVITY_INDEX, session_id)
        self._call(pipe.execute)

    def get(self, session_id: str) -> dict[str, Any] | None:
        data = self._call(self._client.get, session_key(session_id))
        if data is None:
            return None
        try:
            record: dict[str, Any] = json.loads(data)
        except ValueError as error:
            raise StoreError(f"record of session {session_id} is not JSON") from error
        return record

    def touch(self, session_id: str, now: float) -> bool:
        """The Router's activity update; False when the session has no record."""
        return bool(
            self._call(
                self._touch,
                keys=[session_key(session_id), ACTIVITY_INDEX],
                args=[session_id, math.floor(now)],
            )
        )

    def last_activity(self, session_ids: Iterable[str]) -> dict[str, float]:
        """The scores of `session_ids` in `session:last_activity` (absent ones left out)."""
        ids = list(session_ids)
        if not ids:
            return {}
        scores = self._call(self._client.zmscore, ACTIVITY_INDEX, ids)
        return {sid: score for sid, score in zip(ids, scores, strict=True) if score is not None}

    def _call(self, command: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except self._error as error:
            raise StoreError(f"store {self.url}: {error}") from error
