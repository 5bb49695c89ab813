"""The PicoD-compatible daemon, driven over HTTP as a real process (upstream pkg/picod)."""

from __future__ import annotations

import base64
import gzip
import http.client
import json
import os
import re
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from email.utils import formatdate
from pathlib import Path

import jwt
import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from localcube.picod.workspace import Workspace, WorkspaceEscape
from tests.localcube.picod_process import (
    PICOD,
    ROOT,
    Picod,
    SigningKey,
    free_port,
    is_dead,
    picod_env,
    session_members,
)
from tests.waiting import wait_until

MAX_BODY = 32 << 20
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$")


def jail(path: str) -> dict:
    """localcube's refusal of a new path behind a symlink, where upstream has none."""
    return {"code": 400, "error": f"access denied: path '{path}' escapes workspace jail"}


def traversal(path: str, relative: str) -> str:
    return (
        f"access denied: path '{path}' escapes workspace jail (relative path traversal: {relative})"
    )


def via_symlink(resolved: Path, path: str) -> str:
    return (
        f"access denied: resolved path '{resolved}' (from '{path}') escapes workspace jail "
        "via symlink"
    )


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def b64url(data: bytes) -> str:
    """A JWT segment: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def wait_for(condition, timeout: float = 30.0) -> None:
    wait_until(condition, "the condition", timeout=timeout)


def snapshot(directory: Path) -> set[str]:
    return {str(p.relative_to(directory)) for p in directory.rglob("*")}


class Sandbox:
    """A running daemon, its workspace, a directory outside it, and an authorised client."""

    def __init__(self, root: Path, key: SigningKey) -> None:
        self.workspace = root / "workspace"
        self.outside = root / "outside"
        self.outside.mkdir()
        (self.outside / "secret.txt").write_text("outside secret")
        self.key = key
        self.daemon = Picod(
            self.workspace, root / "picod.log", key.public_pem, PICOD_TEST_MARKER="inherited"
        )
        self.url = self.daemon.url
        self.http = requests.Session()
        self.http.headers["Authorization"] = f"Bearer {key.token()}"

    def execute(self, command: list[str], **fields) -> requests.Response:
        return self.http.post(f"{self.url}/api/execute", json={"command": command, **fields})

    def run(self, *command: str) -> dict:
        answer = self.execute(list(command))
        assert answer.status_code == 200, answer.text
        assert answer.json()["exit_code"] == 0, answer.json()
        return answer.json()

    def upload(self, path: str, data: bytes, **fields) -> requests.Response:
        body = {"path": path, "content": b64(data), **fields}
        return self.http.post(f"{self.url}/api/files", json=body)

    def listing(self, path: str) -> requests.Response:
        return self.http.get(f"{self.url}/api/files", params={"path": path})

    def download(self, path: str, **kwargs) -> requests.Response:
        return self.http.get(f"{self.url}/api/files/{path}", **kwargs)

    def raw(self, path: str, method: str = "GET", **kwargs) -> tuple[requests.Response, bytes]:
        """The answer and its body as sent, still compressed."""
        with self.http.request(method, f"{self.url}{path}", stream=True, **kwargs) as answer:
            return answer, answer.raw.read(decode_content=False)


@pytest.fixture(scope="module")
def key() -> SigningKey:
    return SigningKey()


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory, key: SigningKey) -> Iterator[Sandbox]:
    box = Sandbox(tmp_path_factory.mktemp("picod"), key)
    yield box
    box.http.close()
    assert box.daemon.stop() == 0
    assert snapshot(box.outside) == {"secret.txt"}, "something was written outside"


# --- health and authentication -----------------------------------------------------------


def test_health_needs_no_token(sandbox: Sandbox) -> None:
    answer = requests.get(f"{sandbox.url}/health")
    assert answer.status_code == 200
    body = answer.json()
    assert {k: body[k] for k in ("status", "service", "version")} == {
        "status": "ok",
        "service": "PicoD",
        "version": "0.0.1",
    }
    assert re.fullmatch(r"(\d+h)?(\d+m)?\d+(\.\d+)?(s|ms|µs|ns)", body["uptime"]), body


PLAIN = {"Accept-Encoding": "identity"}
GZIP = {"Accept-Encoding": "gzip"}


def test_unknown_route_is_gin_404(sandbox: Sandbox) -> None:
    """gin's 404 for an unknown route or method: its text, `Content-Type: text/plain`.

    Upstream: pkg/picod/server.go:77-102
    """
    for answer in (
        requests.get(f"{sandbox.url}/nope", headers=PLAIN),
        requests.post(f"{sandbox.url}/health", headers=PLAIN),
        requests.head(f"{sandbox.url}/api/files/x", headers=PLAIN),
    ):
        assert answer.status_code == 404
        assert answer.text == ("" if answer.request.method == "HEAD" else "404 page not found")
        assert (answer.headers["Content-Type"], answer.headers["Content-Length"]) == (
            "text/plain",
            "18",
        )


def test_answers_carry_no_server_header(sandbox: Sandbox) -> None:
    """Go's net/http names no server; aiohttp would (`Server: Python/... aiohttp/...`).

    Upstream: pkg/picod/server.go:77-102
    """
    for answer in (
        requests.get(f"{sandbox.url}/health"),
        requests.get(f"{sandbox.url}/nope"),
        sandbox.execute(["true"]),
        sandbox.download("no-such-file"),
    ):
        assert "Server" not in answer.headers, answer.headers


@pytest.mark.parametrize(
    ("header", "error", "detail"),
    [
        (None, "Missing Authorization header", "Request requires JWT authentication"),
        ("Token abc", "Invalid Authorization header format", "Use Bearer <token>"),
        ("bearer abc", "Invalid Authorization header format", "Use Bearer <token>"),
        ("Bearer a b", "Invalid Authorization header format", "Use Bearer <token>"),
    ],
)
def test_authorization_header_is_required(
    sandbox: Sandbox, header: str | None, error: str, detail: str
) -> None:
    headers = {"Authorization": header} if header else {}
    answer = requests.post(
        f"{sandbox.url}/api/execute", json={"command": ["true"]}, headers=headers
    )
    assert answer.status_code == 401
    assert answer.json() == {"code": 401, "detail": detail, "error": error}


def _other_key_token() -> str:
    return SigningKey().token()


@pytest.mark.parametrize(
    ("make_token", "reason"),
    [
        (_other_key_token, "token signature is invalid: crypto/rsa: verification error"),
        (lambda key: key.token(lifetime=-120), "token has invalid claims: token is expired"),
        (
            lambda key: key.token(omit=("exp",)),
            "token has invalid claims: token is missing required claim: exp claim is required",
        ),
        (
            lambda key: key.token(iat=int(time.time()) + 600),
            "token has invalid claims: token used before issued",
        ),
        (
            lambda key: jwt.encode({"exp": int(time.time()) + 60}, "s" * 32, algorithm="HS256"),
            "token is unverifiable: error while executing keyfunc: "
            "unexpected signing method: HS256",
        ),
        (
            lambda key: "not-a-jwt",
            "token is malformed: token contains an invalid number of segments",
        ),
        (
            lambda key: "abc.def.ghi",
            "token is malformed: could not JSON decode header: "
            "invalid character 'i' looking for beginning of value",
        ),
        (
            lambda key: "ab=c.def.ghi",
            "token is malformed: could not base64 decode header: "
            "illegal base64 data at input byte 2",
        ),
        (
            lambda key: f"{b64url(b'{}')}xx.e30.sig",
            "token is malformed: could not base64 decode header: "
            "illegal base64 data at input byte 4",
        ),
        (
            lambda key: f"{b64url(b'{} x')}.e30.sig",
            "token is malformed: could not JSON decode header: "
            "invalid character 'x' after top-level value",
        ),
        (
            lambda key: f"{b64url(b'[1]')}.e30.sig",
            "token is malformed: could not JSON decode header: "
            "json: cannot unmarshal array into Go value of type map[string]interface {}",
        ),
        (
            lambda key: key.token().split(".")[0] + f".{b64url(b'{')}.sig",
            "token is malformed: could not JSON decode claim: unexpected end of JSON input",
        ),
        (
            lambda key: b64url(b'{"alg":"HS256"}') + "." + b64url(b'"s"') + ".sig",
            "token is malformed: could not JSON decode claim: "
            "json: cannot unmarshal string into Go value of type jwt.MapClaims",
        ),
    ],
    ids=[
        "wrong-key",
        "expired",
        "no-exp",
        "future-iat",
        "hs256",
        "one-segment",
        "garbage",
        "padded-header",
        "header-of-one-char-too-many",
        "header-after-its-value",
        "header-not-an-object",
        "claims-cut-short",
        "claims-malformed-before-the-algorithm",
    ],
)
def test_bad_tokens_are_refused(sandbox: Sandbox, key: SigningKey, make_token, reason) -> None:
    """golang-jwt's texts, a malformed header or claims reported before anything else.

    Upstream: pkg/picod/auth.go:109-129
    """
    token = make_token() if make_token is _other_key_token else make_token(key)
    answer = requests.post(
        f"{sandbox.url}/api/execute",
        json={"command": ["true"]},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert answer.status_code == 401
    assert answer.json() == {
        "code": 401,
        "detail": f"JWT verification failed: {reason}",
        "error": "Invalid token",
    }


@pytest.mark.parametrize(
    "make_token",
    [
        lambda key: key.token(lifetime=-30),  # expired, but within the minute of leeway
        lambda key: key.token(omit=("iat",)),  # golang-jwt checks iat only when present
        lambda key: jwt.encode({"exp": int(time.time()) + 60}, key.private, algorithm="RS512"),
    ],
    ids=["leeway", "no-iat", "rs512"],
)
def test_good_tokens_are_accepted(sandbox: Sandbox, key: SigningKey, make_token) -> None:
    answer = requests.post(
        f"{sandbox.url}/api/execute",
        json={"command": ["true"]},
        headers={"Authorization": f"Bearer {make_token(key)}"},
    )
    assert answer.status_code == 200, answer.text


# --- /api/execute --------------------------------------------------------------------------


def test_execute_reports_output_exit_code_and_times(sandbox: Sandbox) -> None:
    answer = sandbox.execute(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert answer.status_code == 200
    body = answer.json()
    assert list(body) == ["stdout", "stderr", "exit_code", "duration", "start_time", "end_time"]
    assert (body["stdout"], body["stderr"], body["exit_code"]) == ("out\n", "err\n", 3)
    assert RFC3339.match(body["start_time"]) and RFC3339.match(body["end_time"]), body
    start = datetime.fromisoformat(body["start_time"][:26].rstrip("Z") + "+00:00")
    end = datetime.fromisoformat(body["end_time"][:26].rstrip("Z") + "+00:00")
    assert start <= end
    # the command's own time, within the span its start and end times give (monotonic clock)
    assert 0 <= body["duration"] <= (end - start).total_seconds() + 0.01, body


def test_invalid_utf8_output_is_escaped_as_go_escapes_it(sandbox: Sandbox) -> None:
    """Output is a Go string of the bytes: encoding/json writes each invalid UTF-8 byte as
    the escape `\\ufffd`, a valid U+FFFD as itself.

    Upstream: pkg/picod/execute.go:153-160
    """
    answer = sandbox.execute(["printf", "\\377\\376ok \\357\\277\\275 \\342\\202"])
    assert answer.status_code == 200
    assert b'"stdout":"\\ufffd\\ufffdok \xef\xbf\xbd \\ufffd\\ufffd"' in answer.content


def test_a_file_name_that_is_not_utf8_is_listed_as_go_lists_it(sandbox: Sandbox) -> None:
    """A name is a Go string of the directory entry's bytes: each invalid byte is `\\ufffd`.

    Upstream: pkg/picod/files.go:351-369
    """
    sandbox.run("sh", "-c", "mkdir -p odd-names && touch \"odd-names/a$(printf '\\377')b\"")
    answer = sandbox.listing("odd-names")
    assert answer.status_code == 200
    assert b'"name":"a\\ufffdb"' in answer.content, answer.content


def test_json_answers_beyond_two_kib_are_chunked(sandbox: Sandbox) -> None:
    """net/http sends a Content-Length only for a body that fits its 2 KiB buffer.

    Upstream: pkg/picod/execute.go:153-160
    """
    for size, sized in ((100, True), (3000, False)):
        answer, raw = sandbox.raw(
            "/api/execute",
            "POST",
            headers=PLAIN,
            json={"command": ["head", "-c", str(size), "/dev/zero"]},
        )
        assert json.loads(raw)["stdout"] == "\x00" * size
        assert ("Content-Length" in answer.headers) == sized, answer.headers
        assert (answer.headers.get("Transfer-Encoding") == "chunked") != sized, answer.headers


def test_execute_environment_and_working_dir(sandbox: Sandbox) -> None:
    script = 'pwd; echo "$PICOD_TEST_MARKER $GREETING"'
    answer = sandbox.execute(
        ["sh", "-c", script], env={"GREETING": "hello"}, working_dir="exec/deep/dir"
    )
    body = answer.json()
    assert body["exit_code"] == 0, body
    assert body["stdout"] == f"{sandbox.workspace / 'exec/deep/dir'}\ninherited hello\n"
    # Absolute working directories are taken relative to the workspace.
    body = sandbox.execute(["pwd"], working_dir="/exec/abs").json()
    assert body["stdout"] == f"{sandbox.workspace / 'exec/abs'}\n"
    assert sandbox.run("pwd")["stdout"] == f"{sandbox.workspace}\n"


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"{not json", "invalid character 'n' looking for beginning of object key string"),
        (b"", "EOF"),
        (
            b'{"timeout": "1s"}',
            "Key: 'ExecuteRequest.Command' Error:Field validation for 'Command' failed on the "
            "'required' tag",
        ),
        (
            b'{"command": "ls"}',
            "json: cannot unmarshal string into Go struct field ExecuteRequest.command of type "
            "[]string",
        ),
        (b'{"command": []}', "command cannot be empty"),
        (
            b'{"command": ["true"], "timeout": "x"}',
            'Invalid timeout format: time: invalid duration "x"',
        ),
    ],
    ids=["syntax", "empty-body", "no-command", "command-type", "empty-command", "timeout"],
)
def test_execute_bad_requests(sandbox: Sandbox, body: bytes, error: str) -> None:
    answer = sandbox.http.post(f"{sandbox.url}/api/execute", data=body)
    assert answer.status_code == 400
    assert answer.json() == {"code": 400, "error": error}


def test_execute_missing_executable_is_exit_code_1(sandbox: Sandbox) -> None:
    body = sandbox.execute(["no-such-command-picod"]).json()
    assert body["exit_code"] == 1
    assert body["stderr"] == 'exec: "no-such-command-picod": executable file not found in $PATH'
    body = sandbox.execute(["./no-such-script"]).json()
    assert body["exit_code"] == 1
    assert body["stderr"] == "fork/exec ./no-such-script: no such file or directory"


def test_execute_killed_by_signal_is_minus_one(sandbox: Sandbox) -> None:
    assert sandbox.execute(["sh", "-c", "kill -9 $$"]).json()["exit_code"] == -1


def test_execute_timeout_kills_the_whole_group(sandbox: Sandbox) -> None:
    script = "echo started; sleep 30 & echo $! > timeout-bg.pid; sleep 30"
    body = sandbox.execute(["sh", "-c", script], timeout="1s").json()
    assert body["exit_code"] == 124
    assert body["stdout"] == "started\n"
    assert body["stderr"] == "Command timed out after 1 seconds"
    assert 1 <= body["duration"] < 30  # ended at the timeout, not when the sleep would
    background = int((sandbox.workspace / "timeout-bg.pid").read_text())
    wait_for(lambda: is_dead(background))


def test_execute_timeout_does_not_wait_for_a_child_holding_the_output(sandbox: Sandbox) -> None:
    """Upstream kills only the shell; its `sleep` keeps stdout open and the answer waits for
    it (4 s in the recording).

    localcube ends the whole process group at the timeout and answers at once (a defect row);
    the bound (before the sleep would end) is part of the contract.
    Upstream: pkg/picod/execute.go:87-93, pkg/picod/execute.go:127-139
    """
    started = time.monotonic()
    answer = sandbox.execute(["sh", "-c", "sleep 30; echo x"], timeout="1s")
    elapsed = time.monotonic() - started
    body = answer.json()
    assert (answer.status_code, body["exit_code"], body["stdout"]) == (200, 124, "")
    assert body["stderr"] == "Command timed out after 1 seconds"
    assert 1 <= elapsed < 30, elapsed
    daemon = sandbox.daemon.process.pid
    wait_for(lambda: session_members(daemon) == [daemon])


def test_execute_zero_timeout_never_starts(sandbox: Sandbox) -> None:
    body = sandbox.execute(["touch", "zero-timeout"], timeout="0s").json()
    assert (body["exit_code"], body["stderr"]) == (124, "Command timed out after 0 seconds")
    assert not (sandbox.workspace / "zero-timeout").exists()


# --- /api/files uploads --------------------------------------------------------------------


def test_upload_json(sandbox: Sandbox) -> None:
    answer = sandbox.upload("up/nested/a.txt", b"hello", mode="0640")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert list(body) == ["path", "size", "mode", "modified"]
    assert body["path"] == "up/nested/a.txt"
    assert (body["size"], body["mode"]) == (5, "-rw-r-----")
    assert RFC3339.match(body["modified"])
    written = sandbox.workspace / "up/nested/a.txt"
    assert written.read_bytes() == b"hello"
    assert written.stat().st_mode & 0o777 == 0o640


@pytest.mark.parametrize("mode", [None, "", "999", "1777", "rw", "+644"])
def test_upload_mode_defaults_to_0644(sandbox: Sandbox, mode: str | None) -> None:
    fields = {} if mode is None else {"mode": mode}
    answer = sandbox.upload(f"modes/{mode}.txt", b"x", **fields)
    assert answer.json()["mode"] == "-rw-r--r--"


def test_upload_absolute_path_lands_in_workspace(sandbox: Sandbox) -> None:
    answer = sandbox.upload("/abs/b.txt", b"abs")
    assert answer.json()["path"] == "abs/b.txt"
    assert (sandbox.workspace / "abs/b.txt").read_bytes() == b"abs"


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (
            {"content": "aGk="},
            "Key: 'UploadFileRequest.Path' Error:Field validation for 'Path' failed on the "
            "'required' tag",
        ),
        (
            {"path": "bad.txt", "content": "abc$"},
            "Invalid base64 content: illegal base64 data at input byte 3",
        ),
        (
            {"path": "bad.txt", "content": "aGk"},
            "Invalid base64 content: illegal base64 data at input byte 0",
        ),
        ({"path": "../escape.txt", "content": "aGk="}, traversal("../escape.txt", "../escape.txt")),
        (
            {"path": "a/../../escape.txt", "content": "aGk="},
            traversal("a/../../escape.txt", "../escape.txt"),
        ),
    ],
    ids=["no-path", "bad-char", "no-padding", "dotdot", "nested-dotdot"],
)
def test_upload_json_errors(sandbox: Sandbox, body: dict, error: str) -> None:
    answer = sandbox.http.post(f"{sandbox.url}/api/files", json=body)
    assert answer.status_code == 400
    assert answer.json() == {"code": 400, "error": error}
    assert not (sandbox.workspace / "bad.txt").exists()


def test_upload_multipart(sandbox: Sandbox) -> None:
    data = bytes(range(256)) * 10
    answer = sandbox.http.post(
        f"{sandbox.url}/api/files",
        files={"file": ("ignored-name.bin", data)},
        data={"path": "multi/part.bin", "mode": "0600"},
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["path"] == "multi/part.bin"
    assert (answer.json()["size"], answer.json()["mode"]) == (len(data), "-rw-------")
    assert (sandbox.workspace / "multi/part.bin").read_bytes() == data


@pytest.mark.parametrize(
    ("files", "data", "error"),
    [
        ({"file": ("f", b"x")}, {}, "Missing 'path' field"),
        (None, {"path": "multi/none.bin"}, "Failed to get file: http: no such file"),
        (
            {"file": ("f", b"x")},
            {"path": "../multi.bin"},
            traversal("../multi.bin", "../multi.bin"),
        ),
    ],
    ids=["no-path", "no-file", "escape"],
)
def test_upload_multipart_errors(sandbox: Sandbox, files, data, error) -> None:
    # requests sends a urlencoded body without files: force multipart with a dummy field.
    files = files or {"other": (None, "x")}
    answer = sandbox.http.post(f"{sandbox.url}/api/files", files=files, data=data)
    assert answer.status_code == 400
    assert answer.json() == {"code": 400, "error": error}


# --- /api/files listing and download -------------------------------------------------------


def test_list_directory(sandbox: Sandbox) -> None:
    sandbox.upload("listing/b.txt", b"bb")
    sandbox.upload("listing/a.txt", b"a", mode="0755")
    sandbox.run("mkdir", "listing/sub")
    answer = sandbox.listing("listing")
    assert answer.status_code == 200
    files = answer.json()["files"]
    assert [(f["name"], f["size"], f["mode"], f["is_dir"]) for f in files] == [
        ("a.txt", 1, "-rwxr-xr-x", False),
        ("b.txt", 2, "-rw-r--r--", False),
        ("sub", (sandbox.workspace / "listing/sub").stat().st_size, "drwxr-xr-x", True),
    ]
    assert list(files[0]) == ["name", "size", "modified", "mode", "is_dir"]
    assert all(RFC3339.match(f["modified"]) for f in files)


def test_list_errors(sandbox: Sandbox) -> None:
    answer = sandbox.http.get(f"{sandbox.url}/api/files")
    assert (answer.status_code, answer.json()) == (
        400,
        {"code": 400, "error": "Missing 'path' query parameter"},
    )
    answer = sandbox.listing("no/such/dir")
    assert (answer.status_code, answer.json()) == (
        404,
        {"code": 404, "error": "Directory not found"},
    )
    answer = sandbox.listing("..")
    assert (answer.status_code, answer.json()) == (
        400,
        {"code": 400, "error": traversal("..", "..")},
    )


def test_listing_a_file_says_open_not_a_directory(sandbox: Sandbox) -> None:
    """os.ReadDir opens its argument as a directory: a file fails at open.

    Upstream: pkg/picod/files.go:335-347
    """
    sandbox.upload("listing-file.txt", b"x")
    answer = sandbox.listing("listing-file.txt")
    reason = f"open {sandbox.workspace / 'listing-file.txt'}: not a directory"
    assert (answer.status_code, answer.json()) == (
        500,
        {"code": 500, "error": f"Failed to read directory: {reason}"},
    )


def test_download(sandbox: Sandbox) -> None:
    data = bytes(range(256)) * 1000
    sandbox.upload("down/blob.xyzzy", data)
    sandbox.upload("down/doc.json", b'{"a": 1}')
    answer = sandbox.download("down/blob.xyzzy")
    assert answer.status_code == 200
    assert answer.content == data
    assert answer.headers["Content-Disposition"] == 'attachment; filename="blob.xyzzy"'
    assert answer.headers["Content-Type"] == "application/octet-stream"
    answer = sandbox.download("down/doc.json")
    assert (answer.content, answer.headers["Content-Type"]) == (b'{"a": 1}', "application/json")


def test_a_download_has_gos_headers_and_conditions(sandbox: Sandbox) -> None:
    """No ETag (upstream sets none); Last-Modified truncated to the second, and none for an
    epoch time; If-None-Match "*" and a later If-Modified-Since are 304, as in Go's
    checkPreconditions.

    Upstream: pkg/picod/files.go:297 (c.File: http.ServeContent)
    """
    sandbox.upload("cond/file.txt", b"content")
    answer = sandbox.download("cond/file.txt")
    assert "ETag" not in answer.headers, answer.headers
    mtime = int((sandbox.workspace / "cond/file.txt").stat().st_mtime)
    assert answer.headers["Last-Modified"] == formatdate(mtime, usegmt=True)
    later = formatdate(mtime + 5, usegmt=True)
    for condition in ({"If-None-Match": "*"}, {"If-Modified-Since": later}):
        assert sandbox.download("cond/file.txt", headers=condition).status_code == 304
    os.utime(sandbox.workspace / "cond/file.txt", (0, 0))
    assert "Last-Modified" not in sandbox.download("cond/file.txt").headers


def test_a_not_modified_download_to_a_gzip_client_ends_at_its_headers(sandbox: Sandbox) -> None:
    """Go's writeNotModified drops Content-Type and Content-Encoding, and net/http refuses a
    304 any body, so the gzip writer's empty stream never leaves; gin-contrib's Vary stays.
    Stray gzip bytes would be read by a kept-alive client as the start of its next answer.

    Upstream: pkg/picod/server.go (gin-contrib/gzip v1.0.1 handler.go:53-59),
    Go net/http/fs.go writeNotModified
    """
    sandbox.upload("cond/kept-alive.txt", b"content")
    request = (
        "GET /api/files/cond/kept-alive.txt HTTP/1.1\r\nHost: picod\r\nAccept-Encoding: gzip\r\n"
        f"Authorization: {sandbox.http.headers['Authorization']}\r\n"
    )
    with socket.create_connection(("127.0.0.1", sandbox.daemon.port), timeout=10) as conn:
        conn.sendall(
            f"{request}If-None-Match: *\r\n\r\n{request}Connection: close\r\n\r\n".encode()
        )
        wire = b"".join(iter(lambda: conn.recv(65536), b""))
    not_modified, _, after = wire.partition(b"\r\n\r\n")
    head = not_modified.decode().lower()
    assert head.startswith("http/1.1 304 not modified"), head
    assert "vary: accept-encoding" in head, head
    assert "content-type" not in head and "content-encoding" not in head, head
    assert after.startswith(b"HTTP/1.1 200 OK"), f"the next answer began {after[:40]!r}"


def test_download_ignores_precompressed_siblings(sandbox: Sandbox) -> None:
    """aiohttp's FileResponse would serve data.txt.gz for data.txt to a gzip client."""
    sandbox.upload("gz/data.txt", b"plain")
    sandbox.upload("gz/data.txt.gz", b"not the same file")
    for encoding in ("gzip", "identity"):
        answer = sandbox.download("gz/data.txt", headers={"Accept-Encoding": encoding})
        assert answer.content == b"plain"


