"""Clients for AgentCube's two HTTP services: the Router (the data plane: invocations of
agents, and of PicoD's API inside code-interpreter sandboxes) and the WorkloadManager (the
control plane: sessions created and deleted).
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

import requests

from acceptance.core.measurements import Measurements
from acceptance.core.runtimes import Runtime, RuntimeKind
from acceptance.core.streams import StreamingClient
from acceptance.core.transport import Transport, bearer
from agentcube_contract.session import SESSION_HEADER


def session_id_of(response: requests.Response) -> str | None:
    return response.headers.get(SESSION_HEADER)


# The latencies a successful call through the Router records: in a session, or a first
# call by how its sandbox starts; one of many callers at once apart, with their number.
CALL_IN_SESSION = "call in a session"
FIRST_CALL_COLD = "first call (cold start)"
FIRST_CALL_WARM = "first call (warm pool)"


class Router:
    def __init__(
        self,
        transport: Transport,
        base_url: str,
        measurements: Measurements,
        warm_pooled: Collection[Runtime] = (),
    ) -> None:
        """`warm_pooled`: the runtimes with a warm pool, whose first calls are warm starts."""
        self._transport = transport
        self._base_url = base_url
        self._measurements = measurements
        self._warm_pooled = frozenset(warm_pooled)
        self._callers_at_once = 1

    @contextmanager
    def at_once(self, callers: int) -> Iterator[None]:
        """The calls of the block are made by `callers` at once: measured apart."""
        self._callers_at_once = callers
        try:
            yield
        finally:
            self._callers_at_once = 1

    def ready(self) -> requests.Response:
        """Its readiness, asked without a token (pkg/router/server.go:157 at 939abb5)."""
        return self._transport.request("GET", f"{self._base_url}/health/ready")

    def streams(self, token: str | None, longer_by: float) -> StreamingClient:
        """Streams and WebSockets at this Router, presenting `token` (None: none), waiting
        `longer_by` seconds more than a call for a stream or a reply."""
        transport = self._transport
        return StreamingClient(transport.log, bearer(token), transport.timeout + longer_by)

    def invoke(
        self,
        runtime: Runtime,
        path: str,
        *,
        session_id: str | None,
        method: str = "POST",
        **kwargs: Any,
    ) -> requests.Response:
        """Call a runtime through the Router (`token`: the caller's); without session_id the
        Router creates one. A successful call records its latency."""
        headers = dict(kwargs.pop("headers", None) or {})
        if session_id:
            headers[SESSION_HEADER] = session_id
        started = time.perf_counter()
        response = self._transport.request(
            method, self.invocation_url(runtime, path), headers=headers, **kwargs
        )
        if response.ok:
            self._measurements.record(
                self._measurement(runtime, session_id), time.perf_counter() - started
            )
        return response

    def _measurement(self, runtime: Runtime, session_id: str | None) -> str:
        if session_id:
            name = CALL_IN_SESSION
        else:
            name = FIRST_CALL_WARM if runtime in self._warm_pooled else FIRST_CALL_COLD
        if self._callers_at_once > 1:
            name += f", {self._callers_at_once} at once"
        return name

    def invocation_url(self, runtime: Runtime, path: str) -> str:
        return (
            f"{self._base_url}/v1/namespaces/{quote(runtime.namespace)}/"
            f"{runtime.kind.router_segment}/{quote(runtime.name)}/invocations/{path}"
        )


class WorkloadManager:
    def __init__(self, transport: Transport, base_url: str) -> None:
        self._transport = transport
        self._base_url = base_url

    def healthy(self) -> requests.Response:
        """Its health, asked without a token (pkg/workloadmanager/server.go:119)."""
        return self._transport.request("GET", f"{self._base_url}/health")

    def create_session(
        self, runtime: Runtime, *, token: str | None, ttl: int | None = None
    ) -> requests.Response:
        """Create a session; `ttl` (seconds) asks for a hard lifetime shorter than the
        runtime's maxSessionDuration (upstream since PR #460)."""
        body: dict[str, Any] = {"name": runtime.name, "namespace": runtime.namespace}
        if ttl is not None:
            body["ttl"] = ttl
        return self._transport.request(
            "POST", f"{self._base_url}/v1/{runtime.kind.wm_segment}", json=body, token=token
        )

    def delete_session(
        self, kind: RuntimeKind, session_id: str, *, token: str | None
    ) -> requests.Response:
        return self._transport.request("DELETE", self.session_url(kind, session_id), token=token)

    def session_url(self, kind: RuntimeKind, session_id: str) -> str:
        return f"{self._base_url}/v1/{kind.wm_segment}/sessions/{quote(session_id)}"
