"""The admin API under /localcube/v1: runtimes (apply, delete, list), sandboxes, and the
Router's own settings that a client cannot observe quickly (its read timeout).

The suite reads sandboxes here where, on a cluster, it would read pods and claims.
"""

from __future__ import annotations

import ipaddress
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from localcube.bearer_auth import Handler
from localcube.manifests import PLURALS, ManifestError, parse_documents
from localcube.sandboxing.launcher import is_alive
from localcube.session_errors import RuntimeNotFound
from localcube.store import SandboxRecord
from localcube.workload_manager import WorkloadManager

PREFIX = "/localcube/v1"
_KIND_BY_PLURAL = {plural: kind for kind, plural in PLURALS.items()}


def _error(status: int, text: str) -> web.Response:
    return web.json_response({"error": text}, status=status)


def _timestamp(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def describe(record: SandboxRecord, calls_in_flight: int) -> dict[str, Any]:
    """A sandbox as the admin API lists it; `callsInFlight`: calls the Router is forwarding
    to it now (whole-second activity times do not show a call that has just started)."""
    return {
        "sandboxId": record.sandbox_id,
        "sandboxName": record.sandbox_name,
        "sessionId": record.session_id,
        "kind": record.kind,
        "namespace": record.namespace,
        "runtime": record.runtime,
        "pid": record.pid,
        "state": record.state,
        "alive": is_alive(record.pid, record.process_start),
        "createdAt": _timestamp(record.created_at),
        "lastActivityAt": _timestamp(record.last_activity_at),
        "callsInFlight": calls_in_flight,
        "expiresAt": _timestamp(record.expires_at),
        "endpoint": f"127.0.0.1:{record.endpoints[0][1]}",
        "workspace": record.workspace,
    }


@web.middleware
async def loopback_only(request: web.Request, handler: Handler) -> web.StreamResponse:
    """The admin API can start processes on this machine: only local callers may use it."""
    if (
        request.path.startswith(PREFIX)
        and not ipaddress.ip_address(request.remote or "::").is_loopback
    ):
        return _error(403, "the admin API answers only callers on this machine")
    return await handler(request)


class AdminRoutes:
    def __init__(self, workloads: WorkloadManager, router_read_timeout: float) -> None:
        self.workloads = workloads
        self.router_read_timeout = router_read_timeout

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get(f"{PREFIX}/runtimes", self.list_runtimes),
            web.post(f"{PREFIX}/runtimes", self.apply_runtimes),
            web.delete(f"{PREFIX}/runtimes/{{plural}}/{{namespace}}/{{name}}", self.delete_runtime),
            web.get(f"{PREFIX}/sandboxes", self.list_sandboxes),
            web.get(f"{PREFIX}/router", self.describe_router),
        ]

    async def list_runtimes(self, _: web.Request) -> web.Response:
        runtimes = [runtime.describe() for runtime in self.workloads.configured_runtimes()]
        return web.json_response({"runtimes": runtimes})

    async def apply_runtimes(self, request: web.Request) -> web.Response:
        try:
            text = (await request.read()).decode("utf-8")
            runtimes = parse_documents(text, "request body")
        except UnicodeDecodeError:
            return _error(400, "request body: not UTF-8 text")
        except ManifestError as refused:
            return _error(400, str(refused))
        if not runtimes:
            return _error(400, "request body: no AgentRuntime or CodeInterpreter resource")
        await self.workloads.apply(runtimes)
        applied = [{"kind": r.kind, "namespace": r.namespace, "name": r.name} for r in runtimes]
        return web.json_response({"applied": applied})

    async def delete_runtime(self, request: web.Request) -> web.Response:
        plural = request.match_info["plural"]
        if plural not in _KIND_BY_PLURAL:
            return _error(
                404, f"unknown resource kind {plural!r}: use agentruntimes or codeinterpreters"
            )
        try:
            runtime = await self.workloads.remove(
                _KIND_BY_PLURAL[plural], request.match_info["namespace"], request.match_info["name"]
            )
        except RuntimeNotFound as missing:
            return _error(404, str(missing))
        return web.json_response({"deleted": runtime.describe()})

    async def list_sandboxes(self, _: web.Request) -> web.Response:
        sandboxes = [
            describe(record, self.workloads.calls_in_flight(record.session_id or ""))
            for record in self.workloads.sandboxes()
        ]
        return web.json_response({"sandboxes": sandboxes})

    async def describe_router(self, _: web.Request) -> web.Response:
        """What a WebSocket scenario would otherwise wait out to learn: `--read-timeout`."""
        return web.json_response({"readTimeoutSeconds": self.router_read_timeout})