def test_reading_a_path_where_nothing_is_found_is_404(links: Sandbox) -> None:
    """A download or a listing where nothing is found, even through a symlink outside (a
    dangling link, a missing name behind a link), is upstream's 404: sanitizePath hands the
    path back as given and the stat finds nothing.

    Upstream: pkg/picod/files.go:498-501, pkg/picod/files.go:260-266, pkg/picod/files.go:335-341
    """
    for path in ("dangling", "link-out/no-such-file", "link-in/no-such-file"):
        answer = links.download(path)
        assert (answer.status_code, answer.json()) == (
            404,
            {"code": 404, "error": "File not found"},
        ), path
        answer = links.listing(path)
        assert (answer.status_code, answer.json()) == (
            404,
            {"code": 404, "error": "Directory not found"},
        ), path


def test_download_errors(sandbox: Sandbox) -> None:
    sandbox.run("mkdir", "-p", "down-dir")
    answer = sandbox.download("no-such-file")
    assert (answer.status_code, answer.json()) == (404, {"code": 404, "error": "File not found"})
    answer = sandbox.download("down-dir")
    assert (answer.status_code, answer.json()) == (
        400,
        {"code": 400, "error": "Path is a directory, not a file"},
    )
    answer = sandbox.download("..%2F..%2Fetc%2Fpasswd")
    error = traversal("../../etc/passwd", "../../etc/passwd")
    assert (answer.status_code, answer.json()) == (400, {"code": 400, "error": error})


