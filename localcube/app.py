"""Assembles localcube: one aiohttp application serving Router, WorkloadManager and admin
routes on one port, and its start-up and graceful stop."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import shutil
import signal
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from agentcube_contract.picod_command import PicodCommand
from localcube import bearer_auth
from localcube.admin import AdminRoutes, loopback_only
from localcube.collection_rules import CollectionRules
from localcube.manifests import Runtime
from localcube.router import Router, gin_no_route, no_server_header
from localcube.sandboxing.launcher import SandboxLauncher
from localcube.signing import RequestSigner
from localcube.store import Store, StoreError
from localcube.upstream_router.identity import SERVICE_ACCOUNT, serve_identity
from localcube.upstream_router.mirrored_store import MirroredStore
from localcube.upstream_router.redis_records import RedisRecords
from localcube.workload_manager import WorkloadManager
from localcube.workload_manager_http import WorkloadManagerRoutes

log = logging.getLogger("localcube")
_MAX_CONTROL_BODY = 1 << 20  # WorkloadManager and admin bodies; invocations stream


@dataclass(frozen=True)
class Settings:
    runtimes: list[Runtime]
    host: str
    port: int
    state_dir: Path | None
    gc_interval: float
    gc_min_idle_lookback: float
    max_concurrent_requests: int
    tokens: bearer_auth.TokenTable
    sandbox_ready_timeout: float
    read_timeout: float = 30.0  # the Router's ReadTimeout (pkg/router/server.go:196)
    idle_timeout: float = 90.0  # the Router's IdleTimeout (pkg/router/server.go:197)
    store_url: str | None = None  # upstream's records in Redis or Valkey besides SQLite
    router_identity_dir: Path | None = None  # serve the Router's identity Secret
    router_oidc: bearer_auth.RouterOIDC | None = None  # the Router's OIDC checks
    picod_command: PicodCommand | None = None  # each code interpreter run with it


class _CannotStart(Exception):
    """Why localcube stops before it serves (exit code 1)."""


async def serve(settings: Settings) -> int:
    """Serve until SIGTERM or SIGINT; return the process exit code.

    Each part registers its clean-up on one exit stack as it starts, so a start that fails
    and a stop release the same parts, in the reverse order of their start."""
    async with contextlib.AsyncExitStack() as parts:
        try:
            state_dir = _state_dir(settings.state_dir, parts)
            workloads, port = await _assemble(settings, state_dir, parts)
        except _CannotStart as failure:
            print(f"localcube: {failure}", file=sys.stderr)
            return 1
        await workloads.apply(settings.runtimes)
        await workloads.adopt()
        collector = asyncio.create_task(workloads.run_gc(settings.gc_interval))
        parts.callback(collector.cancel)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        print(f"localcube ready: http://{settings.host}:{port}", flush=True)
        log.info("serving %d runtimes, state in %s", len(settings.runtimes), state_dir)
        await stop.wait()
        log.info("stopping: ending every sandbox")
    return 0


def _state_dir(given: Path | None, parts: contextlib.AsyncExitStack) -> Path:
    """The given state directory, or a temporary one removed at the stop."""
    if given is None:
        state_dir = Path(tempfile.mkdtemp(prefix="localcube-"))
        parts.callback(shutil.rmtree, state_dir, ignore_errors=True)
    else:
        state_dir = given
        state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / "sandboxes").mkdir(exist_ok=True)
    return state_dir


def _open_store(store_url: str | None, database: Path) -> Store:
    """localcube's SQLite store, mirrored to upstream's records in Redis when a store URL is
    given; raises _CannotStart when that store does not answer."""
    if store_url is None:
        return Store(database)
    records = RedisRecords(store_url)
    try:
        records.ping()
    except StoreError as failure:
        records.close()
        raise _CannotStart(f"cannot reach the store: {failure}") from None
    return MirroredStore(database, records)


async def _assemble(
    settings: Settings, state_dir: Path, parts: contextlib.AsyncExitStack
) -> tuple[WorkloadManager, int]:
    """Start every part and listen; the WorkloadManager (its sandboxes ended at the stop)
    and the port.
    Raises _CannotStart when the store does not answer or the port cannot be had."""
    store = _open_store(settings.store_url, state_dir / "localcube.db")
    parts.callback(store.close)
    signer = RequestSigner(state_dir)
    tokens = settings.tokens
    if settings.router_identity_dir is not None:
        identity, router_token = await serve_identity(
            signer, state_dir, settings.router_identity_dir
        )
        parts.push_async_callback(identity.cleanup)
        if tokens.enabled:  # the Router presents its service-account token to the WM
            tokens = tokens.including(router_token, bearer_auth.Caller(SERVICE_ACCOUNT))
        log.info(
            "Router identity on https://127.0.0.1:%d, service account in %s",
            identity.addresses[0][1],
            settings.router_identity_dir,
        )
    launcher = SandboxLauncher(
        state_dir / "sandboxes",
        signer.public_key_pem,
        settings.sandbox_ready_timeout,
        settings.picod_command,
    )
    parts.push_async_callback(launcher.close)  # its PicoD template and threads
    await launcher.open()
    workloads = WorkloadManager(store, launcher, CollectionRules(settings.gc_min_idle_lookback))
    router = Router(workloads, signer, settings.max_concurrent_requests, settings.read_timeout)
    parts.push_async_callback(router.close)
    app = web.Application(
        middlewares=[
            loopback_only,
            gin_no_route,
            bearer_auth.middleware(tokens, settings.router_oidc),
        ],
        client_max_size=_MAX_CONTROL_BODY,
    )
    app.on_response_prepare.append(no_server_header)
    app.add_routes(
        router.routes()
        + WorkloadManagerRoutes(workloads, signer).routes()
        + AdminRoutes(workloads, settings.read_timeout).routes()
    )
    # A client that goes away cancels its handler, so a forwarded call ends with it and
    # frees its concurrency slot (upstream cancels the proxied request with its context).
    # A kept-alive connection waits for its next call as long as upstream's IdleTimeout.
    runner = web.AppRunner(
        app,
        handle_signals=False,
        handler_cancellation=True,
        keepalive_timeout=settings.idle_timeout,
    )
    await runner.setup()
    parts.push_async_callback(runner.cleanup)
    try:
        await web.TCPSite(runner, settings.host, settings.port).start()
    except OSError as failure:
        reason = "address already in use" if failure.errno == errno.EADDRINUSE else failure.strerror
        raise _CannotStart(f"cannot listen on {settings.host}:{settings.port}: {reason}") from None
    # Listening: the sandboxes are this localcube's own, ended at the stop (before the
    # parts above), and not when another localcube holds the port and its state.
    parts.push_async_callback(workloads.shutdown)
    return workloads, runner.addresses[0][1]
