"""A stand-in for the Kubernetes API server, at the HTTP boundary.

The adapter under test talks to it through the official client exactly as it talks to a
cluster: kubeconfig, bearer token, REST paths, JSON bodies, and a websocket for port
forwards. It keeps objects in memory behind the real paths (create answers 409 when the name
is taken, delete honours uid preconditions, lists honour label and field selectors), records
every request so that tests can check the exact calls, and answers with injected failures
(403, 404, 409, ...) where a test asks. Controllers are not simulated: a test changes the
stored objects itself, directly or in a hook run after a matching request.

This is the only stand-in in these tests; there are no mocks of the adapter's own code.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiohttp import WSMsgType, web

TOKEN = "kube-api-token-9f8e7d"  # the credential the test kubeconfig presents
_PATH = re.compile(
    r"^(?P<prefix>/api/v1|/apis/[^/]+/[^/]+)/namespaces/(?P<namespace>[^/]+)/(?P<plural>[^/]+)"
    r"(?:/(?P<name>[^/]+)(?:/(?P<sub>[^/]+))?)?$"
)
_KINDS = {
    "pods": "Pod",
    "events": "Event",
    "services": "Service",
    "serviceaccounts": "ServiceAccount",
    "deployments": "Deployment",
    "agentruntimes": "AgentRuntime",
    "codeinterpreters": "CodeInterpreter",
    "sandboxes": "Sandbox",
    "sandboxclaims": "SandboxClaim",
}
_BODY = web.RequestKey("body", object)
GROUPS = (
    "runtime.agentcube.volcano.sh/v1alpha1",
    "agents.x-k8s.io/v1alpha1",
    "extensions.agents.x-k8s.io/v1alpha1",
)

Hook = Callable[["FakeKubernetes", "Recorded"], None]


@dataclass(frozen=True)
class Recorded:
    """One request as the server saw it."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any

    @property
    def line(self) -> str:
        """`METHOD /path?query` with the query sorted, for exact comparisons."""
        query = "&".join(f"{k}={v}" for k, v in sorted(self.query.items()))
        return f"{self.method} {self.path}" + (f"?{query}" if query else "")


@dataclass
class _Failure:
    method: str
    path: str
    status: int
    message: str
    times: int | None