# --- the jail ------------------------------------------------------------------------------


DOTDOT_PATHS = [
    ("../elsewhere", "../elsewhere"),
    ("a/../../escape.txt", "../escape.txt"),
    ("../../etc/passwd", "../../etc/passwd"),
    ("../workspace-twin/x", "../workspace-twin/x"),
    ("..", ".."),
]


@pytest.mark.parametrize(("path", "relative"), DOTDOT_PATHS)
def test_dotdot_refusals_name_the_traversal(sandbox: Sandbox, path: str, relative: str) -> None:
    """Every path operation refuses `..` out of the workspace with upstream's words.

    Upstream: pkg/picod/files.go:460-483
    """
    refusal = {"code": 400, "error": traversal(path, relative)}
    assert sandbox.upload(path, b"x").json() == refusal
    answer = sandbox.http.post(
        f"{sandbox.url}/api/files", files={"file": ("f", b"x")}, data={"path": path}
    )
    assert (answer.status_code, answer.json()) == (400, refusal)
    assert (sandbox.listing(path).status_code, sandbox.listing(path).json()) == (400, refusal)
    answer = sandbox.execute(["pwd"], working_dir=path)
    assert answer.status_code == 400
    assert answer.json()["error"] == f"Invalid working directory: {refusal['error']}"
    assert not (sandbox.workspace.parent / "elsewhere").exists()
    assert not (sandbox.workspace.parent / "workspace-twin").exists()


