"""`python -m localcube serve ...`: parse the command line, load manifests, serve."""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import logging
import sys
from pathlib import Path

from agentcube_contract.durations import parse_duration
from agentcube_contract.picod_command import PicodCommand, PicodCommandError
from localcube.app import Settings, serve
from localcube.bearer_auth import RouterOIDC, TokenTable
from localcube.manifests import ManifestError, load_paths
from localcube.oidc import OIDCConfig, OIDCError, OIDCValidator
from localcube.upstream_router.redis_records import check_url


def _duration(text: str) -> float:
    seconds = _any_duration(text)
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be positive")
    return seconds


def _duration_or_zero(text: str) -> float:
    seconds = _any_duration(text)
    if seconds < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must not be negative")
    return seconds


def _any_duration(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be a whole number of at least 1")
    return int(text)


def _picod_command(text: str) -> PicodCommand:
    try:
        return PicodCommand.parse(text)
    except PicodCommandError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def _port(text: str) -> int:
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} must be a port number from 0 to 65535")
    return int(text)


def _store_url(text: str) -> str:
    try:
        return check_url(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m localcube")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("serve", help="serve AgentCube's Router and WorkloadManager")
    run.add_argument(
        "--manifests",
        action="append",
        required=True,
        metavar="PATH",
        help="AgentRuntime / CodeInterpreter YAML file or directory (repeatable)",
    )
    run.add_argument("--host", default="127.0.0.1", help="address to bind (default loopback)")
    run.add_argument("--port", type=_port, default=8081, help="0 picks a free port")
    run.add_argument(
        "--state-dir", type=Path, help="store, keys and workspaces (default: temporary)"
    )
    run.add_argument(
        "--gc-interval",
        type=_duration,
        default=1.0,
        metavar="DURATION",
        help="pause between garbage-collection passes (default 1s; upstream: 15s)",
    )
    run.add_argument(
        "--gc-min-idle-lookback",
        type=_duration_or_zero,
        default=0.0,
        metavar="DURATION",
        help=(
            "end a session for idleness only once it has been idle this long, whatever its "
            "sessionTimeout (default 0s; upstream: 1m)"
        ),
    )
    run.add_argument("--max-concurrent-requests", type=_positive_int, default=1000, metavar="N")
    oidc = run.add_argument_group(
        "the Router's OIDC authentication, as upstream's flags (cmd/router/main.go:48-53)"
    )
    oidc.add_argument(
        "--jwt-issuer-url",
        metavar="URL",
        help="the OIDC issuer whose access tokens the Router's /v1/* requires; enables it",
    )
    oidc.add_argument(
        "--jwt-audience",
        default="agentcube-api",
        metavar="AUDIENCE",
        help="the audience a token must name (default agentcube-api; empty: any)",
    )
    oidc.add_argument(
        "--jwt-role-claim",
        default="",
        metavar="PATH",
        help="dot path of the token's roles, e.g. realm_access.roles",
    )
    oidc.add_argument(
        "--jwt-required-role",
        default="",
        metavar="ROLE",
        help="the role every caller must hold, e.g. sandbox:invoke",
    )
    run.add_argument(
        "--token",
        action="append",
        default=[],
        metavar="SUBJECT=TOKEN[ admin|no-role]",
        help=(
            "require bearer tokens on /v1/* (visible in ps: prefer --token-file); with "
            "--jwt-issuer-url on the WorkloadManager's routes only"
        ),
    )
    run.add_argument(
        "--token-file",
        action="append",
        default=[],
        type=Path,
        metavar="FILE",
        help=(
            "an extension upstream has no counterpart of: lines of SUBJECT=TOKEN, optionally "
            "followed by 'admin' (may use every session, as upstream's admin role) or "
            "'no-role' (lacks the Router's required role sandbox:invoke: its Router calls "
            "are refused 403); with --jwt-issuer-url on the WorkloadManager's routes only"
        ),
    )
    run.add_argument(
        "--pr-433-workload-manager-auth",
        action="store_true",
        help=(
            "as upstream PR #433's chart (WorkloadManager --enable-auth): the WorkloadManager's "
            "routes admit only tokens of service-account subjects "
            "(system:serviceaccount:NAMESPACE:NAME=TOKEN), any other token is refused 401 "
            "'Invalid service account format'"
        ),
    )
    run.add_argument("--sandbox-ready-timeout", type=_duration, default=120.0, metavar="DURATION")
    run.add_argument(
        "--idle-timeout",
        type=_duration,
        default=90.0,
        metavar="DURATION",
        help=(
            "how long a kept-alive connection may wait for its next call, as upstream's "
            "Router's IdleTimeout (default 90s, pkg/router/server.go:197)"
        ),
    )
    run.add_argument(
        "--read-timeout",
        type=_duration,
        default=30.0,
        metavar="DURATION",
        help=(
            "how long a call's body may take to arrive, as upstream's Router's ReadTimeout "
            "(default 30s, pkg/router/server.go:196); a WebSocket, once switched, has none"
        ),
    )
    run.add_argument(
        "--store",
        type=_store_url,
        metavar="URL",
        help=(
            "also keep upstream's session records in Redis or Valkey (redis://HOST:PORT, "
            "valkey://HOST:PORT; password from REDIS_PASSWORD): upstream's Router then "
            "serves localcube's sessions (docs/own-router.md)"
        ),
    )
    run.add_argument(
        "--router-identity",
        type=Path,
        metavar="DIR",
        help=(
            "serve upstream's Router its identity Secret (localcube's signing key) on "
            "loopback HTTPS; write its service-account files and kubernetes.env to DIR"
        ),
    )
    run.add_argument(
        "--picod-command",
        type=_picod_command,
        metavar="COMMAND",
        help=(
            "run every code-interpreter sandbox with this command instead of localcube's "
            "PicoD-compatible daemon, e.g. 'PATH/picod --port {port} --workspace {workspace}'; "
            "it gets PICOD_AUTH_PUBLIC_KEY in its environment as upstream's PicoD does"
        ),
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    arguments = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    try:
        runtimes = load_paths(arguments.manifests)
        tokens = TokenTable.parse(
            arguments.token,
            arguments.token_file,
            service_accounts_only=arguments.pr_433_workload_manager_auth,
        )
        router_oidc = _router_oidc(arguments)
        if arguments.router_identity is not None:
            arguments.router_identity.mkdir(mode=0o700, parents=True, exist_ok=True)
    except (ManifestError, ValueError, OSError) as error:
        print(f"localcube: {error}", file=sys.stderr)
        return 2
    if not ipaddress.ip_address(_resolve(arguments.host)).is_loopback:
        logging.warning("binding %s: sandboxes become reachable from the network", arguments.host)
    settings = Settings(
        runtimes=runtimes,
        host=arguments.host,
        port=arguments.port,
        state_dir=arguments.state_dir,
        gc_interval=arguments.gc_interval,
        gc_min_idle_lookback=arguments.gc_min_idle_lookback,
        max_concurrent_requests=arguments.max_concurrent_requests,
        tokens=tokens,
        router_oidc=router_oidc,
        sandbox_ready_timeout=arguments.sandbox_ready_timeout,
        read_timeout=arguments.read_timeout,
        idle_timeout=arguments.idle_timeout,
        store_url=arguments.store,
        router_identity_dir=arguments.router_identity,
        picod_command=arguments.picod_command,
    )
    return asyncio.run(serve(settings))


def _router_oidc(arguments: argparse.Namespace) -> RouterOIDC | None:
    """The Router's OIDC checks when an issuer is given, its documents read now: as
    upstream's Router, which refuses to start without them (pkg/router/server.go:101-121).
    Raises OIDCError (a ValueError)."""
    if not arguments.jwt_issuer_url:
        return None
    if not arguments.jwt_role_claim:
        raise OIDCError("--jwt-role-claim is required when --jwt-issuer-url is set")
    if not arguments.jwt_required_role:
        raise OIDCError("--jwt-required-role is required when --jwt-issuer-url is set")
    config = OIDCConfig(arguments.jwt_issuer_url, arguments.jwt_audience, arguments.jwt_role_claim)
    validator = OIDCValidator.discover(config)
    logging.info(
        "External authentication enabled: issuer=%s, audience=%s, roleClaim=%s, requiredRole=%s",
        config.issuer_url,
        config.audience,
        config.role_claim,
        arguments.jwt_required_role,
    )
    return RouterOIDC(validator, arguments.jwt_required_role)


def _resolve(host: str) -> str:
    return "127.0.0.1" if host == "localhost" else host
