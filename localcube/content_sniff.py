"""The Content-Type Go's net/http server gives an answer that names none.

Upstream's Router is Go's ReverseProxy behind Go's net/http server: the proxy copies the
sandbox's headers and adds none, but the server, writing the headers out with the first part
of the body, sniffs a type for a body that has bytes and no `Content-Type`,
`Content-Encoding` or `Transfer-Encoding` header, unless its status allows no body (net/http
server.go, `chunkWriter.writeHeader`, with `DetectContentType` of sniff.go: the WHATWG MIME
sniffing signatures, on the first 512 bytes).

Implemented here: every signature Go checks but two, the MP4 box scan and the embedded
OpenType (EOT) font, whose bodies hold binary bytes and so are `application/octet-stream`
here; then, as in Go, `text/plain; charset=utf-8` for bytes with no binary byte, else
`application/octet-stream`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

SNIFF_LENGTH = 512  # Go decides on no more than this many bytes
TEXT = "text/plain; charset=utf-8"
BINARY = "application/octet-stream"
_WHITESPACE = b"\t\n\x0c\r "
# Bytes that make data binary (mimesniff: a "binary data byte").
_BINARY_BYTES = frozenset([*range(0x00, 0x09), 0x0B, *range(0x0E, 0x1B), *range(0x1C, 0x20)])
_HTML_TAGS = (
    "<!DOCTYPE HTML",
    "<HTML",
    "<HEAD",
    "<SCRIPT",
    "<IFRAME",
    "<H1",
    "<DIV",
    "<FONT",
    "<TABLE",
    "<A",
    "<STYLE",
    "<TITLE",
    "<B",
    "<BODY",
    "<BR",
    "<P",
    "<!--",
)


@dataclass(frozen=True)
class _Masked:
    """Data whose first bytes, each ANDed with `mask`, are `pattern` (after any leading
    whitespace when `skip_whitespace`)."""

    pattern: bytes
    mask: bytes
    media_type: str
    skip_whitespace: bool = False

    def matches(self, data: bytes) -> bool:
        if self.skip_whitespace:
            data = data.lstrip(_WHITESPACE)
        if len(data) < len(self.pattern):
            return False
        return all(d & m == p for d, m, p in zip(data, self.mask, self.pattern, strict=False))


def _exact(pattern: bytes, media_type: str) -> _Masked:
    return _Masked(pattern, b"\xff" * len(pattern), media_type)


def _riff(form: bytes, media_type: str) -> _Masked:
    """A RIFF container of one form: `RIFF`, a length of any value, then the form."""
    return _Masked(
        b"RIFF\0\0\0\0" + form, b"\xff" * 4 + b"\0" * 4 + b"\xff" * len(form), media_type
    )


# Go's order, after the HTML tags; the first that matches names the type.
_SIGNATURES = (
    _Masked(b"<?xml", b"\xff" * 5, "text/xml; charset=utf-8", skip_whitespace=True),
    _exact(b"%PDF-", "application/pdf"),
    _exact(b"%!PS-Adobe-", "application/postscript"),
    # Byte order marks, then one byte of any value (Go's patterns are four bytes long).
    _Masked(b"\xfe\xff\0\0", b"\xff\xff\0\0", "text/plain; charset=utf-16be"),
    _Masked(b"\xff\xfe\0\0", b"\xff\xff\0\0", "text/plain; charset=utf-16le"),
    _Masked(b"\xef\xbb\xbf\0", b"\xff\xff\xff\0", TEXT),
    _exact(b"\x00\x00\x01\x00", "image/x-icon"),
    _exact(b"\x00\x00\x02\x00", "image/x-icon"),
    _exact(b"BM", "image/bmp"),
    _exact(b"GIF87a", "image/gif"),
    _exact(b"GIF89a", "image/gif"),
    _riff(b"WEBPVP", "image/webp"),
    _exact(b"\x89PNG\r\n\x1a\n", "image/png"),
    _exact(b"\xff\xd8\xff", "image/jpeg"),
    _Masked(b"FORM\0\0\0\0AIFF", b"\xff" * 4 + b"\0" * 4 + b"\xff" * 4, "audio/aiff"),
    _exact(b"ID3", "audio/mpeg"),
    _exact(b"OggS\x00", "application/ogg"),
    _exact(b"MThd\x00\x00\x00\x06", "audio/midi"),
    _riff(b"AVI ", "video/avi"),
    _riff(b"WAVE", "audio/wave"),
    _exact(b"\x1a\x45\xdf\xa3", "video/webm"),
    _exact(b"\x00\x01\x00\x00", "font/ttf"),
    _exact(b"OTTO", "font/otf"),
    _exact(b"ttcf", "font/collection"),
    _exact(b"wOFF", "font/woff"),
    _exact(b"wOF2", "font/woff2"),
    _exact(b"\x1f\x8b\x08", "application/x-gzip"),
    _exact(b"PK\x03\x04", "application/zip"),
    _exact(b"Rar!\x1a\x07\x00", "application/x-rar-compressed"),
    _exact(b"Rar!\x1a\x07\x01\x00", "application/x-rar-compressed"),
    _exact(b"\x00\x61\x73\x6d", "application/wasm"),
)


def _is_html(data: bytes) -> bool:
    """One of Go's HTML openings, letters in any case, after leading whitespace, followed
    by a space or `>`."""
    data = data.lstrip(_WHITESPACE)
    return any(
        len(data) > len(tag)
        and data[: len(tag)].upper() == tag.encode()
        and data[len(tag)] in b" >"
        for tag in _HTML_TAGS
    )


def detect_content_type(data: bytes) -> str:
    """The type Go's http.DetectContentType names for `data`."""
    data = data[:SNIFF_LENGTH]
    if _is_html(data):
        return "text/html; charset=utf-8"
    for signature in _SIGNATURES:
        if signature.matches(data):
            return signature.media_type
    return BINARY if _BINARY_BYTES.intersection(data) else TEXT


def sniffed_by_go(status: int, headers: Mapping[str, str]) -> bool:
    """Whether Go's server sniffs a type for an answer with this status and these headers
    (`headers` case-insensitive): one naming no Content-Type (not even empty), no non-blank
    Content-Encoding and no Transfer-Encoding, with a status that allows a body."""
    body_allowed = status >= 200 and status not in (204, 304)
    return (
        body_allowed
        and "Content-Type" not in headers
        and not headers.get("Content-Encoding")
        and not headers.get("Transfer-Encoding")
    )
