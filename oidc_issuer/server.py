"""The issuer's HTTP side: the discovery document and the JWKS, over plain HTTP on
loopback (upstream's own unit tests serve theirs from httptest the same way,
pkg/router/oidc_test.go:39-80). It serves from a thread, so it starts in milliseconds,
in the process that holds the key; it logs no request at all."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from oidc_issuer.issuer import DISCOVERY_PATH, JWKS_PATH, Issuer


class IssuerServer:
    """An Issuer on 127.0.0.1:`port` (0: a free port), serving once started, until closed."""

    def __init__(self, port: int = 0, host: str = "127.0.0.1") -> None:
        documents: dict[str, dict[str, Any]] = {}

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                document = documents.get(self.path.split("?", 1)[0])
                body = json.dumps(document if document is not None else {"error": "not found"})
                self.send_response(200 if document is not None else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body.encode())

            def log_message(self, format: str, *args: Any) -> None:
                pass  # nothing of a request reaches a log

        self._http = ThreadingHTTPServer((host, port), Handler)
        self._http.daemon_threads = True
        self.port = self._http.server_address[1]
        self.url = f"http://{host}:{self.port}"
        self.issuer = Issuer(self.url)
        documents[DISCOVERY_PATH] = self.issuer.discovery()
        documents[JWKS_PATH] = self.issuer.jwks()
        self._thread = threading.Thread(
            target=self._http.serve_forever, name="oidc-issuer", daemon=True
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
