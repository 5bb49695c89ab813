"""Upstream's session records, byte for byte as its WorkloadManager writes them.

`session:<id>` holds a types.SandboxInfo marshalled by Go's encoding/json
(pkg/common/types/sandbox.go:26-52); the sorted sets `session:expiry` and
`session:last_activity` hold each session's expiry and last activity in unix seconds
(pkg/store/store_redis.go:47-52). Times are written in UTC, as in upstream's pods.
"""

from __future__ import annotations

import math
from typing import Any

from localcube.picod import gocompat
from localcube.store import SandboxRecord

SESSION_PREFIX = "session:"
EXPIRY_INDEX = "session:expiry"
ACTIVITY_INDEX = "session:last_activity"
SANDBOX_CLAIM = "SandboxClaim"


def session_key(session_id: str) -> str:
    return SESSION_PREFIX + session_id


def go_json(value: dict[str, Any]) -> bytes:
    """`value` as Go's json.Marshal writes it: compact, UTF-8, HTML characters escaped."""
    return gocompat.go_json(value).encode()


def go_time(seconds: float) -> str:
    """A UTC instant as Go's time.Time marshals it (localcube keeps microseconds)."""
    return gocompat.rfc3339(round(seconds * 1_000_000) * 1_000)


def go_duration(seconds: float) -> str:
    """A duration as metav1.Duration marshals it: Go's time.Duration.String (`15m0s`)."""
    return gocompat.go_duration_string(round(seconds * 1_000_000_000))


def placeholder(record: SandboxRecord) -> bytes:
    """What the WorkloadManager stores before the sandbox exists: no sandbox id, no entry
    points, the times as taken, status `creating` (pkg/workloadmanager/sandbox_helper.go:50-76)."""
    return _record(
        record,
        sandbox_id="",
        entry_points=None,
        created_at=record.claimed_at or record.created_at,
        expires_at=record.expires_at or 0.0,
        status="creating",
    )


def ready(record: SandboxRecord) -> bytes:
    """The record that replaces the placeholder once the sandbox serves
    (pkg/workloadmanager/sandbox_helper.go:78-109, handlers.go:442-448): a Sandbox's times
    as the API server hands them back (whole seconds), a SandboxClaim's the placeholder's."""
    created_at = record.claimed_at or record.created_at
    expires_at = record.expires_at or 0.0
    if record.sandbox_kind != SANDBOX_CLAIM:
        created_at, expires_at = math.floor(created_at), math.floor(expires_at)
    entry_points = [
        {"path": prefix, "protocol": "HTTP", "endpoint": f"127.0.0.1:{port}"}
        for prefix, port in record.endpoints
    ]
    return _record(
        record,
        sandbox_id=record.sandbox_id,
        entry_points=entry_points,
        created_at=created_at,
        expires_at=expires_at,
        status="ready",
    )


def _record(
    record: SandboxRecord,
    *,
    sandbox_id: str,
    entry_points: list[dict[str, str]] | None,
    created_at: float,
    expires_at: float,
    status: str,
) -> bytes:
    fields: dict[str, Any] = {
        "kind": record.sandbox_kind,
        "sandboxId": sandbox_id,
        "sandboxNamespace": record.namespace,
        "name": record.sandbox_name,
        "entryPoints": entry_points,
        "sessionId": record.session_id or "",
    }
    if record.owner:  # `ownerId,omitempty`
        fields["ownerId"] = record.owner
    fields["createdAt"] = go_time(created_at)
    fields["expiresAt"] = go_time(expires_at)
    fields["idleTimeout"] = go_duration(record.idle_timeout or 0.0)
    fields["status"] = status
    return go_json(fields)


def entry_point_ports(document: dict[str, Any]) -> tuple[tuple[str, int], ...]:
    """The (path prefix, port) pairs of a stored record's entry points on this machine."""
    return tuple(
        (point["path"], int(point["endpoint"].rpartition(":")[2]))
        for point in document.get("entryPoints") or ()
    )
