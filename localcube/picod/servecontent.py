"""Go's http.ServeContent for one open regular file, as upstream's download serves it (c.File).

Go's rules decide what a `Range` of one byte range gets: 206, or 416 with Go's text for one
it cannot satisfy or parse; `If-Range` (upstream sets no ETag, so only a date can match)
decides whether the range is honoured. A `Range` of several ranges is not served: the whole
file comes, 200, as RFC 9110 section 14.2 lets a server answer (upstream's Go answers 206
multipart/byteranges; no scenario and no client asks for several, docs/fidelity.md).
aiohttp's FileResponse serves the file itself, with its Last-Modified, Accept-Ranges and
conditional requests (If-Modified-Since and the like, which Go evaluates too).
"""

import os
import re
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


def _go_int(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64), None where it fails."""
    if not _GO_INT.fullmatch(text) or abs(int(text)) > _INT64_MAX:
        return None
    return int(text)


def parse_range(header: str, size: int) -> ByteRange | None:
    """Go's parseRange of a header of one range: the range asked for, clipped to size; None
    for no header, or for several ranges (not served); RangeNotSatisfiable."""
    if not header or "," in header:
        return None
    if not header.startswith("bytes="):
        raise RangeNotSatisfiable("invalid range")
    spec = header.removeprefix("bytes=").strip(_TRIM)
    if not spec:  # Go skips an empty range; none left is no range
        return None
    first, dash, last = spec.partition("-")
    first, last = first.strip(_TRIM), last.strip(_TRIM)
    if not dash:
        raise RangeNotSatisfiable("invalid range")
    if not first:  # a suffix: the last N bytes
        count = None if last.startswith("-") else _go_int(last)
        if count is None or count < 0:
            raise RangeNotSatisfiable("invalid range")
        count = min(count, size)
        return ByteRange(size - count, count)
    start = _go_int(first)
    if start is None or start < 0:
        raise RangeNotSatisfiable("invalid range")
    if start >= size:
        raise RangeNotSatisfiable("invalid range: failed to overlap")
    end = size - 1 if not last else _go_int(last)
    if end is None or start > end:
        raise RangeNotSatisfiable("invalid range")
    return ByteRange(start, min(end, size - 1) - start + 1)


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


async def serve_content(
    request: web.Request, file: BinaryIO, headers: dict[str, str], *, compressed: bool
) -> web.StreamResponse:
    """Answer with the open file (headers as the handler set them) as Go's serveContent
    does: Go decides whether the range is honoured and words its refusals; aiohttp's FileResponse
    serves the file, one range and the conditional requests, through the open descriptor
    (so neither a path swapped meanwhile nor a precompressed `.gz` sibling is served).

    `compressed`: the answer goes through gzip, as upstream's gzip writer sends it.
    """
    info = os.fstat(file.fileno())
    size = info.st_size
    honoured = _if_range_holds(request, info.st_mtime)
    range_header = request.headers.get("Range", "") if honoured else ""
    try:
        asked = parse_range(range_header, size)
    except RangeNotSatisfiable as error:
        if size or not str(error).endswith("failed to overlap"):
            return _range_error(headers, str(error), size)
        asked = None
    # The range Go chose, in the one form aiohttp reads; If-Range is already decided.
    headers_seen = _without(request, "Range", "If-Range")
    if asked is not None:
        headers_seen["Range"] = f"bytes={asked.start}-{asked.start + asked.length - 1}"
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

    async def _not_modified(
        self, request: web.BaseRequest, etag_value: str, last_modified: float
    ) -> AbstractStreamWriter | None:
        """Go's writeNotModified: no Content-Type, no Content-Encoding and no body, where
        aiohttp 3.14 keeps the type and writes an empty gzip stream after the headers, which
        a kept-alive client reads as the start of its next answer."""
        self._compression = False
        self.headers.popall("Content-Type", None)
        return await super()._not_modified(request, etag_value, last_modified)

    @property
    def last_modified(self) -> datetime | None:
        return super().last_modified

    @last_modified.setter
    def last_modified(self, value: int | float | datetime | str | None) -> None:
        """Go's Last-Modified: the time truncated to the second (aiohttp rounds it up)."""
        setter = web.StreamResponse.__dict__["last_modified"].fset
        setter(self, int(value) if isinstance(value, float) else value)


def _without(request: web.Request, *names: str) -> dict[str, str]:
    return {k: v for k, v in request.headers.items() if k.title() not in names}
