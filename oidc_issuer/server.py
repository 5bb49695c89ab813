"""The issuer's HTTP side: the discovery document and the JWKS, and with clients a realm's
token endpoint, over plain HTTP on loopback (upstream's own unit tests serve theirs from
httptest the same way, pkg/router/oidc_test.go:39-80). It serves from a thread, so it
starts in milliseconds, in the process that holds the key; it logs no request at all."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from oidc_issuer.clients import Clients
from oidc_issuer.issuer import (
    DISCOVERY_PATH,
    JWKS_PATH,
    REALM_JWKS_PATH,
    REALM_PATH,
    TOKEN_PATH,
    Issuer,
)
from oidc_issuer.token_endpoint import Reply, TokenEndpoint

# Letters, digits and `._-`: a realm name that needs no escaping in its URL.
REALM_NAME = re.compile(r"[A-Za-z0-9._-]+")
# A form body larger than this is no client-credentials request.
MAX_FORM_BYTES = 64 * 1024
# How often the serving thread looks whether it is to stop: a close waits up to this long
# (socketserver's default of 0.5 s made every run's stop wait about 0.4 s for its issuer).
SHUTDOWN_POLL = 0.02
_JSON = (("Content-Type", "application/json"),)


class IssuerServer:
    """An Issuer on `host`:`port` (0: a free port), serving once started, until closed.

    With a `realm` its URL is `http://host:port/realms/REALM` and its paths are Keycloak's
    (JWKS at `/protocol/openid-connect/certs`); with `clients` it also answers the
    client-credentials grant at `/protocol/openid-connect/token` under its URL."""

    def __init__(
        self,
        port: int = 0,
        host: str = "127.0.0.1",
        *,
        realm: str | None = None,
        clients: Clients | None = None,
    ) -> None:
        if realm is not None and not REALM_NAME.fullmatch(realm):
            raise ValueError(f"realm {realm!r}: only letters, digits, '.', '_' and '-'")
        if clients is not None and realm is None:
            raise ValueError("a token endpoint is a realm's: clients need a realm")
        self._http = _HTTPServer((host, port))
        self.port = self._http.server_address[1]
        base = f"http://{host}:{self.port}"
        self.url = base + (REALM_PATH + realm if realm is not None else "")
        self.issuer = Issuer(
            self.url,
            jwks_path=REALM_JWKS_PATH if realm is not None else JWKS_PATH,
            token_path=TOKEN_PATH if clients is not None else None,
        )
        prefix = urlsplit(self.url).path
        documents = self._http.documents
        documents[prefix + DISCOVERY_PATH] = self.issuer.discovery()
        documents[prefix + self.issuer.jwks_path] = self.issuer.jwks()
        if clients is not None and realm is not None:
            self._http.token_endpoints[prefix + TOKEN_PATH] = TokenEndpoint(
                self.issuer, clients, realm
            )
        self._thread = threading.Thread(
            target=self._http.serve_forever,
            kwargs={"poll_interval": SHUTDOWN_POLL},
            name="oidc-issuer",
            daemon=True,
        )

    def start(self) -> IssuerServer:
        """Serve from now on (the port is bound, and the URL known, from the start: tokens
        can be minted and written before anyone can read the issuer)."""
        self._thread.start()
        return self

    def close(self) -> None:
        if self._thread.is_alive():
            self._http.shutdown()
            self._thread.join(5)
        self._http.server_close()

    def __enter__(self) -> IssuerServer:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.close()


class _HTTPServer(ThreadingHTTPServer):
    """The issuer's HTTP server, holding what its handler answers by path: the documents
    (discovery, JWKS) and the token endpoint, filled in once the URL is known."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int]) -> None:
        self.documents: dict[str, dict[str, Any]] = {}
        self.token_endpoints: dict[str, TokenEndpoint] = {}
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        document = self.server.documents.get(path)
        if document is not None:
            self._send(Reply(200, json.dumps(document).encode(), _JSON))
        elif path in self.server.token_endpoints:
            self._send(Reply(405, headers=(("Allow", "POST"),)))
        else:
            self._send(Reply(404, json.dumps({"error": "not found"}).encode(), _JSON))

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        token_endpoint = self.server.token_endpoints.get(path)
        if token_endpoint is None:
            self._send(Reply(405 if path in self.server.documents else 404))
            return
        length = int(self.headers.get("Content-Length") or 0)
        if not 0 <= length <= MAX_FORM_BYTES:
            self._send(Reply(413))
            return
        self._send(
            token_endpoint.answer(
                content_type=self.headers.get("Content-Type"),
                authorization=self.headers.get("Authorization"),
                body=self.rfile.read(length),
                client_address=self.client_address[0],
            )
        )

    def _send(self, reply: Reply) -> None:
        self.send_response(reply.status)
        for name, value in reply.headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        self.wfile.write(reply.body)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # nothing of a request reaches a log