@pytest.fixture(scope="module")
def links(sandbox: Sandbox) -> Sandbox:
    """Symlinks in the workspace: to the outside directory, dangling outside, and inside."""
    sandbox.run("ln", "-sfn", str(sandbox.outside), "link-out")
    sandbox.run("ln", "-sfn", str(sandbox.outside / "ghost.txt"), "dangling")
    sandbox.run("mkdir", "-p", "inner")
    sandbox.run("ln", "-sfn", "inner", "link-in")
    return sandbox


def test_existing_paths_through_a_symlink_outside_are_refused(links: Sandbox) -> None:
    """A path that exists and resolves outside is refused, naming where it leads.

    Upstream: pkg/picod/files.go:488-495
    """
    outside = Path(os.path.realpath(links.outside))
    for path, resolved in (("link-out", outside), ("link-out/secret.txt", outside / "secret.txt")):
        refusal = {"code": 400, "error": via_symlink(resolved, path)}
        assert links.upload(path, b"x").json() == refusal
        assert links.download(path).json() == refusal
        assert links.listing(path).json() == refusal
    answer = links.execute(["pwd"], working_dir="link-out")
    assert (answer.status_code, answer.json()["error"]) == (
        400,
        f"Invalid working directory: {via_symlink(outside, 'link-out')}",
    )
    assert (links.outside / "secret.txt").read_text() == "outside secret"


