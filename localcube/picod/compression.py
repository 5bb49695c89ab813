"""Upstream PicoD's gzip middleware: which answers are compressed, and how they are framed.

Upstream (pkg/picod/server.go) installs gin-contrib/gzip v1.0.1 at BestSpeed with `/health`
excluded, after the body-size check and before authentication. For a client whose
Accept-Encoding contains "gzip" it sets `Content-Encoding: gzip` and `Vary: Accept-Encoding`,
drops the handler's Content-Length and compresses whatever the handler writes; net/http then
sends a Content-Length only when the whole compressed body fits its 2 KiB buffer, and
chunks it otherwise. An unknown route writes nothing, so its 404 body is an empty gzip stream.
The compressed bytes are zlib's, not Go's: the same content, which is all a client reads.
"""

import zlib

from aiohttp import web

GZIP_LEVEL = 1  # compress/gzip.BestSpeed
_EXCLUDED_PATH_PREFIXES = ("/health",)
_EXCLUDED_EXTENSIONS = frozenset({".png", ".gif", ".jpeg", ".jpg"})  # the middleware's default
# Set on a request whose answer is compressed, for handlers that stream their own body.
COMPRESSED = "picod.gzip"
GO_BUFFER_SIZE = 2048  # net/http's bufferBeforeChunkingSize
_GZIP_FRAMING = 16 + zlib.MAX_WBITS  # zlib writes the gzip header and trailer


def _go_ext(path: str) -> str:
    """Go's filepath.Ext: from the last dot of the last element, dot included."""
    name = path.rsplit("/", 1)[-1]
    dot = name.rfind(".")
    return name[dot:] if dot >= 0 else ""


def accepts_gzip(request: web.Request) -> bool:
    """gin-contrib/gzip's shouldCompress, with PicoD's excluded path."""
    headers = request.headers
    if (
        "gzip" not in headers.get("Accept-Encoding", "")
        or "Upgrade" in headers.get("Connection", "")
        or "text/event-stream" in headers.get("Accept", "")
    ):
        return False
    path = request.path
    return _go_ext(path) not in _EXCLUDED_EXTENSIONS and not path.startswith(
        _EXCLUDED_PATH_PREFIXES
    )


def mark_compressed(response: web.StreamResponse) -> None:
    """The headers of a gzipped answer, before it is prepared."""
    response.headers.popall("Content-Length", None)
    response.headers["Content-Encoding"] = "gzip"
    response.headers["Vary"] = "Accept-Encoding"


def compressed(response: web.Response) -> web.Response:
    """A handler's finished answer, gzipped; net/http chunks what outgrows its buffer."""
    body = response.body
    assert body is None or isinstance(body, bytes)
    compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, _GZIP_FRAMING)
    compressed = compressor.compress(body or b"") + compressor.flush()
    answer = web.Response(
        status=response.status, reason=response.reason, headers=response.headers, body=compressed
    )
    mark_compressed(answer)
    if len(compressed) > GO_BUFFER_SIZE:
        answer.enable_chunked_encoding()
    return answer
