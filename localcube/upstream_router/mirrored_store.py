"""The SQLite store kept in step with upstream's session records (`--store redis://...`).

SQLite keeps what only localcube needs (processes, ports, workspaces, warm sandboxes);
Redis or Valkey keeps each session as upstream's WorkloadManager writes it. So upstream's
Router finds the sessions localcube opens, a session is found only while its record
exists, and the activity a Router records there is the activity localcube's GC sees.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import replace
from pathlib import Path

from localcube.store import SandboxRecord, Store, StoreError
from localcube.upstream_router.redis_records import RedisRecords
from localcube.upstream_router.session_records import entry_point_ports, placeholder, ready

log = logging.getLogger("localcube.store")


class MirroredStore(Store):
    def __init__(self, path: Path, records: RedisRecords) -> None:
        super().__init__(path)
        self.records = records

    def close(self) -> None:
        super().close()
        self.records.close()

    def put(self, record: SandboxRecord) -> None:
        """A new session is written as upstream opens one: placeholder, then full record;
        localcube's own row last. Raise StoreError when the records cannot be written, and
        then leave neither a new session's records nor its row behind."""
        session_id = record.session_id
        if session_id is None:
            super().put(record)
            return
        new = super().by_session(session_id) is None
        try:
            if new:
                self.records.store(
                    session_id, placeholder(record), record.expires_at or 0.0, time.time()
                )
            self.records.update(session_id, ready(record))
            super().put(record)
        except StoreError:
            if new:
                with contextlib.suppress(StoreError):
                    self.records.delete(session_id)
            raise

    def by_session(self, session_id: str) -> SandboxRecord | None:
        """The session while its record exists, with the owner and entry points the record
        names, as upstream's Router reads them. Raise StoreError."""
        document = self.records.get(session_id)
        record = super().by_session(session_id) if document is not None else None
        if document is None or record is None:
            return None
        try:
            endpoints = entry_point_ports(document)  # none in a placeholder: nothing to reach
        except (AttributeError, KeyError, TypeError, ValueError) as error:
            raise StoreError(f"record of session {session_id} is malformed: {error!r}") from error
        return replace(record, owner=document.get("ownerId") or None, endpoints=endpoints)

    def all(self) -> list[SandboxRecord]:
        """Every sandbox; a session's last activity is its score in `session:last_activity`,
        or localcube's own record of it while the store does not answer (so a stop still
        ends every sandbox)."""
        records = super().all()
        try:
            activity = self.records.last_activity(r.session_id for r in records if r.session_id)
        except StoreError as failure:
            log.warning("activity read from localcube's own record: %s", failure)
            return records
        return [
            replace(record, last_activity_at=int(activity[record.session_id]))
            if record.session_id in activity
            else record
            for record in records
        ]

    def touch(self, session_id: str, now: int) -> None:
        """As upstream's Router: a failed activity update is logged, the call goes on."""
        super().touch(session_id, now)
        try:
            if not self.records.touch(session_id, now):
                log.warning("activity of session %s not recorded: it has no record", session_id)
        except StoreError as failure:
            log.warning("activity of session %s not recorded: %s", session_id, failure)

    def delete(self, sandbox_id: str) -> bool:
        """Forget the sandbox; its session's record and index entries go with it. False if
        it was already forgotten."""
        record = super().by_sandbox(sandbox_id)
        session_id = None if record is None else record.session_id
        if not super().delete(sandbox_id):
            return False
        if session_id is not None:
            try:
                self.records.delete(session_id)
            except StoreError as failure:
                log.error("record of session %s left in the store: %s", session_id, failure)
        return True