@pytest.mark.parametrize("path", ["link-out/x.txt", "link-out/newdir/x.txt", "dangling"])
@pytest.mark.parametrize("form", ["json", "multipart"])
def test_upload_through_a_symlink_to_a_new_path_is_refused(
    links: Sandbox, path: str, form: str
) -> None:
    """Upstream writes these outside the workspace; localcube refuses them (a defect row).

    sanitizePath checks the symlinks of existing paths only; MkdirAll and the write then
    follow the link.
    Upstream: pkg/picod/files.go:486-501, pkg/picod/files.go:95-118, pkg/picod/files.go:187-201
    """
    before = snapshot(links.outside)
    if form == "json":
        answer = links.upload(path, b"x")
    else:
        answer = links.http.post(
            f"{links.url}/api/files", files={"file": ("f", b"x")}, data={"path": path}
        )
    assert (answer.status_code, answer.json()) == (400, jail(path))
    assert snapshot(links.outside) == before


def test_working_dir_that_must_be_created_under_a_symlink_outside_is_500(links: Sandbox) -> None:
    """mkdirSafe refuses to create a working directory whose existing part leads outside.

    Upstream: pkg/picod/execute.go:106-113, pkg/picod/files.go:397-425
    """
    answer = links.execute(["pwd"], working_dir="link-out/newdir")
    candidate = links.workspace / "link-out/newdir"
    assert (answer.status_code, answer.json()) == (
        500,
        {
            "code": 500,
            "error": f'Failed to create working directory: access denied: path "{candidate}" '
            "escapes workspace jail via symlink",
        },
    )
    answer = links.execute(["pwd"], working_dir="dangling")
    ghost = Path(os.path.realpath(links.outside)) / "ghost.txt"
    assert (answer.status_code, answer.json()) == (
        500,
        {
            "code": 500,
            "error": "Failed to create working directory: failed to resolve path "
            f'"{links.workspace / "dangling"}": lstat {ghost}: no such file or directory',
        },
    )
    assert snapshot(links.outside) == {"secret.txt"}


def test_working_dir_that_is_not_a_directory_fails_to_start(sandbox: Sandbox) -> None:
    """A working directory below a file is not created; the command cannot start (exit 1).

    Upstream: pkg/picod/execute.go:106-115, pkg/picod/execute.go:140-151
    """
    sandbox.upload("plain-file", b"x")
    body = sandbox.execute(["pwd"], working_dir="plain-file/sub").json()
    assert (body["exit_code"], body["stdout"]) == (1, "")
    assert body["stderr"] == f"chdir {sandbox.workspace / 'plain-file/sub'}: not a directory"


def test_symlinks_inside_work_and_a_new_file_is_named_as_given(links: Sandbox) -> None:
    """An upload of a new file through a symlink inside answers with the path as given
    (sanitizePath resolves existing paths only), an existing one with where it leads.

    Upstream: pkg/picod/files.go:488-501, pkg/picod/files.go:219-233
    """
    answer = links.upload("link-in/ok.txt", b"fine")
    assert (answer.status_code, answer.json()["path"]) == (200, "link-in/ok.txt")
    answer = links.upload("link-in/ok.txt", b"again")
    assert (answer.status_code, answer.json()["path"]) == (200, "inner/ok.txt")
    answer = links.download("link-in/ok.txt")
    assert answer.content == b"again"
    assert answer.headers["Content-Disposition"] == 'attachment; filename="ok.txt"'
    body = links.execute(["pwd"], working_dir="link-in/made").json()
    assert body["stdout"] == f"{links.workspace / 'inner/made'}\n"


def test_workspace_mkdirs_refuses_a_symlink_planted_after_resolve(tmp_path: Path) -> None:
    """The race the HTTP tests cannot stage: resolve() saw a directory, now it is a link."""
    workspace, outside = Workspace(tmp_path / "ws"), tmp_path / "outside"
    outside.mkdir()
    target = workspace.resolve("planted/new/file.txt")
    (workspace.root / "planted").symlink_to(outside)
    with pytest.raises(WorkspaceEscape):
        workspace.mkdirs(target.parent)
    assert list(outside.iterdir()) == []
    assert workspace.resolve("/") == workspace.resolve("") == workspace.root


# --- body size limit -----------------------------------------------------------------------


