"""The session store: every sandbox localcube started, in SQLite under the state dir.

Upstream keeps session records in Redis; here one table holds sandboxes and the session
each serves (none while it waits in a warm pool), so a restarted localcube can adopt them.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from localcube.collection_rules import whole_seconds

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sandboxes (
    sandbox_id TEXT PRIMARY KEY,
    sandbox_name TEXT NOT NULL,
    session_id TEXT UNIQUE,
    kind TEXT NOT NULL,
    namespace TEXT NOT NULL,
    runtime TEXT NOT NULL,
    pid INTEGER NOT NULL,
    process_start TEXT NOT NULL,
    endpoints TEXT NOT NULL,
    workspace TEXT NOT NULL,
    owner TEXT,
    created_at REAL NOT NULL,
    claimed_at REAL,
    last_activity_at INTEGER,
    idle_timeout REAL,
    expires_at REAL,
    lost_at REAL,
    sandbox_kind TEXT
)
"""


class StoreError(RuntimeError):
    """The store could not do what was asked: a write failed (a read-only or full file
    system, a broken file), or the Redis or Valkey that mirrors it did not answer. Upstream
    answers 500 `internal server error` (pkg/workloadmanager/handlers.go:391-398,
    pkg/router/session_manager.go:143-150)."""


@contextmanager
def _writing(what: str) -> Iterator[None]:
    try:
        yield
    except sqlite3.Error as failure:
        raise StoreError(f"cannot {what}: {failure}") from failure


# Columns a store of an older localcube lacks, with their types.
_ADDED_COLUMNS = (("lost_at", "REAL"), ("sandbox_kind", "TEXT"))


@dataclass(frozen=True)
class SandboxRecord:
    """One sandbox process; `session_id` is None while it is warm in a pool, `lost_at` set
    once its session's sandbox was found dead and reaped. `kind` is its runtime's
    (AgentRuntime or CodeInterpreter); `sandbox_kind` what upstream created for its session,
    a Sandbox or a SandboxClaim (None while warm, and in a store of an older localcube)."""

    sandbox_id: str
    sandbox_name: str
    kind: str
    namespace: str
    runtime: str
    pid: int
    process_start: str
    endpoints: tuple[tuple[str, int], ...]
    workspace: str
    created_at: float
    session_id: str | None = None
    owner: str | None = None
    claimed_at: float | None = None
    last_activity_at: int | None = None  # whole seconds, as upstream's store keeps it
    idle_timeout: float | None = None
    expires_at: float | None = None
    lost_at: float | None = None
    sandbox_kind: str | None = None

    @property
    def state(self) -> str:
        if self.session_id is None:
            return "warm"
        return "claimed" if self.lost_at is None else "lost"

    def claimed(
        self,
        session_id: str,
        sandbox_kind: str,
        owner: str | None,
        now: float,
        idle_timeout: float,
        expires_at: float,
    ) -> SandboxRecord:
        return replace(
            self,
            session_id=session_id,
            sandbox_kind=sandbox_kind,
            owner=owner,
            claimed_at=now,
            last_activity_at=whole_seconds(now),
            idle_timeout=idle_timeout,
            expires_at=expires_at,
        )


class Store:
    """A thin, synchronous SQLite store; each call is one short transaction. A write that
    fails raises StoreError and changes nothing."""

    def __init__(self, path: Path) -> None:
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(_SCHEMA)
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(sandboxes)")}
        for name, sql_type in _ADDED_COLUMNS:
            if name not in columns:
                self._db.execute(f"ALTER TABLE sandboxes ADD COLUMN {name} {sql_type}")

    def close(self) -> None:
        self._db.close()

    def put(self, record: SandboxRecord) -> None:
        row = asdict(record)
        row["endpoints"] = json.dumps(record.endpoints)
        columns = ", ".join(row)
        marks = ", ".join(f":{name}" for name in row)
        with _writing(f"record sandbox {record.sandbox_id}"):
            self._db.execute(f"INSERT OR REPLACE INTO sandboxes ({columns}) VALUES ({marks})", row)

    def by_session(self, session_id: str) -> SandboxRecord | None:
        rows = self._select("WHERE session_id = ?", (session_id,))
        return rows[0] if rows else None

    def by_sandbox(self, sandbox_id: str) -> SandboxRecord | None:
        rows = self._select("WHERE sandbox_id = ?", (sandbox_id,))
        return rows[0] if rows else None

    def warm(self, kind: str, namespace: str, runtime: str) -> list[SandboxRecord]:
        """The runtime's sandboxes that no session has claimed, oldest first."""
        return self._select(
            "WHERE session_id IS NULL AND kind = ? AND namespace = ? AND runtime = ? "
            "ORDER BY created_at",
            (kind, namespace, runtime),
        )

    def all(self) -> list[SandboxRecord]:
        return self._select("ORDER BY created_at", ())

    def touch(self, session_id: str, now: int) -> None:
        with _writing(f"record the activity of session {session_id}"):
            self._db.execute(
                "UPDATE sandboxes SET last_activity_at = ? WHERE session_id = ?", (now, session_id)
            )

    def mark_lost(self, sandbox_id: str, now: float) -> bool:
        """Mark a claimed sandbox lost; False if it is no longer stored."""
        with _writing(f"mark sandbox {sandbox_id} lost"):
            cursor = self._db.execute(
                "UPDATE sandboxes SET lost_at = ? WHERE sandbox_id = ? AND session_id IS NOT NULL",
                (now, sandbox_id),
            )
        return cursor.rowcount == 1

    def delete(self, sandbox_id: str) -> bool:
        """Forget a sandbox; False if it was already forgotten."""
        with _writing(f"forget sandbox {sandbox_id}"):
            cursor = self._db.execute("DELETE FROM sandboxes WHERE sandbox_id = ?", (sandbox_id,))
        return cursor.rowcount == 1

    def _select(self, clause: str, params: tuple[object, ...]) -> list[SandboxRecord]:
        cursor = self._db.execute(f"SELECT * FROM sandboxes {clause}", params)
        names = [column[0] for column in cursor.description]
        records = []
        for values in cursor.fetchall():
            row = dict(zip(names, values, strict=True))
            row["endpoints"] = tuple((path, port) for path, port in json.loads(row["endpoints"]))
            if row["last_activity_at"] is not None:  # REAL in stores of older localcubes
                row["last_activity_at"] = int(row["last_activity_at"])
            records.append(SandboxRecord(**row))
        return records
