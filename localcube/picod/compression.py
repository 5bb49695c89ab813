"""Upstream PicoD's gzip middleware: which answers are compressed, and how they are framed.

Upstream (pkg/picod/server.go) installs gin-contrib/gzip v1.0.1 at BestSpeed with `/health`
excluded, after the body-size check and before authentication. For a client whose
Accept-Encoding contains "gzip" it sets `Content-Encoding: gzip` and `Vary: Accept-Encoding`,
drops the handler's Content-Length and compresses whatever the handler writes; net/http then
sends a Content-Length only when the whole compressed body fits its 2 KiB buffer, and
chunks it otherwise. An unknown route writes nothing, so its 404 body is an empty gzip stream.
Its gzip header is Go's, and a body of under 128 bytes is deflated as Go's BestSpeed writer
does it (goflate), so the short answers have Go's very bytes and Content-Length.
"""

import struct
import zlib

from aiohttp import web

from localcube.picod.goflate import SMALL_LIMIT, deflate_small

GZIP_LEVEL = 1  # compress/gzip.BestSpeed
_EXCLUDED_PATH_PREFIXES = ("/health",)
_EXCLUDED_EXTENSIONS = frozenset({".png", ".gif", ".jpeg", ".jpg"})  # the middleware's default
# Set on a request whose answer is compressed, for handlers that stream their own body.
COMPRESSED = "picod.gzip"
GO_BUFFER_SIZE = 2048  # net/http's bufferBeforeChunkingSize
# compress/gzip's header: no name, no time, BestSpeed's flag, "unknown" operating system
_GO_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x04\xff"


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


class GzipWriter:
    """Writes a prepared-on-demand response body through gzip, framed as net/http does.

    The response is prepared with a Content-Length if the compressed body ends within the
    first 2 KiB, chunked as soon as it grows beyond.
    """

    def __init__(self, request: web.Request, response: web.StreamResponse) -> None:
        mark_compressed(response)
        self._request = request
        self._response = response
        self._compressor = None  # zlib's, from SMALL_LIMIT bytes of input on
        self._small = bytearray()  # the input until then
        self._crc = self._size = 0
        self._pending = bytearray(_GO_GZIP_HEADER)

    async def write(self, data: bytes) -> None:
        self._crc = zlib.crc32(data, self._crc)
        self._size += len(data)
        if self._compressor is None:
            self._small += data
            if len(self._small) < SMALL_LIMIT:
                return
            self._compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS)
            data, self._small = bytes(self._small), bytearray()
        await self._send(self._compressor.compress(data))

    async def finish(self) -> web.StreamResponse:
        if self._compressor is None:
            deflated = deflate_small(bytes(self._small))
        else:
            deflated = self._compressor.flush()
        await self._send(deflated + struct.pack("<II", self._crc, self._size & 0xFFFFFFFF))
        if not self._response.prepared:
            self._response.content_length = len(self._pending)
            await self._response.prepare(self._request)
            await self._response.write(bytes(self._pending))
        await self._response.write_eof()
        return self._response

    async def _send(self, data: bytes) -> None:
        if not self._response.prepared:
            self._pending += data
            if len(self._pending) <= GO_BUFFER_SIZE:
                return
            data, self._pending = bytes(self._pending), bytearray()
            self._response.enable_chunked_encoding()
            await self._response.prepare(self._request)
        if data:
            await self._response.write(data)


async def compress_answer(request: web.Request, response: web.Response) -> web.StreamResponse:
    """A handler's finished answer, sent gzipped."""
    body = response.body
    assert body is None or isinstance(body, bytes)
    compressed = web.StreamResponse(
        status=response.status, reason=response.reason, headers=response.headers
    )
    writer = GzipWriter(request, compressed)
    await writer.write(body or b"")
    return await writer.finish()