def _raw_request(url: str, head: str) -> tuple[int, bytes]:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(head.encode())
        response = b""
        while chunk := conn.recv(65536):
            response += chunk
            if b"\r\n\r\n" in response:
                headers, _, body = response.partition(b"\r\n\r\n")
                length = int(re.search(rb"Content-Length: (\d+)", headers, re.I).group(1))
                if len(body) >= length:
                    return int(headers.split()[1]), body[:length]
    raise AssertionError(f"incomplete response: {response!r}")


def test_declared_body_over_32_mib_is_413(sandbox: Sandbox) -> None:
    """Only a Content-Length over the limit is refused up front, before authentication.

    Upstream: pkg/picod/server.go:108-121
    """
    head = (
        "POST /api/files HTTP/1.1\r\nHost: picod\r\nContent-Type: application/json\r\n"
        f"Content-Length: {MAX_BODY + 1}\r\nConnection: close\r\n\r\n"
    )
    status, body = _raw_request(sandbox.url, head)
    assert status == 413
    assert (
        body
        == b'{"detail":"maximum allowed size is 33554432 bytes","error":"request body too large"}'
    )
    connection = http.client.HTTPConnection("127.0.0.1", sandbox.daemon.port, timeout=10)
    connection.putrequest("POST", "/api/files")
    connection.putheader("Content-Length", str(MAX_BODY + 1))
    connection.endheaders()  # the body is never sent: the answer does not wait for it
    answer = connection.getresponse()
    assert (answer.status, answer.getheader("Connection")) == (413, "close")
    connection.close()


def _chunks(prefix: bytes, filler: bytes, suffix: bytes) -> Iterator[bytes]:
    """A body of 33 MiB and more, sent chunked (no Content-Length)."""
    yield prefix
    for _ in range(33):
        yield filler * (1 << 20)
    yield suffix


def test_chunked_json_body_over_32_mib_is_400(sandbox: Sandbox) -> None:
    """http.MaxBytesReader fails the JSON decoder: gin's binding error, 400.

    Upstream: pkg/picod/server.go:118, pkg/picod/files.go:158-165, pkg/picod/execute.go:56-63
    """
    too_large = {"code": 400, "error": "http: request body too large"}
    body = _chunks(b'{"path": "big.txt", "content": "', b"A", b'"}')
    answer = sandbox.http.post(f"{sandbox.url}/api/files", data=body)
    assert (answer.status_code, answer.json()) == (400, too_large)
    body = _chunks(b'{"command": ["true"], "env": {"A": "', b"A", b'"}}')
    answer = sandbox.http.post(f"{sandbox.url}/api/execute", data=body)
    assert (answer.status_code, answer.json()) == (400, too_large)
    assert not (sandbox.workspace / "big.txt").exists()


MULTIPART = "multipart/form-data; boundary=picodboundary"


def test_chunked_multipart_body_over_32_mib_has_no_path(sandbox: Sandbox) -> None:
    """ParseMultipartForm fails at the limit; gin ignores that and finds no `path`.

    Upstream: pkg/picod/server.go:118, pkg/picod/files.go:66-74
    """
    head = (
        '--picodboundary\r\nContent-Disposition: form-data; name="path"\r\n\r\nbig.bin\r\n'
        '--picodboundary\r\nContent-Disposition: form-data; name="file"; filename="b"\r\n\r\n'
    )
    body = _chunks(head.encode(), b"\0", b"\r\n--picodboundary--\r\n")
    answer = sandbox.http.post(
        f"{sandbox.url}/api/files", data=body, headers={"Content-Type": MULTIPART}
    )
    assert (answer.status_code, answer.json()) == (
        400,
        {"code": 400, "error": "Missing 'path' field"},
    )
    assert not (sandbox.workspace / "big.bin").exists()


_PATH_PART = '--picodboundary\r\nContent-Disposition: form-data; name="path"\r\n'


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        (MULTIPART, f"{_PATH_PART}no colon here\r\n\r\nm.txt\r\n--picodboundary--\r\n"),
        # Go reads header lines of any length; aiohttp stops at 8190 bytes: a form holding
        # only such a part is empty to both.
        (MULTIPART, f"--picodboundary\r\nX-Long: {'a' * 9000}\r\n\r\nx\r\n--picodboundary--\r\n"),
        (MULTIPART, f"{_PATH_PART}\r\nm.txt\r\n--picodboundary\r\nContent-Disposition: form"),
        (MULTIPART, "--otherboundary\r\n\r\nx\r\n--otherboundary--\r\n"),
        ("multipart/form-data", f"{_PATH_PART}\r\nm.txt\r\n--picodboundary--\r\n"),
    ],
    ids=[
        "header-without-colon",
        "header-line-too-long",
        "truncated",
        "wrong-boundary",
        "no-boundary",
    ],
)
def test_malformed_multipart_has_no_path(sandbox: Sandbox, content_type: str, body: str) -> None:
    """A multipart body that does not parse is an empty form to gin: 400, never a 500.

    Upstream: pkg/picod/files.go:66-74
    """
    answer = sandbox.http.post(
        f"{sandbox.url}/api/files", data=body.encode(), headers={"Content-Type": content_type}
    )
    assert (answer.status_code, answer.json()) == (
        400,
        {"code": 400, "error": "Missing 'path' field"},
    )
    assert not (sandbox.workspace / "m.txt").exists()


# --- gzip ---------------------------------------------------------------------------------


def _is_gzipped(answer: requests.Response, raw: bytes) -> bool:
    headers = answer.headers
    if headers.get("Content-Encoding") != "gzip":
        assert "Vary" not in headers, headers
        return False
    assert headers["Vary"] == "Accept-Encoding", headers
    assert raw[:2] == b"\x1f\x8b"
    return True


def test_gzip_compresses_every_answer_but_health(sandbox: Sandbox) -> None:
    """gin-contrib/gzip answers a gzip client compressed, /health and its prefix excepted.

    Upstream: pkg/picod/server.go:79-84
    """
    answer, raw = sandbox.raw("/health", headers=GZIP)
    assert not _is_gzipped(answer, raw) and json.loads(raw)["status"] == "ok"
    answer, raw = sandbox.raw("/health/x", headers=GZIP)
    assert not _is_gzipped(answer, raw) and raw == b"404 page not found"

    sandbox.upload("gz-list/a.txt", b"a")
    calls = [
        ("POST", "/api/execute", {"json": {"command": ["echo", "hi"]}}, 200),
        ("POST", "/api/execute", {"data": b"{"}, 400),
        ("GET", "/api/files", {"params": {"path": "gz-list"}}, 200),
        ("GET", "/api/files/no-such-file", {}, 404),
    ]
    for method, path, kwargs, status in calls:
        answer, raw = sandbox.raw(path, method, headers=GZIP, **kwargs)
        assert answer.status_code == status
        assert _is_gzipped(answer, raw), (path, answer.headers)
        assert answer.headers["Content-Length"] == str(len(raw))  # fits net/http's buffer
        json.loads(gzip.decompress(raw))
        plain, raw = sandbox.raw(path, method, headers=PLAIN, **kwargs)
        assert plain.status_code == status and not _is_gzipped(plain, raw)
    answer, raw = sandbox.raw("/api/execute", "POST", headers={**GZIP, "Authorization": None})
    assert answer.status_code == 401 and _is_gzipped(answer, raw)  # before authentication


