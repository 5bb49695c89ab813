"""The daemon around the handlers: routes, middlewares, serving until signalled, the CLI."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import re
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from aiohttp import web
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey

if TYPE_CHECKING:
    from localcube.picod.kernel import Kernel
    from localcube.picod.run_code import RunCode

from localcube.picod.auth import PUBLIC_KEY_ENV, check_authorization, load_public_key
from localcube.picod.compression import COMPRESSED, accepts_gzip, compressed
from localcube.picod.gocompat import errno_text, path_error
from localcube.picod.handlers import MAX_BODY_SIZE, PicoD, json_response
from localcube.picod.workspace import Workspace

_SHUTDOWN_TIMEOUT = 2.0
_UNTYPED = "picod.untyped"  # set on a request whose answer has no Content-Type

log = logging.getLogger("localcube.picod")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def make_app(
    picod: PicoD, public_key: RSAPublicKey | None, run_code: RunCode | None = None
) -> web.Application:
    """Upstream's routes; public_key None disables authentication (--auth none); with
    `run_code`, localcube's POST /api/run_code too."""
    app = web.Application(
        client_max_size=MAX_BODY_SIZE,
        middlewares=[_log_requests, _limit_body, _gzip, _gin_not_found],
    )
    app.on_response_prepare.append(_headers_as_go_sends)

    def authenticated(handler: Handler) -> Handler:
        if public_key is None:
            return handler

        async def checked(request: web.Request) -> web.StreamResponse:
            refusal = check_authorization(request.headers.get("Authorization", ""), public_key)
            if refusal is not None:
                return json_response(401, refusal)
            return await handler(request)

        return checked

    app.router.add_get("/health", picod.health, allow_head=False)
    app.router.add_post("/api/execute", authenticated(picod.execute))
    app.router.add_post("/api/files", authenticated(picod.upload))
    app.router.add_get("/api/files", authenticated(picod.list_files), allow_head=False)
    app.router.add_get(
        r"/api/files/{path:[\s\S]*}", authenticated(picod.download), allow_head=False
    )
    if run_code is not None:
        app.router.add_post("/api/run_code", authenticated(run_code.handle))
    return app


def _too_large() -> web.Response:
    """The 413, and the connection closed (`Connection: close`), as net/http closes one
    whose unread body is too long to discard."""
    response = json_response(
        413,
        {
            "detail": f"maximum allowed size is {MAX_BODY_SIZE} bytes",
            "error": "request body too large",
        },
    )
    response.force_close()
    return response


@web.middleware
async def _log_requests(request: web.Request, handler: Handler) -> web.StreamResponse:
    """One line per request: method, path (still percent-encoded) and status; nothing else."""
    status = 500
    try:
        response = await handler(request)
        status = response.status
        return response
    except web.HTTPException as error:
        status = error.status
        raise
    finally:
        log.info("%s %s %d", request.method, request.rel_url.raw_path, status)


