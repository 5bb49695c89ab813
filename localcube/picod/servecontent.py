"""Go's http.ServeContent for one open regular file, as upstream's download serves it (c.File).

Go's rules decide what a `Range` gets: 206 for one or more byte ranges (several as
multipart/byteranges), 416 with Go's text for one it cannot satisfy or parse; `If-Range`
(upstream sets no ETag, so only a date can match) decides whether the range is honoured.
aiohttp's FileResponse serves the file itself, with its Last-Modified, Accept-Ranges and
conditional requests (If-Modified-Since and the like, which Go evaluates too).
"""

import asyncio
import os
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import BinaryIO

from aiohttp import web
from aiohttp.abc import AbstractStreamWriter

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


def _multipart(
    file: BinaryIO, ranges: list[ByteRange], size: int, headers: dict[str, str]
) -> web.Response:
    """Go's multipart/byteranges answer (part headers sorted by name, as multipart.Writer
    writes them), which aiohttp's FileResponse does not serve."""
    boundary = secrets.token_hex(30)
    parts = []
    for index, byte_range in enumerate(ranges):
        file.seek(byte_range.start)
        delimiter = f"--{boundary}" if index == 0 else f"\r\n--{boundary}"
        head = (
            f"{delimiter}\r\nContent-Range: {byte_range.content_range(size)}\r\n"
            f"Content-Type: {headers['Content-Type']}\r\n\r\n"
        )
        parts += [head.encode(), file.read(byte_range.length)]
    parts.append(f"\r\n--{boundary}--\r\n".encode())
    response = web.Response(status=206, body=b"".join(parts), headers=headers)
    response.headers["Content-Type"] = f"multipart/byteranges; boundary={boundary}"
    response.headers["Accept-Ranges"] = "bytes"
    response.last_modified = int(os.fstat(file.fileno()).st_mtime)
    return response


async def serve_content(
    request: web.Request, file: BinaryIO, headers: dict[str, str], *, compressed: bool
) -> web.StreamResponse:
    """Answer with the open file (headers as the handler set them) as Go's serveContent
    does: Go decides which ranges it honours and words its refusals; aiohttp's FileResponse
    serves the file, one range and the conditional requests, through the open descriptor
    (so neither a path swapped meanwhile nor a precompressed `.gz` sibling is served).

    `compressed`: the answer goes through gzip, as upstream's gzip writer sends it.
    """
    info = os.fstat(file.fileno())
    size = info.st_size
    honoured = _if_range_holds(request, info.st_mtime)
    range_header = request.headers.get("Range", "") if honoured else ""
    try:
        ranges = parse_range(range_header, size)
    except RangeNotSatisfiable as error:
        if size or not str(error).endswith("failed to overlap"):
            return _range_error(headers, str(error), size)
        ranges = []
    if sum(r.length for r in ranges) > size:  # Go ignores what asks for more than the file
        ranges = []
    if len(ranges) > 1:
        return await asyncio.to_thread(_multipart, file, ranges, size, headers)
    # The range Go chose, in the one form aiohttp reads; If-Range is already decided.
    headers_seen = _without(request, "Range", "If-Range")
    if ranges:
        headers_seen["Range"] = f"bytes={ranges[0].start}-{ranges[0].start + ranges[0].length - 1}"
    served = request.clone(headers=headers_seen)
    response = _OpenFileResponse(f"/proc/self/fd/{file.fileno()}", headers=headers)
    if compressed:
        response.headers["Vary"] = "Accept-Encoding"
        response.enable_compression(web.ContentCoding.gzip)
    await response.prepare(served)
    return response


class _OpenFileResponse(web.FileResponse):
    """A FileResponse of a descriptor the handler closes once it has been served: prepared
    there, so aiohttp's own later prepare() finds it done instead of opening it again."""

    async def prepare(self, request: web.BaseRequest) -> AbstractStreamWriter | None:
        if self.prepared:
            return None
        return await super().prepare(request)

    @property
    def last_modified(self) -> datetime | None:
        return super().last_modified

    @last_modified.setter
    def last_modified(self, value: float) -> None:
        """Go's Last-Modified: the time truncated to the second (aiohttp rounds it up)."""
        web.FileResponse.last_modified.fset(self, int(value))


def _without(request: web.Request, *names: str) -> dict[str, str]:
    return {k: v for k, v in request.headers.items() if k.title() not in names}
