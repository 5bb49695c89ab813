"""Every recorded answer of upstream's PicoD, replayed against localcube's (issue 20, item 10).

`picod-answers.jsonl` holds what the real PicoD at 939abb5 answered (its README says how it
was run). Each request is sent again, byte for byte, to localcube's daemon on a workspace
holding the same fixtures, its token signed as `request_jwt` says; the answer is normalised
as the README normalises the recorded one, then compared: status, every header (more than
the README asks), the body (gunzipped where the recording kept a gzip body), and for the
exchanges that wait on a timeout, how long the answer took.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import http.client
import json
import os
import re
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
import pytest
from jwt.warnings import InsecureKeyLengthWarning

from tests.localcube.picod_process import Picod, SigningKey
from tests.recordings.recorded import (
    Exchange,
    Message,
    judge,
    load,
    normalise_times,
    params,
)

FILE = "picod-answers.jsonl"
# Every header is compared, beyond the README's list (Content-Type, Content-Encoding,
# Content-Range, Accept-Ranges, Content-Disposition, Vary, Content-Length): these by
# presence only, their values being the moment's.
PRESENCE_ONLY = ("Date", "Last-Modified")
# A gzipped body is compared by its content, its length and chunking being the compressor's.
FRAMING = ("Content-Length", "Transfer-Encoding")
FIXTURE_TIME = 1_700_000_000  # 2023-11-14T22:13:20Z, the README's fixture times
MIB = bytes(range(256)) * 4096
# The lengths of the recorder's <WORKSPACE> and <OUTSIDE>: the recorded listing shows the
# symlinks' sizes, which are the lengths of their absolute targets (link-in -> <WORKSPACE>/sub
# is 34 bytes, link-out -> <OUTSIDE> 35), so the replay's paths have the same lengths.
WORKSPACE_LENGTH, OUTSIDE_LENGTH = 30, 35
DANGLING_TARGET = "/nonexistent-target-xyz"
PARENT = "/tmp"  # short enough for paths of the recorded lengths
# What the recorded session's earlier exchanges left in its one workspace, as upstream's
# answers show it: later exchanges (the listings) see it. Each replayed exchange gets a fresh
# workspace holding the fixtures and what the exchanges recorded before it had left.
LEFT_BEHIND: dict[str, tuple[str, bytes | None]] = {  # exchange -> (path, content; None: a dir)
    "exec-workdir-new": ("newdir/a", None),
    "exec-workdir-absolute": ("etc", None),
    "upload-multipart": ("up/mp.txt", b"multipart data\n"),
    "upload-json-symlink-in": ("sub/via-link.txt", b"x"),
}
# Requests whose body the recording does not hold (over 64 KiB), rebuilt from what it was;
# the rebuilt bytes must have the recorded sha256.
REBUILT_BODIES: dict[str, Callable[[], bytes]] = {
    "upload-1mib": lambda: json.dumps(
        {"path": "up/mib.bin", "content": base64.b64encode(MIB).decode()}
    ).encode(),
}
# An answer that waits on a command's timeout is compared in time too: no sooner than
# upstream's (less a little rounding), and not much later.
TIMED_FROM_S, EARLIER_S, LATER_S = 0.5, 0.25, 2.0

_BOUNDARY = re.compile(rb"[0-9a-f]{60}")
_DURATION = re.compile(rb'"duration":-?[0-9.eE+-]+')
_UPTIME = re.compile(rb'"uptime":"[^"]*"')
_DIRECTORY_ENTRY = re.compile(rb'\{[^{}]*"is_dir":true[^{}]*\}')
_SIZE = re.compile(rb'"size":\d+')


def directory_sizes_as_placeholder(body: bytes) -> bytes:
    """A listing's directory entries with `"size":"<DIR_SIZE>"`: a directory's size is its
    filesystem's (4096 on the recorder's, less on tmpfs), not PicoD's answer."""
    return _DIRECTORY_ENTRY.sub(
        lambda entry: _SIZE.sub(b'"size":"<DIR_SIZE>"', entry.group()), body
    )


@dataclass(frozen=True)
class Places:
    """The replay's workspace and the directory outside it, at paths of the recorded lengths."""

    workspace: Path
    outside: Path

    def normalise(self, data: bytes) -> bytes:
        """The README's normalisation of a body or a header value."""
        data = data.replace(str(self.workspace).encode(), b"<WORKSPACE>")
        data = data.replace(str(self.outside).encode(), b"<OUTSIDE>")
        data = normalise_times(data.decode("latin-1")).encode("latin-1")
        data = _DURATION.sub(b'"duration":"<DURATION>"', data)
        data = _UPTIME.sub(b'"uptime":"<UPTIME>"', data)
        data = directory_sizes_as_placeholder(data)
        return _BOUNDARY.sub(b"<BOUNDARY>", data)