def test_gzip_unknown_route_has_an_empty_body(sandbox: Sandbox) -> None:
    """Under gzip gin's 404 text is never written: the body is an empty gzip stream.

    Upstream: pkg/picod/server.go:84
    """
    for method, path in (("GET", "/nope"), ("DELETE", "/api/files")):
        answer, raw = sandbox.raw(path, method, headers=GZIP)
        assert answer.status_code == 404 and _is_gzipped(answer, raw)
        assert gzip.decompress(raw) == b""
        assert "Content-Type" not in answer.headers, answer.headers  # Go sends none
    # gin-contrib/gzip's default excluded extensions: .png .gif .jpeg .jpg
    answer, raw = sandbox.raw("/nope.png", headers=GZIP)
    assert not _is_gzipped(answer, raw) and raw == b"404 page not found"


def test_gzip_answers_hold_upstreams_content_in_zlibs_bytes(sandbox: Sandbox) -> None:
    """The gzipped 401 decodes to what upstream's recorded bytes decode to; the bytes are
    zlib's, which no client reads (docs/fidelity.md, the gzip bytes).

    Upstream: pkg/picod/server.go:84
    """
    _, raw = sandbox.raw("/api/execute", "POST", headers={**GZIP, "Authorization": None})
    upstreams = bytes.fromhex(UPSTREAMS_GZIPPED_401)
    assert gzip.decompress(raw) == gzip.decompress(upstreams), raw


UPSTREAMS_GZIPPED_401 = (
    "1f8b08000000000004ff04c0b10a02310c06e05709ff7c8382533757c14504e770fdb10169689a2e8aef7e"
    "df0fbb57a25c4ee70d95a9f641c1836371a604c7b2e094dbeb29bab2b1a7ed9ae61d1b18e18182bbcd69fd"
    "2dd795cdc3be9ae65d1ab532f03f020000ffffc354920a62000000"
)


def test_a_gzip_download_is_chunked_and_a_picture_is_not_compressed(sandbox: Sandbox) -> None:
    """The gzip writer drops Content-Length; aiohttp's compression chunks every gzipped
    download (Go sends a Content-Length for one within its 2 KiB buffer: fidelity.md).

    Upstream: pkg/picod/server.go:84, pkg/picod/files.go:287-297
    """
    data = os.urandom(64 << 10)
    for name, content in (("random.bin", data), ("small.txt", b"small")):
        sandbox.upload(f"gz-down/{name}", content)
        answer, raw = sandbox.raw(f"/api/files/gz-down/{name}", headers=GZIP)
        assert answer.status_code == 200 and _is_gzipped(answer, raw)
        assert answer.headers["Transfer-Encoding"] == "chunked"
        assert "Content-Length" not in answer.headers
        assert answer.headers["Accept-Ranges"] == "bytes"
        assert "Last-Modified" in answer.headers
        assert gzip.decompress(raw) == content

    sandbox.upload("gz-down/picture.png", data[:100])
    answer, raw = sandbox.raw("/api/files/gz-down/picture.png", headers=GZIP)
    assert not _is_gzipped(answer, raw) and raw == data[:100]
    assert answer.headers["Content-Length"] == "100"


def test_gzip_does_not_reach_the_413(sandbox: Sandbox) -> None:
    """The body-size check runs before the gzip middleware.

    Upstream: pkg/picod/server.go:82-84
    """
    head = (
        "POST /api/execute HTTP/1.1\r\nHost: picod\r\nAccept-Encoding: gzip\r\n"
        f"Content-Length: {MAX_BODY + 1}\r\nConnection: close\r\n\r\n"
    )
    status, body = _raw_request(sandbox.url, head)
    assert status == 413 and json.loads(body)["error"] == "request body too large"


# --- ranges --------------------------------------------------------------------------------

RANGE_DATA = bytes(range(100))


@pytest.fixture(scope="module")
def ranged(sandbox: Sandbox) -> str:
    sandbox.upload("ranges/data.txt", RANGE_DATA)
    sandbox.run("touch", "ranges/empty.txt")
    return "ranges/data.txt"


@pytest.mark.parametrize(
    ("header", "start", "end"),
    [("bytes=0-4", 0, 4), ("bytes=-3", 97, 99), ("bytes=95-", 95, 99), ("bytes=90-1000", 90, 99)],
)
def test_download_single_range_is_206(
    sandbox: Sandbox, ranged: str, header: str, start: int, end: int
) -> None:
    """http.ServeFile honours one byte range: 206, Content-Range, Accept-Ranges.

    Upstream: pkg/picod/files.go:297
    """
    answer = sandbox.download(ranged, headers={"Range": header, **PLAIN})
    assert answer.status_code == 206
    assert answer.content == RANGE_DATA[start : end + 1]
    assert answer.headers["Content-Range"] == f"bytes {start}-{end}/100"
    assert answer.headers["Content-Length"] == str(end + 1 - start)
    assert answer.headers["Accept-Ranges"] == "bytes"
    assert answer.headers["Content-Disposition"] == 'attachment; filename="data.txt"'


@pytest.mark.parametrize(
    ("header", "text", "content_range"),
    [
        ("bytes=100-", "invalid range: failed to overlap", "bytes */100"),
        ("bytes=abc", "invalid range", None),
        ("items=0-1", "invalid range", None),
        ("bytes=5-1", "invalid range", None),
    ],
)
def test_download_unsatisfiable_range_is_416(
    sandbox: Sandbox, ranged: str, header: str, text: str, content_range: str | None
) -> None:
    """Go's http.Error text, and `bytes */SIZE` when no range overlaps the file.

    Upstream: pkg/picod/files.go:297
    """
    answer = sandbox.download(ranged, headers={"Range": header, **PLAIN})
    assert (answer.status_code, answer.text) == (416, text + "\n")
    assert answer.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert answer.headers["X-Content-Type-Options"] == "nosniff"
    assert answer.headers.get("Content-Range") == content_range
    assert "Last-Modified" not in answer.headers


def test_download_ranges_go_ignores(sandbox: Sandbox, ranged: str) -> None:
    """A range of an empty file, a stale If-Range: both 200.

    Upstream: pkg/picod/files.go:297
    """
    answer = sandbox.download("ranges/empty.txt", headers={"Range": "bytes=5-", **PLAIN})
    assert (answer.status_code, answer.content) == (200, b"")
    modified = sandbox.download(ranged).headers["Last-Modified"]
    stale = "Mon, 02 Jan 2006 15:04:05 GMT"
    answer = sandbox.download(ranged, headers={"Range": "bytes=0-1", "If-Range": stale, **PLAIN})
    assert (answer.status_code, answer.content) == (200, RANGE_DATA)
    answer = sandbox.download(ranged, headers={"Range": "bytes=0-1", "If-Range": modified, **PLAIN})
    assert (answer.status_code, answer.content) == (206, RANGE_DATA[:2])


