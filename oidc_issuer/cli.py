"""`python -m oidc_issuer --token-dir DIR [--port N] [--realm NAME [--clients-file FILE]]`:
serve an issuer on loopback and write the run's tokens, one 0600 file each, into DIR; with
a clients file, answer the client-credentials grant for its clients too; serve until SIGINT
or SIGTERM. Its one line of output names the issuer's URL and the directory, never a token
nor a secret."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from oidc_issuer.clients import ClientsFileError, load_clients
from oidc_issuer.issuer import (
    DEFAULT_AUDIENCE,
    DEFAULT_REQUIRED_ROLE,
    DEFAULT_ROLE_CLAIM,
    TokenPolicy,
)
from oidc_issuer.server import REALM_NAME, IssuerServer
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
    parser.add_argument(
        "--realm",
        metavar="NAME",
        help="serve as Keycloak's realm NAME: the issuer URL is http://127.0.0.1:PORT/realms/NAME "
        "and the keys and token endpoint are at Keycloak's paths under it",
    )
    parser.add_argument(
        "--clients-file",
        type=Path,
        metavar="FILE",
        help="a 0600 JSON file of confidential clients (id, secret, roles, audience) and the "
        "realm's composite roles: the token endpoint grants them client credentials "
        "(needs --realm)",
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
    if arguments.realm is not None and not REALM_NAME.fullmatch(arguments.realm):
        _parser().error(f"--realm {arguments.realm!r}: only letters, digits, '.', '_' and '-'")
    if arguments.clients_file is not None and arguments.realm is None:
        _parser().error("--clients-file needs --realm (the token endpoint is a realm's)")
    clients = None
    if arguments.clients_file is not None:
        try:
            clients = load_clients(arguments.clients_file)
        except ClientsFileError as error:
            print(f"oidc_issuer: the clients file {error}", file=sys.stderr)
            return 2
    policy = TokenPolicy(arguments.audience, arguments.role_claim, arguments.required_role)
    try:
        server = IssuerServer(arguments.port, realm=arguments.realm, clients=clients)
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
