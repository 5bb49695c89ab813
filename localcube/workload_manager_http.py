"""The WorkloadManager's HTTP routes, with upstream's `{"message": ...}` error bodies."""

from __future__ import annotations

import json

from aiohttp import web

from localcube.bearer_auth import SUBJECT_KEY, owner_refusal
from localcube.manifests import AGENT_RUNTIME, CODE_INTERPRETER
from localcube.sandboxes import SandboxStartError
from localcube.session_errors import RuntimeNotFound, workload_manager_refusal
from localcube.workload_manager import WorkloadManager

_KINDS = {"agent-runtime": AGENT_RUNTIME, "code-interpreter": CODE_INTERPRETER}


def message(status: int, text: str) -> web.Response:
    return web.json_response({"message": text}, status=status)


class WorkloadManagerRoutes:
    def __init__(self, workloads: WorkloadManager) -> None:
        self.workloads = workloads

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/health", self.health),
            web.post("/v1/{kind:agent-runtime|code-interpreter}", self.create),
            web.delete(
                "/v1/{kind:agent-runtime|code-interpreter}/sessions/{session_id}", self.delete
            ),
        ]

    async def health(self, _: web.Request) -> web.Response:
        return web.json_response({"status": "healthy"})

    async def create(self, request: web.Request) -> web.Response:
        kind = _KINDS[request.match_info["kind"]]
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return message(400, "Invalid request body")
        if not isinstance(body, dict):
            return message(400, "Invalid request body")
        for field in ("namespace", "name"):
            if not isinstance(body.get(field), str) or not body[field]:
                return message(400, f"{field} is required")
        ttl = body.get("ttl")
        if ttl is not None and (
            isinstance(ttl, bool) or not isinstance(ttl, int | float) or ttl <= 0
        ):
            return message(400, "ttl must be a positive number of seconds")
        try:
            record = await self.workloads.create_session(
                kind, body["namespace"], body["name"], owner=request.get(SUBJECT_KEY), ttl=ttl
            )
        except (RuntimeNotFound, SandboxStartError) as failure:
            return workload_manager_refusal(failure)
        runtime = self.workloads.runtimes.get((kind, body["namespace"], body["name"]))
        pooled = runtime is not None and runtime.warm_pool_size > 0
        return web.json_response(
            {
                "kind": "SandboxClaim" if pooled else "Sandbox",
                "sessionId": record.session_id,
                "sandboxId": record.sandbox_id,
                "sandboxName": record.sandbox_name,
                "entryPoints": [
                    {"path": prefix, "protocol": "HTTP", "endpoint": f"127.0.0.1:{port}"}
                    for prefix, port in record.endpoints
                ],
            }
        )

    async def delete(self, request: web.Request) -> web.Response:
        session_id = request.match_info["session_id"]
        record = self.workloads.session(session_id)
        if record is None:
            return message(404, f"Session ID {session_id} not found, maybe already deleted")
        refusal = owner_refusal(request, record.owner)
        if refusal is not None:
            return refusal
        await self.workloads.delete_session(session_id)
        return web.json_response({"message": "Sandbox deleted successfully"})
