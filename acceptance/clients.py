"""Clients for AgentCube's two HTTP services, following the wire contract.

The Router is the public data plane: invocations of agent runtimes and code interpreters,
and PicoD's API inside code-interpreter sandboxes, reached through it. The WorkloadManager
is the control plane: it creates and deletes sessions.
"""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import quote

import requests

from acceptance.runtimes import Runtime, RuntimeKind
from acceptance.transport import Transport

SESSION_HEADER = "x-agentcube-session-id"


def session_id_of(response: requests.Response) -> str | None:
    """The session id the Router returned with this answer, if any."""
    return response.headers.get(SESSION_HEADER)


class Router:
    def __init__(self, transport: Transport, base_url: str) -> None:
        self._transport = transport
        self._base_url = base_url

    def ready(self) -> requests.Response:
        return self._transport.request("GET", f"{self._base_url}/health/ready")

    def invoke(
        self,
        runtime: Runtime,
        path: str,
        *,
        session_id: str | None,
        method: str = "POST",
        **kwargs: Any,
    ) -> requests.Response:
        """Call a runtime through the Router; without session_id the Router creates one."""
        headers = {SESSION_HEADER: session_id} if session_id else {}
        url = (
            f"{self._base_url}/v1/namespaces/{quote(runtime.namespace)}/"
            f"{runtime.kind.router_segment}/{quote(runtime.name)}/invocations/{path}"
        )
        return self._transport.request(method, url, headers=headers, **kwargs)

    # PicoD's API, inside a code-interpreter sandbox.

    def execute(
        self, runtime: Runtime, command: list[str], *, session_id: str | None
    ) -> requests.Response:
        return self.invoke(runtime, "api/execute", session_id=session_id, json={"command": command})

    def upload_file(
        self, runtime: Runtime, path: str, content: bytes, *, session_id: str
    ) -> requests.Response:
        body = {"path": path, "content": base64.b64encode(content).decode("ascii")}
        return self.invoke(runtime, "api/files", session_id=session_id, json=body)

    def list_files(self, runtime: Runtime, directory: str, *, session_id: str) -> requests.Response:
        return self.invoke(
            runtime, "api/files", session_id=session_id, method="GET", params={"path": directory}
        )

    def download_file(self, runtime: Runtime, path: str, *, session_id: str) -> requests.Response:
        return self.invoke(runtime, f"api/files/{quote(path)}", session_id=session_id, method="GET")


class WorkloadManager:
    def __init__(self, transport: Transport, base_url: str) -> None:
        self._transport = transport
        self._base_url = base_url

    def healthy(self) -> requests.Response:
        return self._transport.request("GET", f"{self._base_url}/health")

    def create_session(self, runtime: Runtime) -> requests.Response:
        return self._transport.request(
            "POST",
            f"{self._base_url}/v1/{runtime.kind.wm_segment}",
            json={"name": runtime.name, "namespace": runtime.namespace},
        )

    def delete_session(self, kind: RuntimeKind, session_id: str) -> requests.Response:
        return self._transport.request(
            "DELETE", f"{self._base_url}/v1/{kind.wm_segment}/sessions/{quote(session_id)}"
        )
