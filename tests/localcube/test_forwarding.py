"""What the sandbox receives: the path and headers as upstream's Router forwards them."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import jwt
import pytest

from localcube import embedded
from tests.localcube.support import agent_running

# Answers every GET with the request line's path and the headers it received.
MIRROR = (
    "import json, os\n"
    "from http.server import BaseHTTPRequestHandler, HTTPServer\n"
    "class Mirror(BaseHTTPRequestHandler):\n"
    "    def do_GET(self):\n"
    "        body = json.dumps({'path': self.path,\n"
    "                           'headers': [[k.lower(), v] for k, v in self.headers.items()]})\n"
    "        self.send_response(200)\n"
    "        self.send_header('Content-Type', 'application/json')\n"
    "        self.send_header('Content-Length', str(len(body)))\n"
    "        self.end_headers()\n"
    "        self.wfile.write(body.encode())\n"
    "HTTPServer((os.environ['HOST'], int(os.environ['PORT'])), Mirror).serve_forever()\n"
)
INVOCATIONS = "/v1/namespaces/default/agent-runtimes/mirror/invocations"


@pytest.fixture(scope="module")
def mirror_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    directory = tmp_path_factory.mktemp("mirror")
    manifest = agent_running(directory, "mirror", MIRROR)
    cube = embedded.start([manifest], directory / "localcube.log", gc_interval="1s")
    yield cube.url
    cube.stop()


def send(url: str, method: str, path: str, headers: list[tuple[str, str]] = ()):
    """One request exactly as written (no client-side path normalisation)."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        connection.putrequest(method, path, skip_accept_encoding=True)
        for name, value in headers:
            connection.putheader(name, value)
        connection.endheaders()
        answer = connection.getresponse()
        return answer.status, answer.getheader("Content-Type"), answer.read()
    finally:
        connection.close()


def received(url: str, path: str, headers: list[tuple[str, str]] = ()) -> dict:
    status, _, body = send(url, "GET", INVOCATIONS + path, headers)
    assert status == 200, body
    seen = json.loads(body)
    return {"path": seen["path"], "headers": [tuple(pair) for pair in seen["headers"]]}


def header(seen: dict, name: str) -> list[str]:
    return [value for key, value in seen["headers"] if key == name]


@pytest.mark.parametrize(
    ("sent", "forwarded"),
    [
        ("/files/a%2Fb", "/files/a/b"),
        ("/a%20b/c", "/a%20b/c"),
        ("/x/%2e%2e/y", "/x/../y"),
        ("/x/../y?q=%2F", "/x/../y?q=%2F"),
        ("/caf%C3%A9!", "/caf%C3%A9%21"),
    ],
)
def test_the_sandbox_receives_the_decoded_path(mirror_url: str, sent: str, forwarded: str) -> None:
    """Upstream: pkg/router/handlers.go:329-330"""
    assert received(mirror_url, sent)["path"] == forwarded


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"])
def test_other_methods_on_an_invocation_path_are_gins_404(mirror_url: str, method: str) -> None:
    """Upstream: pkg/router/server.go:174-180"""
    status, content_type, body = send(mirror_url, method, INVOCATIONS + "/echo")
    assert (status, content_type) == (404, "text/plain")
    assert body == (b"" if method == "HEAD" else b"404 page not found")


def test_headers_named_in_connection_are_dropped(mirror_url: str) -> None:
    """Upstream: pkg/router/handlers.go:398-399 (Go's ReverseProxy drops hop-by-hop headers)"""
    seen = received(
        mirror_url,
        "/",
        [("Connection", "keep-alive, X-Drop-Me"), ("X-Drop-Me", "1"), ("X-Keep", "2")],
    )
    assert header(seen, "x-drop-me") == []
    assert header(seen, "x-keep") == ["2"]
    assert header(seen, "keep-alive") == []


@pytest.mark.parametrize(
    ("prior", "forwarded_for"),
    [
        ([], "127.0.0.1, 127.0.0.1"),
        (["203.0.113.7"], "203.0.113.7, 203.0.113.7, 127.0.0.1"),
        (["203.0.113.7", "198.51.100.2"], "203.0.113.7, 198.51.100.2, 203.0.113.7, 127.0.0.1"),
        (["unknown"], "unknown, 127.0.0.1, 127.0.0.1"),
    ],
)
def test_x_forwarded_for_as_gin_and_gos_reverse_proxy_build_it(
    mirror_url: str, prior: list[str], forwarded_for: str
) -> None:
    """Upstream: pkg/router/handlers.go:316-337"""
    seen = received(mirror_url, "/", [("X-Forwarded-For", value) for value in prior])
    assert header(seen, "x-forwarded-for") == [forwarded_for]
    assert header(seen, "x-forwarded-proto") == ["http"]
    assert len(header(seen, "authorization")) == 1


def sandbox_token_claims(seen: dict) -> dict:
    (authorization,) = header(seen, "authorization")
    return jwt.decode(authorization.removeprefix("Bearer "), options={"verify_signature": False})


def test_the_sandbox_token_carries_upstreams_claims(mirror_url: str) -> None:
    """Upstream: pkg/router/jwt.go:81-94"""
    claims = sandbox_token_claims(received(mirror_url, "/"))
    assert set(claims) == {"iss", "iat", "exp", "session_id"}
    assert claims["iss"] == "agentcube-router"
    assert claims["exp"] - claims["iat"] == 300


def test_the_sandbox_token_names_the_authenticated_caller(tmp_path: Path, start_localcube) -> None:
    """Upstream: pkg/router/handlers.go:285-294"""
    tokens = tmp_path / "tokens"
    tokens.write_text("alice=alice-token-0123456789\n")
    manifest = agent_running(tmp_path, "mirror", MIRROR)
    url = start_localcube([manifest], extra_arguments=["--token-file", str(tokens)]).url
    seen = received(url, "/", [("Authorization", "Bearer alice-token-0123456789")])
    claims = sandbox_token_claims(seen)
    assert claims["user_sub"] == "alice"
    assert set(claims) == {"iss", "iat", "exp", "session_id", "user_sub"}