def _places() -> Iterator[Places]:
    """Short paths under a temporary directory."""
    base = Path(tempfile.mkdtemp(prefix="picod-", dir=PARENT))
    room = WORKSPACE_LENGTH - len(str(base)) - 1
    assert room > 0, f"{base} is too long a path for a workspace of {WORKSPACE_LENGTH} characters"
    workspace = base / ("w" * room)
    outside = base / ("o" * (OUTSIDE_LENGTH - len(str(base)) - 1))
    try:
        yield Places(workspace, outside)
    finally:
        shutil.rmtree(base)


def _write(path: Path, content: bytes | None) -> None:
    if content is None:
        path.mkdir(parents=True, exist_ok=True)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)


def _lay_out(places: Places, exchange: Exchange) -> None:
    """A fresh workspace: the README's fixtures, and what earlier exchanges had left."""
    for directory in (places.workspace, places.outside):
        for entry in directory.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
    ws = places.workspace
    files = {
        "hello.txt": b"hello world\n",
        "sub/inner.txt": b"inner\n",
        "sub/deeper": None,
        "range.txt": b"0123456789abcdefghij",
        "pic.png": b"\x89PNG\r\n\x1a\n" + b"p" * 3000,
        "big.txt": b"b" * 3000,
        "empty.txt": b"",
        "mib.bin": MIB,
    }
    recorded_order = [e.id for e in load(FILE)]
    for writer, (path, content) in LEFT_BEHIND.items():
        if recorded_order.index(writer) < recorded_order.index(exchange.id):
            files[path] = content
    for path, content in files.items():
        _write(ws / path, content)
    (places.outside / "secret.txt").write_bytes(b"outside secret\n")
    for name, target in (
        ("link-out", places.outside),
        ("link-in", ws / "sub"),
        ("file-link-out", places.outside / "secret.txt"),
        ("dangling", DANGLING_TARGET),
    ):
        (ws / name).symlink_to(target)
    for directory in (ws, places.outside):  # deepest first: a directory's time last
        for path in sorted(directory.rglob("*"), key=lambda p: -len(p.parts)):
            os.utime(path, (FIXTURE_TIME, FIXTURE_TIME), follow_symlinks=False)
        os.utime(directory, (FIXTURE_TIME, FIXTURE_TIME))


def _claims(described: dict[str, Any], now: int) -> dict[str, Any]:
    """`request_jwt`'s claims, "now+300" and "now-30" as times relative to now."""
    claims = {}
    for name, value in described.items():
        offset = re.fullmatch(r"now([+-]\d+)", value) if isinstance(value, str) else None
        claims[name] = now + int(offset.group(1)) if offset else value
    return claims


def _token(described: dict[str, Any], trusted: SigningKey, untrusted: SigningKey) -> str:
    """The token `request_jwt` describes, signed as it says."""
    claims = _claims(described["claims"], int(time.time()))
    header = {k: v for k, v in described["jose_header"].items() if k != "alg"}
    algorithm, signed = described["jose_header"]["alg"], described["signed"]
    if signed.startswith("RS256 with the private key whose public half is"):
        key: Any = trusted.private
    elif signed.startswith("RS256 with another RSA key"):
        key = untrusted.private
    elif signed == "HMAC-SHA256 with the key b'secret'":
        key = b"secret"
    elif signed.startswith("unsigned (alg none"):
        key = None
    else:
        raise AssertionError(f"request_jwt: unknown way of signing {signed!r}")
    with warnings.catch_warnings():  # the recorded HMAC key is that short
        warnings.simplefilter("ignore", InsecureKeyLengthWarning)
        return jwt.encode(claims, key, algorithm=algorithm, headers=header)


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes
    elapsed_s: float


def _send(port: int, exchange: Exchange, token: str | None) -> Answer:
    """The recorded request, its headers in their order and its exact body, over one
    connection (http.client adds nothing of its own)."""
    request = exchange.request
    body = request.body or b""
    if exchange.id in REBUILT_BODIES:
        body = REBUILT_BODIES[exchange.id]()
        recorded = request.fields["body_sha256"]
        assert hashlib.sha256(body).hexdigest() == recorded, f"{exchange.id}: rebuilt body differs"
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    started = time.monotonic()
    try:
        connection.putrequest(
            request.fields["method"],
            request.fields["path"],
            skip_host=True,
            skip_accept_encoding=True,
        )
        for name, value in request.headers.items():
            if name.lower() == "host":
                value = f"127.0.0.1:{port}"
            elif token is not None:
                value = value.replace("<TEST_JWT>", token)
            connection.putheader(name, value)
        connection.endheaders(body or None)
        response = connection.getresponse()
        content = response.read()
        return Answer(
            response.status, dict(response.getheaders()), content, time.monotonic() - started
        )
    finally:
        connection.close()


def _shown(data: bytes | str | None, limit: int = 400) -> str:
    text = repr(data)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(data or '')} in all)"


