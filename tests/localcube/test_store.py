"""The store opens the file of an older localcube: a restart after an upgrade keeps its
sessions."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from localcube.store import SandboxRecord, Store

OLDER_SCHEMA = """
CREATE TABLE sandboxes (
    sandbox_id TEXT PRIMARY KEY, sandbox_name TEXT NOT NULL, session_id TEXT UNIQUE,
    kind TEXT NOT NULL, namespace TEXT NOT NULL, runtime TEXT NOT NULL, pid INTEGER NOT NULL,
    process_start TEXT NOT NULL, endpoints TEXT NOT NULL, workspace TEXT NOT NULL, owner TEXT,
    created_at REAL NOT NULL, claimed_at REAL, last_activity_at REAL, idle_timeout REAL,
    expires_at REAL
)
"""


def test_a_store_of_an_older_localcube_is_read_and_extended(tmp_path: Path) -> None:
    path = tmp_path / "localcube.db"
    with sqlite3.connect(path) as older:
        older.execute(OLDER_SCHEMA)
        older.execute(
            "INSERT INTO sandboxes VALUES ('b-1', 'echo-b1', 's-1', 'AgentRuntime', 'default',"
            " 'echo-agent', 42, '7', ?, '/w', NULL, 10.5, 10.5, 12.7, 60, 99)",
            ('[["/", 9000]]',),
        )
    store = Store(path)
    try:
        (record,) = store.all()
        assert (record.last_activity_at, record.lost_at, record.state) == (12, None, "claimed")
        assert record.sandbox_kind is None, "an older store never recorded upstream's kind"
        assert store.mark_lost("b-1", 13.0)
        assert store.by_session("s-1").state == "lost"
        assert store.delete("b-1") and not store.delete("b-1")
    finally:
        store.close()


def test_warm_sandboxes_are_those_of_the_runtime_no_session_claimed_oldest_first(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "localcube.db")
    try:

        def put(sandbox_id: str, runtime: str, created_at: float, session: str | None) -> None:
            store.put(
                SandboxRecord(
                    sandbox_id,
                    f"name-{sandbox_id}",
                    "CodeInterpreter",
                    "default",
                    runtime,
                    1,
                    "1",
                    (("/", 9000),),
                    "/w",
                    created_at,
                    session_id=session,
                )
            )

        put("newer", "warm", 2.0, None)
        put("older", "warm", 1.0, None)
        put("claimed", "warm", 0.5, "s-1")
        put("other", "cold", 0.1, None)
        warm = store.warm("CodeInterpreter", "default", "warm")
        assert [record.sandbox_id for record in warm] == ["older", "newer"]
        assert store.warm("AgentRuntime", "default", "warm") == []
        assert store.by_sandbox("claimed").session_id == "s-1"
        assert store.by_sandbox("gone") is None
    finally:
        store.close()


def test_a_claimed_record_keeps_the_kind_upstream_created_for_its_session(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "localcube.db")
    try:
        warm = SandboxRecord(
            "b-1",
            "warm-b1",
            "CodeInterpreter",
            "default",
            "warm",
            1,
            "1",
            (("/", 9000),),
            "/w",
            1.0,
        )
        store.put(warm.claimed("s-1", "SandboxClaim", None, 2.0, 60.0, 99.0))
        assert store.by_session("s-1").sandbox_kind == "SandboxClaim"
    finally:
        store.close()
