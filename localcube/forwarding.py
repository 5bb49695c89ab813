"""How upstream's Router rewrites a call for the sandbox: Gin's routing and Go's
httputil.ReverseProxy with the Director of pkg/router/handlers.go:323-344.

- The path is the decoded one Gin hands over (`%2F` arrives as `/`), written again as Go
  writes a URL path with RawPath cleared; `..` segments are kept, for the sandbox to refuse.
- Headers named in `Connection:` and the hop-by-hop headers are dropped, both ways.
- Header names are written as Go's net/http reads them, canonical (`x-agentcube-session-id`
  arrives as `X-Agentcube-Session-Id`), both ways.
- `X-Forwarded-For`: the Director sets the prior values plus Gin's client IP, then the
  reverse proxy appends the peer's address once more.
- A call that names no `Accept-Encoding` (and no `Range`; HEAD is never routed) leaves with
  `Accept-Encoding: gzip`, which Go's Transport adds; a gzip answer to it is then
  decompressed on the way back, as the Transport does (net/http/transport.go,
  `requestedGzip`), so the client gets it plain and without a Content-Length.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from urllib.parse import quote

from aiohttp import web
from multidict import CIMultiDict

INVOCATIONS = "/invocations"
# Go's hopHeaders (net/http/httputil/reverseproxy.go).
_HOP_BY_HOP = frozenset(
    name.lower()
    for name in (
        "Connection",
        "Proxy-Connection",
        "Keep-Alive",
        "Proxy-Authenticate",
        "Proxy-Authorization",
        "Te",
        "Trailer",
        "Transfer-Encoding",
        "Upgrade",
    )
)
# The bytes of an HTTP token: a header name with any other is left as it is by Go.
_TOKEN = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
# Besides letters, digits and -_.~, what Go's URL.EscapedPath leaves as it is.
_GO_PATH_SAFE = "/$&+,:;=@"


def invocation_path(request: web.Request) -> str:
    """The decoded path after `/invocations`, as Gin's `*path` parameter holds it."""
    path = request.rel_url.path
    return path[path.index(INVOCATIONS) + len(INVOCATIONS) :] or "/"


def escaped(path: str) -> str:
    """`path` percent-encoded as Go writes URL.Path (pkg/router/handlers.go:329-330)."""
    return quote(path, safe=_GO_PATH_SAFE)


def request_headers(request: web.Request, token: str) -> CIMultiDict[str]:
    """The headers the sandbox receives for `request`, signed with the Router's `token`."""
    headers = CIMultiDict(
        (go_header_name(name), value)
        for name, value in request.headers.items()
        if name.lower() != "host"
    )
    # The Director (pkg/router/handlers.go:332-340).
    headers["X-Forwarded-Host"] = request.host
    headers["X-Forwarded-Proto"] = "https" if request.secure else "http"
    prior = request.headers.getall("X-Forwarded-For", [])
    client = gin_client_ip(request)
    headers["X-Forwarded-For"] = ", ".join([*prior, client])
    headers["Authorization"] = f"Bearer {token}"
    # The reverse proxy: hop-by-hop headers go, `Te: trailers` stays, the peer is appended.
    _drop_hop_by_hop(headers)
    if any("trailers" in _tokens(value) for value in request.headers.getall("Te", [])):
        headers["Te"] = "trailers"
    peer = request.remote or ""
    prior = headers.getall("X-Forwarded-For", [])
    headers["X-Forwarded-For"] = ", ".join([*prior, peer])
    return headers


def asks_for_gzip(request: web.Request, headers: CIMultiDict[str]) -> bool:
    """Whether the call leaves asking for gzip on the client's behalf; if so, `headers`
    now say so and the answer is to be decompressed."""
    if request.headers.get("Accept-Encoding") or request.headers.get("Range"):
        return False
    headers["Accept-Encoding"] = "gzip"
    return True


def response_headers(headers: Iterable[tuple[str, str]]) -> CIMultiDict[str]:
    """The sandbox's answer headers the client receives."""
    kept = CIMultiDict((go_header_name(name), value) for name, value in headers)
    _drop_hop_by_hop(kept)
    return kept


def go_header_name(name: str) -> str:
    """Go's textproto.CanonicalMIMEHeaderKey: each letter upper case after a dash or at the
    start, lower case elsewhere; a name holding a byte that is no token's left as it is."""
    if not name or not set(name) <= _TOKEN:
        return name
    letters, upper = [], True
    for char in name:
        letters.append(char.upper() if upper else char.lower())
        upper = char == "-"
    return "".join(letters)


def gin_client_ip(request: web.Request) -> str:
    """Gin's `Context.ClientIP` with its defaults (every proxy trusted): the first address
    of `X-Forwarded-For`, else of `X-Real-IP`, when every address listed is valid; else
    the peer's address."""
    for name in ("X-Forwarded-For", "X-Real-IP"):
        items = [item.strip() for item in request.headers.get(name, "").split(",")]
        if items != [""] and all(_is_ip(item) for item in items):
            return items[0]
    return request.remote or ""


def _drop_hop_by_hop(headers: CIMultiDict[str]) -> None:
    named = {token for value in headers.getall("Connection", []) for token in _tokens(value)}
    for name in [*named, *_HOP_BY_HOP]:
        headers.popall(name, None)


def _tokens(value: str) -> list[str]:
    return [token.strip().lower() for token in value.split(",") if token.strip()]


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True
