"""`python -m oidc_issuer --token-dir DIR [--port N]`: serve an issuer on loopback and write
the run's tokens, one 0600 file each, into DIR; serve until SIGINT or SIGTERM. Its one
line of output names the issuer's URL and the directory, never a token."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from oidc_issuer.issuer import (
    DEFAULT_AUDIENCE,
    DEFAULT_REQUIRED_ROLE,
    DEFAULT_ROLE_CLAIM,
    TokenPolicy,
)
from oidc_issuer.server import IssuerServer
from oidc_issuer.subjects import run_tokens, write_tokens

DEFAULT_LIFETIME = 24 * 3600.0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m oidc_issuer",
        description="An OIDC issuer for test subjects on 127.0.0.1, with the run's tokens "
        "in files (never on a command line or in a log).",
    )
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free)")
    parser.add_argument(
        "--token-dir",
        type=Path,
        required=True,
        help="where to write the tokens, one 0600 file per suite setting (api_token, ...)",
    )
    parser.add_argument("--audience", default=DEFAULT_AUDIENCE, help="the Router's --jwt-audience")
    parser.add_argument(
        "--role-claim", default=DEFAULT_ROLE_CLAIM, help="the Router's --jwt-role-claim"
    )
    parser.add_argument(
        "--required-role", default=DEFAULT_REQUIRED_ROLE, help="the Router's --jwt-required-role"
    )
    parser.add_argument(
        "--token-lifetime",
        type=float,
        default=DEFAULT_LIFETIME,
        metavar="SECONDS",
        help="how long the good tokens stay valid (default: a day)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    arguments = _parser().parse_args(argv)
    if not 0 <= arguments.port <= 65535:
        _parser().error(f"--port {arguments.port} is not a port")
    if arguments.token_lifetime <= 0:
        _parser().error("--token-lifetime must be positive")
    policy = TokenPolicy(arguments.audience, arguments.role_claim, arguments.required_role)
    try:
        server = IssuerServer(arguments.port)
    except OSError as error:
        print(f"oidc_issuer: cannot listen on 127.0.0.1:{arguments.port}: {error}", file=sys.stderr)
        return 1
    stopped = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stopped.set())
    try:
        try:
            write_tokens(
                run_tokens(server.issuer, policy, arguments.token_lifetime), arguments.token_dir
            )
        except OSError as error:
            print(f"oidc_issuer: cannot write the tokens: {error}", file=sys.stderr)
            return 1
        server.start()  # its tokens are all written by the time anyone can read it
        print(f"oidc_issuer: {server.url} serving; tokens in {arguments.token_dir}", flush=True)
        stopped.wait()
    finally:
        server.close()
    return 0