@pytest.mark.parametrize(
    "header", ["bytes=0-1, 10-12", "bytes=0-,0-", "bytes=200-300,150-", "bytes=0-1,abc"]
)
def test_download_several_ranges_get_the_whole_file(
    sandbox: Sandbox, ranged: str, header: str
) -> None:
    """Several ranges are not served: 200 with the whole file, as RFC 9110 section 14.2
    lets a server answer, whatever the ranges (upstream's Go answers 206
    multipart/byteranges, or 416 for a range it cannot parse or satisfy; docs/fidelity.md).

    Upstream: pkg/picod/files.go:297
    """
    answer = sandbox.download(ranged, headers={"Range": header, **PLAIN})
    assert (answer.status_code, answer.content) == (200, RANGE_DATA)
    assert "Content-Range" not in answer.headers
    assert answer.headers["Accept-Ranges"] == "bytes"


def test_download_range_under_gzip(sandbox: Sandbox, ranged: str) -> None:
    """A gzip client gets the range compressed, without Content-Length.

    Upstream: pkg/picod/server.go:84, pkg/picod/files.go:297
    """
    answer, raw = sandbox.raw(f"/api/files/{ranged}", headers={"Range": "bytes=10-19", **GZIP})
    assert answer.status_code == 206 and _is_gzipped(answer, raw)
    assert answer.headers["Content-Range"] == "bytes 10-19/100"
    assert gzip.decompress(raw) == RANGE_DATA[10:20]


def test_download_416_under_gzip_says_it_is_gzipped(sandbox: Sandbox, ranged: str) -> None:
    """Upstream's serveError deletes Content-Encoding but the gzip writer still compresses
    its text: the client gets gzip bytes it is told are plain. localcube says gzip.

    Upstream: pkg/picod/server.go:84, pkg/picod/files.go:297
    """
    answer, raw = sandbox.raw(f"/api/files/{ranged}", headers={"Range": "bytes=500-", **GZIP})
    assert answer.status_code == 416 and _is_gzipped(answer, raw)
    assert gzip.decompress(raw) == b"invalid range: failed to overlap\n"


# --- logging -------------------------------------------------------------------------------


def test_log_has_one_line_per_request_and_no_secrets(sandbox: Sandbox) -> None:
    token = sandbox.key.token()
    answer = sandbox.http.post(
        f"{sandbox.url}/api/execute",
        json={"command": ["true"], "env": {"SECRET": "s3cr3t-value"}},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert answer.status_code == 200
    log = sandbox.daemon.log.read_text()
    assert re.search(r"POST /api/execute 200$", log, re.M)
    assert "s3cr3t-value" not in log
    assert token not in log and token.split(".")[2] not in log


# --- process lifecycle ---------------------------------------------------------------------


def test_auth_none_needs_no_token(tmp_path: Path) -> None:
    daemon = Picod(tmp_path / "ws", tmp_path / "picod.log", public_key_pem=None, auth="none")
    try:
        answer = requests.post(f"{daemon.url}/api/execute", json={"command": ["echo", "free"]})
        assert (answer.status_code, answer.json()["stdout"]) == (200, "free\n")
    finally:
        assert daemon.stop() == 0


def test_sigterm_ends_running_commands(tmp_path: Path, key: SigningKey) -> None:
    daemon = Picod(tmp_path / "ws", tmp_path / "picod.log", key.public_pem)
    script = "echo $$ > main.pid; sleep 30 & echo $! > bg.pid; sleep 30"
    answers: list[object] = []

    def call() -> None:
        try:
            answers.append(
                requests.post(
                    f"{daemon.url}/api/execute",
                    json={"command": ["sh", "-c", script], "timeout": "60s"},
                    headers={"Authorization": f"Bearer {key.token()}"},
                    timeout=30,
                )
            )
        except requests.RequestException as error:
            answers.append(error)

    caller = threading.Thread(target=call)
    caller.start()
    try:
        pid_files = [tmp_path / "ws" / "main.pid", tmp_path / "ws" / "bg.pid"]
        wait_for(lambda: all(p.exists() and p.read_text().strip() for p in pid_files))
        pids = [int(p.read_text()) for p in pid_files]
        daemon.process.terminate()
        # before the command's 30 s sleep ends: a daemon that waited for it would time out
        assert daemon.process.wait(25) == 0
        for pid in pids:
            wait_for(lambda pid=pid: is_dead(pid))
    finally:
        daemon.stop()
        caller.join(10)
    assert answers, "the request never returned"


def _start_error(env: dict[str, str], tmp_path: Path, *args: str) -> str:
    result = subprocess.run(
        [*PICOD, "--workspace", str(tmp_path / "ws"), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_start_needs_port(tmp_path: Path, key: SigningKey) -> None:
    line = _start_error(picod_env(None, key.public_pem), tmp_path)
    assert line == "picod: --port or the PORT environment variable is required"
    line = _start_error(picod_env(None, key.public_pem), tmp_path, "--port", "http")
    assert line == "picod: invalid --port 'http': want a number from 0 to 65535"


def test_the_port_flag_is_taken_as_upstreams_daemon_takes_it(
    tmp_path: Path, key: SigningKey
) -> None:
    """`--port` wins over $PORT, so the daemon runs with upstream's command line.

    Upstream: cmd/picod/main.go:32-33"""
    port = free_port()
    env = picod_env(free_port(), key.public_pem)
    command = [*PICOD, "--port", str(port), "--workspace", str(tmp_path / "ws")]
    with subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.DEVNULL) as daemon:
        try:
            wait_until(lambda: _answers_health(port), "the daemon to serve on --port", timeout=15)
        finally:
            daemon.terminate()


def _answers_health(port: int) -> bool:
    try:
        return requests.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200
    except requests.ConnectionError:
        return False


@pytest.mark.parametrize(
    ("pem", "reason"),
    [
        (None, "environment variable PICOD_AUTH_PUBLIC_KEY is not set"),
        ("not a pem", "failed to decode PEM block from PICOD_AUTH_PUBLIC_KEY"),
        ("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n", "failed to parse"),
        ("ec", "key is not an RSA public key"),
    ],
    ids=["missing", "not-pem", "corrupt", "not-rsa"],
)
def test_start_needs_a_valid_key_with_jwt_auth(tmp_path: Path, pem: str | None, reason) -> None:
    if pem == "ec":
        pem = (
            ec.generate_private_key(ec.SECP256R1())
            .public_key()
            .public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            .decode()
        )
    line = _start_error(picod_env(free_port(), pem), tmp_path, "--auth", "jwt")
    assert line.startswith(f"picod: {reason}"), line


def test_start_reports_a_busy_port(tmp_path: Path, key: SigningKey) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        line = _start_error(picod_env(port, key.public_pem), tmp_path)
    assert line == f"picod: cannot listen on 127.0.0.1:{port}: address already in use"


def test_nothing_is_left_running(sandbox: Sandbox) -> None:
    """Commands of the module's daemon, timed out or finished, left no process behind."""
    daemon = sandbox.daemon.process.pid
    assert session_members(daemon) == [daemon]
