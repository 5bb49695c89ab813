"""The read side of the kubelet API, on the node's address and port 10250 (the Node's
daemonEndpoints): GET /containerLogs/{namespace}/{pod}/{container}, which the API server's
pods/log asks for, answered as the kubelet's server does (kubernetes
pkg/kubelet/server/server.go at 008b365, getContainerLogs), over TLS with the caller's
client certificate required and checked against `--client-ca-file`.

Authorization: a real kubelet asks the API server (a SubjectAccessReview of nodes/proxy
for /containerLogs, pkg/kubelet/server/auth.go) whether the certificate's user may; this
one lets every caller whose certificate chains to the client CA read every log.

Exec, attach, run and port-forward (SPDY or WebSocket streams) are not served: they answer
405 "Debug endpoints are disabled.", as a kubelet without its debugging handlers does
(server.go, InstallDebuggingDisabledHandlers); any other path 404.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from aiohttp import web

from onemachine.node.container_logs import LogOptions, LogReader, OutputRecorder, parse_time
from onemachine.node.pod_logs import LogUnavailable

_LOG = logging.getLogger("onemachine.node")
KUBELET_PORT = 10250
_FOLLOW_POLL_SECONDS = 0.1  # how often a follow looks for more (the kubelet: fsnotify)
_NOT_SERVED = ("run", "exec", "attach", "portForward")
_TEXT = "text/plain"


class KubeletApiError(ValueError):
    """The kubelet API's TLS files are incomplete or unreadable."""


@dataclass(frozen=True)
class KubeletTls:
    """The kubelet's own flags: --tls-cert-file, --tls-private-key-file, --client-ca-file."""

    cert_file: Path
    key_file: Path
    client_ca_file: Path

    def context(self) -> ssl.SSLContext:
        """A server context that refuses, at the handshake, a client without a certificate
        the client CA signed (KubeletApiError if a file cannot be loaded)."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.verify_mode = ssl.CERT_REQUIRED
        try:
            context.load_cert_chain(self.cert_file, self.key_file)
            context.load_verify_locations(cafile=self.client_ca_file)
        except (OSError, ssl.SSLError) as error:
            raise KubeletApiError(f"the kubelet API's TLS files: {error}") from None
        return context


class PodLogs(Protocol):
    """A pod bound to the node, as its API reads it: pod_worker.PodWorker."""

    def container_names(self) -> list[str]: ...

    def log_of(self, container: str, previous: bool) -> OutputRecorder: ...


FindPod = Callable[[str, str], PodLogs | None]


def _flag(query: dict[str, str], name: str) -> bool:
    """A boolean query parameter as the API's parameter codec reads one: absent, `0` or
    `false` (any case) is false, any other value true (apimachinery
    Convert_Slice_string_To_bool)."""
    value = query.get(name)
    return value is not None and value != "0" and value.lower() != "false"


class LogQueryRefused(Exception):
    """A containerLogs query the kubelet refuses: its status and its words."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def log_options(query: dict[str, str], now_ns: int) -> tuple[LogOptions, bool]:
    """The request's PodLogOptions as the kubelet decodes, checks (ValidatePodLogOptions)
    and turns them into its reading options (pkg/kubelet/kuberuntime/logs/logs.go,
    NewLogOptions), and `previous`; LogQueryRefused with the kubelet's answer otherwise."""
    query = dict(query)
    if tail := query.pop("tail", ""):  # the old name, over tailLines; "all": no limit
        query["tailLines"] = tail
        if tail == "all":
            del query["tailLines"]
    try:
        numbers = {
            name: int(query[name])
            for name in ("tailLines", "limitBytes", "sinceSeconds")
            if name in query
        }
        since_time = parse_time(query["sinceTime"]) if "sinceTime" in query else None
    except ValueError:
        raise LogQueryRefused(400, '{"message": "Unable to decode query."}') from None
    invalid = (
        numbers.get("tailLines", 0) < 0
        or numbers.get("limitBytes", 1) < 1
        or numbers.get("sinceSeconds", 1) < 1
        or ("sinceSeconds" in numbers and since_time is not None)
    )
    if invalid:
        raise LogQueryRefused(422, '{"message": "Invalid request."}')
    since = None
    if "sinceSeconds" in numbers:
        since = now_ns - numbers["sinceSeconds"] * 1_000_000_000
    if since_time is not None:
        since = since_time
    options = LogOptions(
        tail=numbers.get("tailLines"),
        since=since,
        timestamps=_flag(query, "timestamps"),
        limit_bytes=numbers.get("limitBytes"),
        follow=_flag(query, "follow"),
    )
    return options, _flag(query, "previous")


def _error(status: int, text: str) -> web.Response:
    """An error as the kubelet writes one: its text alone (go-restful's WriteError writes
    it as it is; net/http's Error adds a newline)."""
    return web.Response(status=status, text=text, content_type=_TEXT)


class KubeletServer:
    """The kubelet API on `address`:`port`, served by a thread of its own."""

    def __init__(
        self, find_pod: FindPod, tls: ssl.SSLContext, address: str, port: int = KUBELET_PORT
    ) -> None:
        """`tls`: KubeletTls.context()'s."""
        self._find_pod = find_pod
        self._context = tls
        self._address = (address, port)
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, name="kubelet API")

    def start(self) -> None:
        """Listen (OSError if the address cannot be had) and serve."""
        listener = socket.create_server(self._address)
        app = web.Application()
        app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", self._container_logs)
        for path in _NOT_SERVED:
            app.router.add_route("*", f"/{path}/{{rest:.*}}", _not_served)
        app.router.add_route("*", "/{rest:.*}", _no_such_path)
        # a follow still streaming is cut at a stop, not waited for
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        self._thread.start()
        self._call(self._runner.setup())
        self._call(web.SockSite(self._runner, listener, ssl_context=self._context).start())
        _LOG.info("kubelet API on https://%s:%s", *self._address)

    def stop(self) -> None:
        if self._runner is not None:
            self._call(self._runner.cleanup())
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
        self._loop.close()

    def _call(self, work: object) -> None:
        asyncio.run_coroutine_threadsafe(work, self._loop).result(30)  # type: ignore[arg-type]

    async def _container_logs(self, request: web.Request) -> web.StreamResponse:
        namespace, name = request.match_info["namespace"], request.match_info["pod"]
        container = request.match_info["container"]
        try:
            options, previous = log_options(dict(request.query), time.time_ns())
        except LogQueryRefused as refused:
            return _error(refused.status, str(refused))
        pod = self._find_pod(namespace, name)
        if pod is None:
            return _error(404, f'pod "{name}" does not exist')
        if container not in pod.container_names():
            return _error(404, f'container "{container}" not found in pod "{name}"')
        try:
            output = pod.log_of(container, previous)
        except LogUnavailable as unavailable:
            return _error(400, str(unavailable))
        response = web.StreamResponse(headers={"Content-Type": "text/plain; charset=utf-8"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        reader = LogReader(output.path, options)
        try:
            while True:
                ended = output.done  # before the read: whatever it wrote is in the file then
                if chunk := reader.read():
                    await response.write(chunk)
                if ended or not options.follow or reader.exhausted:
                    break
                await asyncio.sleep(_FOLLOW_POLL_SECONDS)
            await response.write_eof()
        except ConnectionResetError:  # the caller left (kubectl logs -f ended): nothing to say
            pass
        return response


async def _not_served(request: web.Request) -> web.Response:
    return _error(405, "Debug endpoints are disabled.\n")


async def _no_such_path(request: web.Request) -> web.Response:
    return _error(404, "404 page not found\n")