@dataclass
class FakeKubernetes:
    groups: set[str] = field(default_factory=lambda: set(GROUPS))
    requests: list[Recorded] = field(default_factory=list)
    objects: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    logs: dict[tuple[str, str, str], str] = field(default_factory=dict)
    pod_backends: dict[tuple[str, str], int] = field(default_factory=dict)
    minted_tokens: list[str] = field(default_factory=list)
    url: str = ""
    _failures: list[_Failure] = field(default_factory=list)
    _hooks: list[tuple[str, str, Hook]] = field(default_factory=list)
    _uids: itertools.count = field(default_factory=lambda: itertools.count(1))
    _lock: threading.RLock = field(default_factory=threading.RLock)

    # Setting the stage.

    def put(self, collection: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Store an object under its collection path, as if a controller had made it."""
        with self._lock:
            stored = copy.deepcopy(obj)
            metadata = stored.setdefault("metadata", {})
            metadata.setdefault("uid", f"uid-{next(self._uids)}")
            metadata.setdefault("creationTimestamp", _now())
            metadata.setdefault("resourceVersion", "1")
            namespace = _PATH.match(collection)
            if namespace:
                metadata.setdefault("namespace", namespace["namespace"])
            self.objects.setdefault(collection, {})[metadata["name"]] = stored
            return stored

    def get(self, collection: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            return self.objects.get(collection, {}).get(name)

    def remove(self, collection: str, name: str) -> None:
        with self._lock:
            self.objects.get(collection, {}).pop(name, None)

    def fail(
        self, method: str, path: str, status: int, message: str = "", *, times: int | None = None
    ) -> None:
        """Answer requests of this method and exact path with an error Status."""
        self._failures.append(_Failure(method, path, status, message or f"fake {status}", times))

    def after(self, method: str, path: str, hook: Hook) -> None:
        """Run hook(fake, request) after each handled request of this method and path."""
        self._hooks.append((method, path, hook))

    def lines(self, method: str | None = None) -> list[str]:
        return [r.line for r in self.requests if method in (None, r.method)]

    # Serving.

    def start(self) -> None:
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()

        async def serve() -> None:
            app = web.Application(middlewares=[self._middleware])
            app.router.add_route("*", "/{tail:.*}", self._handle)
            self._runner = web.AppRunner(app)
            await self._runner.setup()
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            await site.start()
            port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            self.url = f"http://127.0.0.1:{port}"
            ready.set()

        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        asyncio.run_coroutine_threadsafe(serve(), self._loop)
        if not ready.wait(10):
            raise RuntimeError("the fake Kubernetes API did not start")

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode()
        recorded = Recorded(
            request.method, request.path, dict(request.query), dict(request.headers), body
        )
        with self._lock:
            self.requests.append(recorded)
        request[_BODY] = body
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return _status(401, "Unauthorized")
        failure = self._take_failure(request.method, request.path)
        if failure is not None:
            return _status(failure.status, failure.message)
        response = await handler(request)
        for method, path, hook in list(self._hooks):
            if method == request.method and path == request.path:
                hook(self, recorded)
        return response

    def _take_failure(self, method: str, path: str) -> _Failure | None:
        with self._lock:
            for failure in self._failures:
                if failure.method == method and failure.path == path:
                    if failure.times is not None:
                        failure.times -= 1
                        if failure.times == 0:
                            self._failures.remove(failure)
                    return failure
        return None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        if path.startswith("/apis/") and path.count("/") == 3:
            return self._discovery(path.removeprefix("/apis/"))
        match = _PATH.match(path)
        if match is None:
            return _status(404, "the server could not find the requested resource")
        collection = path.rsplit(f"/{match['name']}", 1)[0] if match["name"] else path
        name, sub = match["name"], match["sub"]
        if sub == "portforward":
            return await self._portforward(request, match["namespace"], name)
        with self._lock:
            return self._rest(request, collection, match, name, sub, request[_BODY])

    def _rest(
        self,
        request: web.Request,
        collection: str,
        match: re.Match[str],
        name: str | None,
        sub: str | None,
        body: Any,
    ) -> web.Response:
        method, plural = request.method, match["plural"]
        if sub == "log":
            key = (match["namespace"], name or "", request.query.get("container", ""))
            lines = self.logs.get(key, "").splitlines()[-int(request.query["tailLines"]) :]
            return web.Response(text="".join(f"{line}\n" for line in lines))
        if sub == "token" and method == "POST":
            if self.get(collection, name or "") is None:
                return _status(404, f'serviceaccounts "{name}" not found')
            token = f"minted-token-{len(self.minted_tokens) + 1}"
            self.minted_tokens.append(token)
            return web.json_response(
                {**body, "status": {"token": token, "expirationTimestamp": _now()}}, status=201
            )
        if name is None and method == "GET":
            items = [
                obj
                for obj in self.objects.get(collection, {}).values()
                if _selected(obj, request.query.get("labelSelector", ""), _labels)
                and _selected(obj, request.query.get("fieldSelector", ""), _field)
            ]
            return web.json_response(
                {
                    "kind": f"{_KINDS[plural]}List",
                    "apiVersion": _api_version(match["prefix"]),
                    "metadata": {"resourceVersion": "1"},
                    "items": items,
                }
            )
        if name is None and method == "POST":
            if self.get(collection, body["metadata"]["name"]) is not None:
                return _status(409, f'{plural} "{body["metadata"]["name"]}" already exists')
            body["metadata"].pop("uid", None)
            return web.json_response(self.put(collection, body), status=201)
        stored = self.get(collection, name or "")
        if stored is None:
            return _status(404, f'{plural} "{name}" not found')
        if method == "GET":
            return web.json_response(stored)
        if method == "DELETE":
            wanted = ((body or {}).get("preconditions") or {}).get("uid")
            if wanted and wanted != stored["metadata"]["uid"]:
                return _status(409, f"Precondition failed: UID in precondition: {wanted}")
            self.remove(collection, stored["metadata"]["name"])
            return web.json_response(stored)  # the API answers with the deleted object
        if method == "PATCH":
            _merge(stored, body)
            stored["metadata"]["generation"] = stored["metadata"].get("generation", 1) + 1
            return web.json_response(stored)
        return _status(405, f"{method} not supported by the fake")

    def _discovery(self, group_version: str) -> web.Response:
        if group_version not in self.groups:
            return _status(404, "the server could not find the requested resource")
        return web.json_response(
            {"kind": "APIResourceList", "groupVersion": group_version, "resources": []}
        )

    async def _portforward(
        self, request: web.Request, namespace: str, pod: str
    ) -> web.StreamResponse:
        """The pods/portforward subresource, v4.channel.k8s.io: data on channel 0, errors on
        channel 1, each opened by a frame carrying the port number."""
        if (namespace, pod) not in self.pod_backends:
            return _status(404, f'pods "{pod}" not found')
        socket = web.WebSocketResponse(protocols=("v4.channel.k8s.io",))
        await socket.prepare(request)
        port = int(request.query["ports"]).to_bytes(2, "little")
        await socket.send_bytes(b"\x00" + port)
        await socket.send_bytes(b"\x01" + port)
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", self.pod_backends[(namespace, pod)]
        )

        async def to_pod() -> None:
            async for message in socket:
                if message.type == WSMsgType.BINARY and message.data[:1] == b"\x00":
                    writer.write(message.data[1:])
                    await writer.drain()
            writer.close()

        async def to_client() -> None:
            while chunk := await reader.read(65536):
                await socket.send_bytes(b"\x00" + chunk)
            await socket.close()

        tasks = [asyncio.ensure_future(to_pod()), asyncio.ensure_future(to_client())]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            task.cancel()
        writer.close()
        await socket.close()
        return socket


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _api_version(prefix: str) -> str:
    return "v1" if prefix == "/api/v1" else prefix.removeprefix("/apis/")


def _status(code: int, message: str) -> web.Response:
    reasons = {401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 409: "AlreadyExists"}
    return web.json_response(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reasons.get(code, "InternalError"),
            "code": code,
        },
        status=code,
    )


def _labels(obj: dict[str, Any], key: str) -> Any:
    return (obj["metadata"].get("labels") or {}).get(key)


def _field(obj: dict[str, Any], key: str) -> Any:
    value: Any = obj
    for part in key.split("."):
        value = (value or {}).get(part)
    return value


def _selected(obj: dict[str, Any], selector: str, lookup: Callable[..., Any]) -> bool:
    """Equality-based selectors only (k=v,k2=v2), which is all the adapter sends."""
    terms = [term.split("=", 1) for term in selector.split(",") if term]
    return all(lookup(obj, key) == value for key, value in terms)


def _merge(target: dict[str, Any], patch: dict[str, Any]) -> None:
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = value