def _differences(exchange: Exchange, answer: Answer, places: Places) -> list[str]:
    recorded = exchange.response
    found = []
    if answer.status != recorded.fields["status"]:
        found.append(f"status: upstream {recorded.fields['status']}, localcube {answer.status}")
    headers = {k.lower(): v for k, v in answer.headers.items()}
    names = {name.lower(): name for name in [*answer.headers, *recorded.headers]}
    for name in sorted(names.values()):
        if name.title() in FRAMING and recorded.fields.get("body_gzip"):
            continue  # how the compressor's bytes are framed (fidelity.md: the gzip rows)
        want, got = recorded.header(name), headers.get(name.lower())
        if got is not None:
            got = places.normalise(got.encode("latin-1")).decode("latin-1")
        if name.title() in PRESENCE_ONLY or (name == "Content-Length" and want == "<LENGTH>"):
            want, got = want is not None, got is not None
        if got != want:
            found.append(f"{name}: upstream {want!r}, localcube {got!r}")
    found += _body_differences(recorded, answer.body, places)
    upstream_s = exchange.line["elapsed_s"]
    if upstream_s >= TIMED_FROM_S and not (
        upstream_s - EARLIER_S <= answer.elapsed_s <= upstream_s + LATER_S
    ):
        found.append(f"answered after {answer.elapsed_s:.1f} s, upstream after {upstream_s} s")
    return found


def _recorded_content(response: Message) -> bytes:
    """The recorded body as the client reads it: gunzipped where it was gzip."""
    if response.fields.get("body_gzip"):
        return base64.b64decode(response.fields["body_gunzipped_b64"])
    return response.body or b""


def _body_differences(response: Message, body: bytes, places: Places) -> list[str]:
    recorded = response.fields
    if recorded.get("body_gzip"):
        try:
            body = gzip.decompress(body)
        except (OSError, EOFError) as error:
            return [f"body: upstream's is gzip, localcube's does not gunzip ({error})"]
    want = directory_sizes_as_placeholder(_recorded_content(response))
    got = places.normalise(body)
    if recorded.get("body_truncated"):
        digest = hashlib.sha256(got).hexdigest()
        if (len(got), digest) != (recorded["body_len"], recorded["body_sha256"]):
            return [
                f"body: upstream {recorded['body_len']} bytes (sha256 {recorded['body_sha256']}), "
                f"localcube {len(got)} bytes (sha256 {digest}), beginning {_shown(got, 200)}"
            ]
        return []
    if got != want:
        return [f"body: upstream {_shown(want)}, localcube {_shown(got)}"]
    return []


@pytest.fixture(scope="module")
def trusted() -> SigningKey:
    return SigningKey()


@pytest.fixture(scope="module")
def untrusted() -> SigningKey:
    return SigningKey()


@pytest.fixture(scope="module")
def places() -> Iterator[Places]:
    yield from _places()


@pytest.fixture(scope="module")
def picod(places: Places, trusted: SigningKey) -> Iterator[Picod]:
    places.workspace.mkdir()
    places.outside.mkdir()
    daemon = Picod(places.workspace, places.workspace.parent / "picod.log", trusted.public_pem)
    yield daemon
    assert daemon.stop() == 0
    assert not os.path.lexists(DANGLING_TARGET), f"localcube wrote {DANGLING_TARGET}"


@pytest.mark.parametrize("exchange", params(FILE))
def test_localcube_answers_as_upstreams_picod_did(
    exchange: Exchange,
    picod: Picod,
    places: Places,
    trusted: SigningKey,
    untrusted: SigningKey,
) -> None:
    _lay_out(places, exchange)
    described = exchange.line.get("request_jwt")
    token = _token(described, trusted, untrusted) if described else None
    answer = _send(picod.port, exchange, token)
    judge(FILE, exchange, _differences(exchange, answer, places))
    written = sorted(os.listdir(places.outside))
    assert written == ["secret.txt"], f"{exchange.id}: localcube wrote outside: {written}"


def test_a_listing_compares_every_size_but_a_directorys() -> None:
    """A directory's size is its filesystem's, so both bodies hold a placeholder there; a
    file's size, and a symlink's, are still compared."""
    listing = (
        b'{"files":[{"name":"deeper","size":60,"modified":"<TIME>","mode":"drwxr-xr-x",'
        b'"is_dir":true},{"name":"inner.txt","size":6,"modified":"<TIME>","mode":"-rw-r--r--",'
        b'"is_dir":false}]}'
    )
    assert directory_sizes_as_placeholder(listing) == listing.replace(
        b'"size":60', b'"size":"<DIR_SIZE>"'
    )
    assert directory_sizes_as_placeholder(listing.replace(b'"size":60', b'"size":4096')) == (
        directory_sizes_as_placeholder(listing)
    )
    assert directory_sizes_as_placeholder(listing.replace(b'"size":6,', b'"size":7,')) != (
        directory_sizes_as_placeholder(listing)
    )
