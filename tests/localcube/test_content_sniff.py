"""The type Go's net/http server sniffs for an answer that names none (net/http sniff.go
`DetectContentType`, server.go `chunkWriter.writeHeader`), as localcube's Router gives it."""

from __future__ import annotations

import pytest
from multidict import CIMultiDict

from localcube.content_sniff import BINARY, TEXT, detect_content_type, sniffed_by_go

HTML = "text/html; charset=utf-8"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"hello, world\n", TEXT),
        (b"", TEXT),
        (b"\x00\x01binary", BINARY),
        (b"text then \x1b escape", TEXT),  # ESC is no binary byte
        (b"text then \x1c", BINARY),
        (b" \t\r\n<!DOCTYPE html><p>", HTML),
        (b"<html>", HTML),
        (b"<p class=x>", HTML),
        (b"<pre>", TEXT),  # `<P` must be followed by a space or `>`
        (b"<br", TEXT),  # and something must follow
        (b"<!-- a comment -->", HTML),
        (b"  <?xml version='1.0'?>", "text/xml; charset=utf-8"),
        (b'{"ok":true}', TEXT),  # JSON is text to Go
        (b"%PDF-1.7", "application/pdf"),
        (b"%!PS-Adobe-3.0", "application/postscript"),
        (b"\xfe\xff\x00h", "text/plain; charset=utf-16be"),
        (b"\xff\xfeh\x00", "text/plain; charset=utf-16le"),
        (b"\xef\xbb\xbfhi", TEXT),
        (b"\xef\xbb\xbf", TEXT),  # too short for the BOM signature, but no binary byte
        (b"\xfe\xff", TEXT),  # likewise
        (b"\x89PNG\r\n\x1a\n\x00\x00", "image/png"),
        (b"GIF89a\x01\x00", "image/gif"),
        (b"\xff\xd8\xff\xe0", "image/jpeg"),
        (b"RIFF\x10\x00\x00\x00WEBPVP8 ", "image/webp"),
        (b"RIFF\x10\x00\x00\x00WAVEfmt ", "audio/wave"),
        (b"\x1f\x8b\x08\x00", "application/x-gzip"),
        (b"PK\x03\x04\x14\x00", "application/zip"),
        (b"\x00asm\x01\x00", "application/wasm"),
        (b"wOF2\x00\x01", "font/woff2"),
    ],
)
def test_the_type_is_the_one_go_detects(data: bytes, expected: str) -> None:
    assert detect_content_type(data) == expected, f"{data!r}: expected {expected}"


def test_only_the_first_512_bytes_decide() -> None:
    assert detect_content_type(b"a" * 512 + b"\x00") == TEXT
    assert detect_content_type(b"a" * 511 + b"\x00") == BINARY


@pytest.mark.parametrize(
    ("status", "headers", "sniffed"),
    [
        (200, {}, True),
        (404, {"Content-Length": "3"}, True),
        (200, {"Content-Type": ""}, False),  # named, though empty
        (200, {"content-type": "application/json"}, False),
        (200, {"Content-Encoding": "gzip"}, False),
        (200, {"Content-Encoding": ""}, True),  # blank names no encoding
        (200, {"Transfer-Encoding": "chunked"}, False),
        (204, {}, False),
        (304, {}, False),
        (101, {}, False),
    ],
)
def test_go_sniffs_only_an_answer_naming_no_type_nor_encoding_that_may_have_a_body(
    status: int, headers: dict[str, str], sniffed: bool
) -> None:
    assert sniffed_by_go(status, CIMultiDict(headers)) is sniffed, (status, headers)