@web.middleware
async def _limit_body(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Upstream's maxBodySizeMiddleware: 413 for a declared Content-Length over the limit.

    A longer body without one is cut where it is read (handlers.read_body, files.read_form).
    """
    if (request.content_length or 0) > MAX_BODY_SIZE:
        return _too_large()
    return await handler(request)


@web.middleware
async def _gzip(request: web.Request, handler: Handler) -> web.StreamResponse:
    """gin-contrib/gzip where upstream has it; a streamed download compresses itself."""
    if not accepts_gzip(request):
        return await handler(request)
    request[COMPRESSED] = True
    response = await handler(request)
    if response.prepared:
        return response
    assert isinstance(response, web.Response)
    return compressed(response)


@web.middleware
async def _gin_not_found(request: web.Request, handler: Handler) -> web.StreamResponse:
    """gin answers unknown routes and wrong methods alike with a plain-text 404.

    Under gzip its text is never written: the gzip writer's output counts as the body.
    """
    try:
        return await handler(request)
    except (web.HTTPNotFound, web.HTTPMethodNotAllowed):
        if request.get(COMPRESSED):
            request[_UNTYPED] = True
            return web.Response(status=404)
        return web.Response(status=404, body=b"404 page not found", content_type="text/plain")


_EPOCH = "Thu, 01 Jan 1970 00:00:00 GMT"


async def _headers_as_go_sends(request: web.Request, response: web.StreamResponse) -> None:
    """No header Go's net/http does not send: aiohttp's `Server`, and the Content-Type
    aiohttp gives a body without one (`application/octet-stream`) where Go sends none, the
    gzipped 404, whose text gin never writes; and aiohttp's ETag and epoch Last-Modified on a
    download, where Go's ServeContent sets neither."""
    response.headers.popall("Server", None)
    response.headers.popall("ETag", None)
    if response.headers.get("Last-Modified") == _EPOCH:
        del response.headers["Last-Modified"]
    if request.get(_UNTYPED):
        response.headers.popall("Content-Type", None)


def _listen_port(flag: str | None) -> int:
    """--port as upstream's daemon takes it, else $PORT."""
    text, source = (flag, "--port") if flag is not None else (os.environ.get("PORT", ""), "PORT")
    if not text:
        raise ValueError("--port or the PORT environment variable is required")
    if not re.fullmatch("[0-9]{1,5}", text) or int(text) > 65535:
        raise ValueError(f"invalid {source} {text!r}: want a number from 0 to 65535")
    return int(text)


async def serve(
    picod: PicoD,
    public_key: RSAPublicKey | None,
    host: str,
    port: int,
    kernel_state: Path | None = None,
    on_listening: Callable[[], None] | None = None,
) -> int:
    """Serve until SIGTERM or SIGINT, then kill the commands' process groups; exit status.
    With `kernel_state`, a Jupyter kernel serves /api/run_code, and its death ends the
    daemon with status 1, as a crash of the sandbox would. `on_listening` is called once the
    port accepts connections (and the kernel, if any, runs)."""
    stop = asyncio.Event()
    died: list[str] = []

    def end_with_kernel(how: str) -> None:
        log.error("the kernel died (%s): the sandbox ends with it", how)
        died.append(how)
        stop.set()

    kernel, run_code = (
        _kernel_runner(picod, kernel_state, end_with_kernel) if kernel_state else (None, None)
    )
    runner = web.AppRunner(
        make_app(picod, public_key, run_code), access_log=None, shutdown_timeout=_SHUTDOWN_TIMEOUT
    )
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except OSError as error:
        await runner.cleanup()
        reason = errno_text(error) if error.errno else str(error)
        print(f"picod: cannot listen on {host}:{port}: {reason}", file=sys.stderr)
        return 1
    bound = runner.addresses[0][1] if runner.addresses else port
    log.info("listening on %s:%s, workspace %s", host, bound, picod.workspace.root)
    if kernel is not None:
        await kernel.start()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    if on_listening is not None:  # only now: a SIGTERM from then on stops it gracefully
        on_listening()
    await stop.wait()
    log.info("shutting down")
    if kernel is not None:
        await kernel.stop()
    picod.process_groups.kill_all()
    await runner.cleanup()
    return 1 if died else 0


def _kernel_runner(
    picod: PicoD, state: Path, on_death: Callable[[str], None]
) -> tuple[Kernel, RunCode]:
    # Imported only here: a stateless sandbox does not pay for jupyter_client's import.
    from localcube.picod.kernel import Kernel
    from localcube.picod.run_code import RunCode

    kernel = Kernel(picod.workspace.root, state, picod.process_groups, on_death)
    return kernel, RunCode(kernel)


def main(argv: list[str] | None = None, on_listening: Callable[[], None] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m localcube.picod",
        description="PicoD-compatible code-interpreter daemon (listens on $HOST, port --port).",
    )
    parser.add_argument(
        "--workspace", default=".", help="root of all file operations (created if missing)"
    )
    parser.add_argument("--port", help="port to listen on, as upstream's flag (default: $PORT)")
    parser.add_argument(
        "--auth",
        choices=("jwt", "none"),
        default="jwt",
        help=f"jwt: verify RS256 bearer tokens with ${PUBLIC_KEY_ENV} (default); none: no auth",
    )
    parser.add_argument(
        "--kernel-state",
        type=Path,
        help="serve POST /api/run_code from a Jupyter kernel (a stateful interpreter), "
        "keeping the kernel's own files in this directory, outside the workspace",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format="%(asctime)s picod: %(message)s"
    )
    try:
        port = _listen_port(args.port)
        key = load_public_key(os.environ.get(PUBLIC_KEY_ENV)) if args.auth == "jwt" else None
        workspace = Workspace(args.workspace)
    except ValueError as error:
        print(f"picod: {error}", file=sys.stderr)
        return 1
    except OSError as error:
        print(f"picod: workspace: {path_error('mkdir', args.workspace, error)}", file=sys.stderr)
        return 1
    host = os.environ.get("HOST") or "127.0.0.1"
    return asyncio.run(serve(PicoD(workspace), key, host, port, args.kernel_state, on_listening))
