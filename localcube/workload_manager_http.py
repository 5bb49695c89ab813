"""The WorkloadManager's HTTP routes, with upstream's `{"message": ...}` error bodies."""

from __future__ import annotations

import functools
import json
import logging
from typing import Any

from aiohttp import web

from localcube.manifests import AGENT_RUNTIME, CODE_INTERPRETER
from localcube.picod.gocompat import gin_json
from localcube.session_errors import CREATION_FAILURES, workload_manager_refusal
from localcube.signing import IDENTITY_HEADER, InvalidIdentity, RequestSigner
from localcube.store import StoreError
from localcube.workload_manager import WorkloadManager

log = logging.getLogger("localcube.workload_manager")
_KINDS = {"agent-runtime": AGENT_RUNTIME, "code-interpreter": CODE_INTERPRETER}
_INT64 = range(-(2**63), 2**63)


class _NotGoJson(ValueError):
    """A body Go's encoding/json would not bind into the request."""


def _refuse_constant(name: str) -> Any:
    raise _NotGoJson(f"{name} is not JSON")  # Python reads NaN and Infinity; Go does not


_go_loads = functools.partial(json.loads, parse_constant=_refuse_constant)


def _bound_ttl(body: dict[str, Any]) -> int | None:
    """The `ttl` as Go binds it into an integer (PR #460): a whole JSON integer in int64's
    range, or null for none; text, fractions (`1.0` too), booleans and numbers out of range
    do not bind."""
    ttl = body.get("ttl")
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, int) or ttl not in _INT64:
        raise _NotGoJson("ttl is not an integer")
    return ttl


def message(status: int, text: str) -> web.Response:
    return gin_json(status, {"message": text})


class WorkloadManagerRoutes:
    def __init__(self, workloads: WorkloadManager, signer: RequestSigner) -> None:
        self.workloads = workloads
        self.signer = signer

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/health", self.health, allow_head=False),  # Gin routes no HEAD
            web.post("/v1/{kind:agent-runtime|code-interpreter}", self.create),
            web.delete(
                "/v1/{kind:agent-runtime|code-interpreter}/sessions/{session_id}", self.delete
            ),
        ]

    async def health(self, _: web.Request) -> web.Response:
        return gin_json(200, {"status": "healthy"})

    async def create(self, request: web.Request) -> web.Response:
        kind = _KINDS[request.match_info["kind"]]
        try:
            # not JSON, not UTF-8, too deep, too many digits, a field Go cannot bind
            body = await request.json(loads=_go_loads)
            # Go binds each into a string; the bound `kind` is then replaced by the path's
            # (pkg/common/types/sandbox.go:54-58, pkg/workloadmanager/handlers.go:146-153).
            if not isinstance(body, dict) or any(
                body.get(field) is not None and not isinstance(body[field], str)
                for field in ("kind", "namespace", "name")
            ):
                raise _NotGoJson("not the request's shape")
            ttl = _bound_ttl(body)
        except (ValueError, RecursionError):
            return message(400, "Invalid request body")
        for field in ("namespace", "name"):
            if not body.get(field):
                return message(400, f"{field} is required")
        if ttl is not None and ttl <= 0:
            return message(400, "ttl must be greater than zero")
        identity = request.headers.get(IDENTITY_HEADER)
        try:
            # The owner is only ever the caller the Router signed for, never the bearer of
            # the token that authenticated this call (pkg/workloadmanager/handlers.go:227-241).
            owner = self.signer.identity_subject(identity) if identity else None
        except InvalidIdentity as refused:
            log.warning("identity token refused: %s", refused)
            return message(401, "invalid identity token")
        try:
            record = await self.workloads.create_session(
                kind, body["namespace"], body["name"], owner=owner, ttl=ttl
            )
        except CREATION_FAILURES as failure:
            return workload_manager_refusal(failure)
        created = {
            "kind": record.sandbox_kind,
            "sessionId": record.session_id,
            "sandboxId": record.sandbox_id,
            "sandboxName": record.sandbox_name,
            "entryPoints": [
                {"path": prefix, "protocol": "HTTP", "endpoint": f"127.0.0.1:{port}"}
                for prefix, port in record.endpoints
            ],
        }
        if owner:  # `ownerId,omitempty` (pkg/common/types/sandbox.go:60-67)
            created["ownerId"] = owner
        return gin_json(200, created, struct=True)  # types.CreateSandboxResponse

    async def delete(self, request: web.Request) -> web.Response:
        session_id = request.match_info["session_id"]
        try:
            record = self.workloads.session(session_id)
            if record is None:
                return message(404, f"Session ID {session_id} not found, maybe already deleted")
            # No ownership check: upstream deletes any session the caller's credentials may
            # (pkg/workloadmanager/handlers.go:497-564).
            await self.workloads.delete_session(session_id)
        except StoreError as failure:
            return workload_manager_refusal(failure)
        return gin_json(200, {"message": "Sandbox deleted successfully"})
