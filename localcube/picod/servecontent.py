"""Go's http.ServeContent for one open regular file, as upstream's download serves it (c.File).

Last-Modified and Accept-Ranges on every success; a `Range` of one or more byte ranges gets
206 (several as multipart/byteranges), an unsatisfiable one 416 with Go's text, a range that
does not parse 416 too; `If-Range` (upstream sets no ETag, so only a date can match) decides
whether the range is honoured. Other conditional headers are not evaluated.
"""

import asyncio
import re
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import format_datetime
from typing import BinaryIO

from aiohttp import web

from localcube.picod.compression import GzipWriter

_CHUNK_SIZE = 256 << 10
_GO_INT = re.compile(r"[+-]?[0-9]+")
_INT64_MAX = (1 << 63) - 1
_TRIM = " \t\r\n"  # textproto.TrimString
# http.ParseTime's formats: RFC 1123 (http.TimeFormat), RFC 850, ANSI C
_HTTP_TIME_FORMATS = (
    "%a, %d %b %Y %H:%M:%S GMT",
    "%A, %d-%b-%y %H:%M:%S GMT",
    "%a %b %d %H:%M:%S %Y",
)


class RangeNotSatisfiable(ValueError):
    """A Range header Go's parseRange rejects; the message is Go's error text."""


@dataclass(frozen=True)
class ByteRange:
    start: int
    length: int

    def content_range(self, size: int) -> str:
        return f"bytes {self.start}-{self.start + self.length - 1}/{size}"


def _go_int(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64), None where it fails."""
    if not _GO_INT.fullmatch(text) or abs(int(text)) > _INT64_MAX:
        return None
    return int(text)


def parse_range(header: str, size: int) -> list[ByteRange]:
    """Go's parseRange: the ranges asked for, clipped to size; RangeNotSatisfiable."""
    if not header:
        return []
    if not header.startswith("bytes="):
        raise RangeNotSatisfiable("invalid range")
    ranges, no_overlap = [], False
    for spec in header.removeprefix("bytes=").split(","):
        spec = spec.strip(_TRIM)
        if not spec:
            continue
        first, dash, last = spec.partition("-")
        first, last = first.strip(_TRIM), last.strip(_TRIM)
        if not dash:
            raise RangeNotSatisfiable("invalid range")
        if not first:  # a suffix: the last N bytes
            count = None if last.startswith("-") else _go_int(last)
            if count is None or count < 0:
                raise RangeNotSatisfiable("invalid range")
            count = min(count, size)
            ranges.append(ByteRange(size - count, count))
            continue
        start = _go_int(first)
        if start is None or start < 0:
            raise RangeNotSatisfiable("invalid range")
        if start >= size:
            no_overlap = True
            continue
        end = size - 1 if not last else _go_int(last)
        if end is None or start > end:
            raise RangeNotSatisfiable("invalid range")
        ranges.append(ByteRange(start, min(end, size - 1) - start + 1))
    if no_overlap and not ranges:
        raise RangeNotSatisfiable("invalid range: failed to overlap")
    return ranges


def _parse_http_time(text: str) -> datetime | None:
    for pattern in _HTTP_TIME_FORMATS:
        try:
            return datetime.strptime(text, pattern).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def _if_range_holds(request: web.Request, mtime: float) -> bool:
    """checkIfRange without an ETag: only the file's modification time (to the second)."""
    value = request.headers.get("If-Range", "")
    if not value:
        return True
    when = _parse_http_time(value)
    return when is not None and int(when.timestamp()) == int(mtime)


def _range_error(headers: dict[str, str], message: str, size: int) -> web.Response:
    """serveError: the headers meant for success go, Go's http.Error text comes."""
    response = web.Response(status=416, text=message + "\n", headers=headers)
    response.headers["Content-Type"] = "text/plain; charset=utf-8"
    response.headers["X-Content-Type-Options"] = "nosniff"
    if message.endswith("failed to overlap"):
        response.headers["Content-Range"] = f"bytes */{size}"
    return response


class _Body:
    """The pieces of the answer: literal bytes and ranges of the file, in order."""

    def __init__(self) -> None:
        self.pieces: list[bytes | ByteRange] = []

    @property
    def length(self) -> int:
        return sum(len(p) if isinstance(p, bytes) else p.length for p in self.pieces)


def _multipart(ranges: list[ByteRange], content_type: str, size: int, boundary: str) -> _Body:
    """Go's multipart.Writer output for the ranges (part headers sorted by name)."""
    body = _Body()
    for index, byte_range in enumerate(ranges):
        delimiter = f"--{boundary}\r\n" if index == 0 else f"\r\n--{boundary}\r\n"
        head = (
            f"{delimiter}Content-Range: {byte_range.content_range(size)}\r\n"
            f"Content-Type: {content_type}\r\n\r\n"
        )
        body.pieces += [head.encode(), byte_range]
    body.pieces.append(f"\r\n--{boundary}--\r\n".encode())
    return body


async def serve_content(
    request: web.Request,
    file: BinaryIO,
    size: int,
    mtime: float,
    headers: dict[str, str],
    *,
    compressed: bool,
) -> web.StreamResponse:
    """Answer with the file (headers as the handler set them), as Go's serveContent does.

    `compressed`: the answer goes through upstream's gzip writer, which also drops the
    Content-Length serveContent sets.
    """
    range_header = request.headers.get("Range", "") if _if_range_holds(request, mtime) else ""
    try:
        ranges = parse_range(range_header, size)
    except RangeNotSatisfiable as error:
        if size or not str(error).endswith("failed to overlap"):
            return _range_error(headers, str(error), size)
        ranges = []
    if sum(r.length for r in ranges) > size:  # Go ignores what asks for more than the file
        ranges = []
    response = web.StreamResponse(headers=headers)
    if mtime:  # Go leaves out a zero (epoch) time
        response.headers["Last-Modified"] = format_datetime(
            datetime.fromtimestamp(int(mtime), UTC), usegmt=True
        )
    body = _Body()
    if not ranges:
        body.pieces.append(ByteRange(0, size))
    elif len(ranges) == 1:
        response.set_status(206)
        response.headers["Content-Range"] = ranges[0].content_range(size)
        body.pieces.append(ranges[0])
    else:
        response.set_status(206)
        boundary = secrets.token_hex(30)
        body = _multipart(ranges, headers["Content-Type"], size, boundary)
        response.headers["Content-Type"] = f"multipart/byteranges; boundary={boundary}"
    response.headers["Accept-Ranges"] = "bytes"
    if compressed:
        writer = GzipWriter(request, response)
        await _copy(body, file, writer.write)
        return await writer.finish()
    response.content_length = body.length
    await response.prepare(request)
    await _copy(body, file, response.write)
    await response.write_eof()
    return response


async def _copy(body: _Body, file: BinaryIO, write: Callable[[bytes], Awaitable[None]]) -> None:
    for piece in body.pieces:
        if isinstance(piece, bytes):
            await write(piece)
            continue
        await asyncio.to_thread(file.seek, piece.start)
        remaining = piece.length
        while remaining > 0:
            chunk = await asyncio.to_thread(file.read, min(_CHUNK_SIZE, remaining))
            if not chunk:
                break
            await write(chunk)
            remaining -= len(chunk)
