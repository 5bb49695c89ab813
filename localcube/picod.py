"""PicoD-compatible daemon: the sandbox of every localcube CodeInterpreter session.

Serves the HTTP API of upstream PicoD (volcano-sh/agentcube pkg/picod: server.go, auth.go,
execute.go, files.go) with its status codes, JSON bodies and error texts:

    GET  /health                 no authentication
    POST /api/execute            run one command (an argv) in the workspace
    POST /api/files              upload: JSON with base64 content, or multipart/form-data
    GET  /api/files?path=DIR     list a directory
    GET  /api/files/<path>       download a file

    python -m localcube.picod --workspace DIR [--auth jwt|none]

PORT (required) and HOST (default 127.0.0.1) come from the environment. With --auth jwt, the
default, every /api request needs `Authorization: Bearer <JWT>` signed with RS256/384/512 by
the key whose PEM public half is in PICOD_AUTH_PUBLIC_KEY.
"""

import argparse
import asyncio
import base64
import codecs
import contextlib
import json
import logging
import mimetypes
import os
import re
import shutil
import signal
import stat
import string
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import jwt
from aiohttp import BodyPartReader, web
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey
from cryptography.hazmat.primitives.serialization import load_pem_public_key

from localcube.durations import parse_duration
from localcube.workspace import Workspace, WorkspaceEscape

MAX_BODY_SIZE = 32 << 20
DEFAULT_TIMEOUT = 60.0
TIMEOUT_EXIT_CODE = 124
PUBLIC_KEY_ENV = "PICOD_AUTH_PUBLIC_KEY"
VERSION = "0.0.1"

_JWT_ALGORITHMS = ["RS256", "RS384", "RS512"]
_JWT_LEEWAY = 60
# Algorithms golang-jwt knows: a token using one of them but not RSA is "unexpected".
_GO_JWT_METHODS = (
    *("HS256", "HS384", "HS512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512"),
    *("ES256", "ES384", "ES512", "EdDSA", "none"),
)
_KILL_GRACE = 2.0  # seconds to wait for a killed group's output pipes to close
_CHUNK_SIZE = 256 << 10
_SHUTDOWN_TIMEOUT = 2.0
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC

log = logging.getLogger("localcube.picod")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


# --- Go-compatible text -------------------------------------------------------------------


def _go_replace(error: UnicodeError) -> tuple[str, int]:
    """Like Go's encoding/json: each invalid UTF-8 byte becomes one U+FFFD."""
    assert isinstance(error, UnicodeDecodeError)
    return "\ufffd", error.start + 1


codecs.register_error("picod-go-replace", _go_replace)
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_GO_JSON_ESCAPES = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def _go_text(data: bytes) -> str:
    return data.decode("utf-8", "picod-go-replace")


def _os_text(name: str | os.PathLike[str]) -> str:
    """A file name as Go would print it in JSON (undecodable bytes become U+FFFD)."""
    return _go_text(os.fsencode(name))


def _errno_text(error: OSError) -> str:
    """The errno description the way Go spells it ("no such file or directory")."""
    text = os.strerror(error.errno) if error.errno else str(error)
    return text[:1].lower() + text[1:]


def _path_error(op: str, path: str | os.PathLike[str], error: OSError) -> str:
    """Go's *os.PathError text: "open /ws/a: permission denied"."""
    return f"{op} {_os_text(path)}: {_errno_text(error)}"


def _rfc3339(ns: int) -> str:
    """A UTC instant as Go's time.Time marshals it (RFC 3339, trailing zeros trimmed)."""
    seconds, fraction = divmod(ns, 1_000_000_000)
    text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    digits = f"{fraction:09d}".rstrip("0")
    return f"{text}.{digits}Z" if digits else f"{text}Z"


_SMALL_UNITS = ((1_000, 0, "ns"), (1_000_000, 3, "µs"), (1_000_000_000, 6, "ms"))


def go_duration_string(ns: int) -> str:
    """Go's time.Duration.String(): "1h2m3.5s", "1.5ms", "0s"."""
    sign, ns = ("-" if ns < 0 else ""), abs(ns)
    if ns == 0:
        return "0s"
    if ns < 1_000_000_000:
        precision, unit = next((p, u) for limit, p, u in _SMALL_UNITS if ns < limit)
        whole, fraction = divmod(ns, 10**precision)
        return f"{sign}{whole}{_fraction(fraction, precision)}{unit}"
    seconds, fraction = divmod(ns, 1_000_000_000)
    minutes, hours = seconds // 60, seconds // 3600
    text = f"{seconds % 60}{_fraction(fraction, 9)}s"
    if minutes:
        text = f"{minutes % 60}m{text}"
    if hours:
        text = f"{hours}h{text}"
    return sign + text


def _fraction(value: int, precision: int) -> str:
    digits = f"{value:0{precision}d}".rstrip("0") if precision else ""
    return f".{digits}" if digits else ""


_MODE_TYPES = {
    stat.S_IFDIR: "d",
    stat.S_IFLNK: "L",
    stat.S_IFBLK: "D",
    stat.S_IFCHR: "Dc",
    stat.S_IFIFO: "p",
    stat.S_IFSOCK: "S",
}


def go_file_mode(st_mode: int) -> str:
    """Go's fs.FileMode.String() for an os.stat() st_mode: "-rw-r--r--", "drwxr-xr-x"."""
    letters = _MODE_TYPES.get(stat.S_IFMT(st_mode), "")
    letters += "u" if st_mode & stat.S_ISUID else ""
    letters += "g" if st_mode & stat.S_ISGID else ""
    letters += "t" if st_mode & stat.S_ISVTX else ""
    kind = "".join(c for c in "dalTLDpSugct?" if c in letters) or "-"
    return kind + "".join(c if st_mode & (1 << (8 - i)) else "-" for i, c in enumerate("rwxrwxrwx"))


def _json(status: int, body: dict[str, Any]) -> web.Response:
    """A JSON response encoded like Go's json.Marshal (compact, HTML characters escaped).

    Keys come out in the order given: struct field order for typed responses, sorted for
    upstream's gin.H maps.
    """
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    return web.Response(
        status=status, text=text.translate(_GO_JSON_ESCAPES), content_type="application/json"
    )


def _error(status: int, message: str) -> web.Response:
    return _json(status, {"code": status, "error": message})


# --- Request bodies, decoded like gin's ShouldBindJSON ----------------------------------


class BadRequest(ValueError):
    """A request that upstream answers with 400 and this message."""


@dataclass(frozen=True)
class _Field:
    name: str  # the JSON key
    go_name: str  # the Go struct field, named in validation errors
    go_type: str  # "string", "[]string" or "map[string]string"
    required: bool = False


_EXECUTE_REQUEST = (
    "ExecuteRequest",
    (
        _Field("command", "Command", "[]string", required=True),
        _Field("timeout", "Timeout", "string"),
        _Field("working_dir", "WorkingDir", "string"),
        _Field("env", "Env", "map[string]string"),
    ),
)
_UPLOAD_REQUEST = (
    "UploadFileRequest",
    (
        _Field("path", "Path", "string", required=True),
        _Field("content", "Content", "string", required=True),
        _Field("mode", "Mode", "string"),
    ),
)


class _TypeMismatch(Exception):
    def __init__(self, value: Any, go_type: str) -> None:
        super().__init__(value, go_type)
        self.kind, self.go_type = _json_kind(value), go_type


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return {str: "string", list: "array", dict: "object"}.get(type(value), "null")


def _reject_constant(name: str) -> Any:
    """NaN and Infinity are Python extensions that Go's decoder rejects."""
    where = "in numeric literal" if name.startswith("-") else "looking for beginning of value"
    raise BadRequest(f"invalid character '{name.lstrip('-')[0]}' {where}")


_JSON_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
_SYNTAX_CONTEXTS = (
    ("Expecting value", "looking for beginning of value"),
    ("Expecting property name", "looking for beginning of object key string"),
    ("Expecting ':'", "after object key"),
    ("Invalid control character", "in string literal"),
)
_GO_CHAR_ESCAPES = {"\a": "a", "\b": "b", "\f": "f", "\n": "n", "\r": "r", "\t": "t", "\v": "v"}


def _go_quote_char(char: str) -> str:
    """Go's quoteChar, as its JSON syntax errors print the offending character."""
    if char in "\\'" or char in _GO_CHAR_ESCAPES:
        return "'\\" + _GO_CHAR_ESCAPES.get(char, char) + "'"
    if char.isprintable():
        return f"'{char}'"
    return f"'\\x{ord(char):02x}'" if ord(char) < 0x80 else f"'\\u{ord(char):04x}'"


def _go_syntax_error(error: json.JSONDecodeError) -> str:
    """Go's *json.SyntaxError text for the error Python found at the same place."""
    doc, pos = error.doc, error.pos
    if pos >= len(doc) or error.msg.startswith("Unterminated string"):
        return "unexpected EOF"
    if error.msg.startswith("Invalid \\"):  # Python points at the backslash, Go past it
        pos = doc.rfind("\\", 0, pos + 1) + 1
        if doc[pos] != "u":
            return f"invalid character {_go_quote_char(doc[pos])} in string escape code"
        digits = range(pos + 1, pos + 5)
        pos = next((i for i in digits if i >= len(doc) or doc[i] not in string.hexdigits), pos)
        if pos >= len(doc):
            return "unexpected EOF"
        return f"invalid character {_go_quote_char(doc[pos])} in \\u hexadecimal character escape"
    context = next((c for prefix, c in _SYNTAX_CONTEXTS if error.msg.startswith(prefix)), None)
    if context is None:  # "Expecting ',' delimiter"
        in_object = _innermost_container(doc, pos) == "{"
        context = "after object key:value pair" if in_object else "after array element"
    return f"invalid character {_go_quote_char(doc[pos])} {context}"


def _innermost_container(doc: str, end: int) -> str:
    """The bracket ('{' or '[') enclosing doc[end], skipping over strings."""
    stack: list[str] = []
    in_string = escaped = False
    for char in doc[:end]:
        if in_string:
            escaped, in_string = (not escaped and char == "\\"), (escaped or char != '"')
        elif char == '"':
            in_string = True
        elif char in "[{":
            stack.append(char)
        elif char in "]}" and stack:
            stack.pop()
    return stack[-1] if stack else ""


def _first_json_value(body: bytes) -> Any:
    """The first JSON value of body; like json.Decoder.Decode, data after it is ignored."""
    text = _go_text(body)
    start = len(text) - len(text.lstrip(" \t\r\n"))
    if start == len(text):
        raise BadRequest("EOF")
    try:
        return _JSON_DECODER.raw_decode(text, start)[0]
    except json.JSONDecodeError as error:
        raise BadRequest(_go_syntax_error(error)) from None


def _go_string(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _TypeMismatch(value, "string")
    return _LONE_SURROGATE.sub("\ufffd", value)


def _convert(value: Any, go_type: str) -> Any:
    if go_type == "string" or value is None:
        return _go_string(value) if go_type == "string" else None
    if go_type == "[]string":
        if not isinstance(value, list):
            raise _TypeMismatch(value, go_type)
        return [_go_string(item) for item in value]
    if not isinstance(value, dict):
        raise _TypeMismatch(value, go_type)
    return {_go_string(key): _go_string(item) for key, item in value.items()}


def bind_json(body: bytes, request_type: tuple[str, tuple[_Field, ...]]) -> dict[str, Any]:
    """Decode body into the fields of an upstream request struct, with Go's error texts.

    encoding/json matches keys case-insensitively, leaves a string field alone on null, sets
    a slice or map to nil on null and reports the first type mismatch; gin's
    `binding:"required"` then rejects empty strings and nil slices or maps (not empty ones).
    String fields default to "", slices and maps to None. Raises BadRequest.
    """
    struct, fields = request_type
    value = _first_json_value(body)
    bound: dict[str, Any] = {f.name: "" if f.go_type == "string" else None for f in fields}
    if value is not None and not isinstance(value, dict):
        kind = _json_kind(value)
        raise BadRequest(f"json: cannot unmarshal {kind} into Go value of type picod.{struct}")
    mismatch = None
    for key, item in (value or {}).items():
        field = next((f for f in fields if f.name == key), None) or next(
            (f for f in fields if f.name.casefold() == key.casefold()), None
        )
        if field is None or (item is None and field.go_type == "string"):
            continue
        try:
            bound[field.name] = _convert(item, field.go_type)
        except _TypeMismatch as error:
            mismatch = mismatch or (
                f"json: cannot unmarshal {error.kind} into Go struct field "
                f"{struct}.{field.name} of type {error.go_type}"
            )
    if mismatch:
        raise BadRequest(mismatch)
    missing = [f.go_name for f in fields if f.required and bound[f.name] in ("", None)]
    if missing:
        raise BadRequest(
            "\n".join(
                f"Key: '{struct}.{name}' Error:Field validation for '{name}' failed on the "
                "'required' tag"
                for name in missing
            )
        )
    return bound


_BASE64_STOP = re.compile(rb"[^A-Za-z0-9+/\r\n]")
_NEWLINES = re.compile(rb"[\r\n]*")


def _base64_error_offset(data: bytes) -> int | None:
    """Where Go's base64.StdEncoding.DecodeString rejects data (its byte offset), or None.

    Its decode loop, condensed: padding is required, CR and LF are skipped anywhere, and the
    first byte outside the alphabet must be correct padding that ends the input.
    """
    stop = _BASE64_STOP.search(data)
    end = stop.start() if stop else len(data)
    quantum = (end - data.count(b"\r", 0, end) - data.count(b"\n", 0, end)) % 4
    if stop is None:
        return end - quantum if quantum else None
    if data[end] != ord("=") or quantum < 2:
        return end
    index = end + 1
    if quantum == 2:  # a second "=" must follow
        index = _NEWLINES.match(data, index).end()
        if index == len(data):
            return index
        if data[index] != ord("="):
            return index - 1
        index += 1
    index = _NEWLINES.match(data, index).end()
    return index if index < len(data) else None


def decode_base64(text: str) -> bytes:
    """Decode like Go's base64.StdEncoding; raise BadRequest with upstream's message."""
    data = text.encode()
    offset = _base64_error_offset(data)
    if offset is not None:
        raise BadRequest(f"Invalid base64 content: illegal base64 data at input byte {offset}")
    return base64.b64decode(data.replace(b"\r", b"").replace(b"\n", b""))


def parse_file_mode(text: str) -> int:
    """Upstream's parseFileMode: an octal string up to 0777, anything else means 0644."""
    if re.fullmatch("[0-7]{1,11}", text) and int(text, 8) <= 0o777:
        return int(text, 8)
    return 0o644


# --- Authentication ------------------------------------------------------------------------


def load_public_key(pem: str | None) -> RSAPublicKey:
    """The RSA key in PICOD_AUTH_PUBLIC_KEY; ValueError with upstream's wording otherwise."""
    if not pem:
        raise ValueError(f"environment variable {PUBLIC_KEY_ENV} is not set")
    if "-----BEGIN" not in pem:
        raise ValueError(f"failed to decode PEM block from {PUBLIC_KEY_ENV}")
    try:
        key = load_pem_public_key(pem.encode())
    except (ValueError, TypeError) as error:
        raise ValueError(f"failed to parse public key: {error}") from None
    if not isinstance(key, RSAPublicKey):
        raise ValueError("key is not an RSA public key")
    return key


def _go_jwt_error(token: str, error: jwt.PyJWTError) -> str:
    """The golang-jwt v5 error text for the check PyJWT failed."""
    if token.count(".") != 2:
        return "token is malformed: token contains an invalid number of segments"
    if isinstance(error, jwt.InvalidAlgorithmError):
        algorithm = jwt.get_unverified_header(token).get("alg")
        if algorithm in _GO_JWT_METHODS:
            return (
                "token is unverifiable: error while executing keyfunc: "
                f"unexpected signing method: {algorithm}"
            )
        return "token is unverifiable: signing method (alg) is unavailable"
    if isinstance(error, jwt.InvalidSignatureError):
        return "token signature is invalid: crypto/rsa: verification error"
    if isinstance(error, jwt.DecodeError):
        return f"token is malformed: {error}"
    if isinstance(error, jwt.ExpiredSignatureError):
        claims = "token is expired"
    elif isinstance(error, jwt.MissingRequiredClaimError):
        claims = f"token is missing required claim: {error.claim} claim is required"
    elif isinstance(error, jwt.ImmatureSignatureError):
        claims = "token used before issued" if "iat" in str(error) else "token is not valid yet"
    else:
        claims = str(error)
    return f"token has invalid claims: {claims}"


def check_authorization(header: str, key: RSAPublicKey) -> web.Response | None:
    """Upstream's AuthMiddleware: None when the bearer JWT is valid, else the 401 to send.

    exp is required, iat is checked when present (golang-jwt's WithIssuedAt does not require
    it), both with a minute of leeway; only RSA PKCS#1 v1.5 algorithms are accepted.
    """
    if not header:
        return _json(
            401,
            {
                "code": 401,
                "detail": "Request requires JWT authentication",
                "error": "Missing Authorization header",
            },
        )
    parts = header.split(" ")
    if len(parts) != 2 or parts[0] != "Bearer":
        return _json(
            401,
            {
                "code": 401,
                "detail": "Use Bearer <token>",
                "error": "Invalid Authorization header format",
            },
        )
    try:
        jwt.decode(
            parts[1],
            key,
            algorithms=_JWT_ALGORITHMS,
            leeway=_JWT_LEEWAY,
            options={
                "require": ["exp"],
                "verify_aud": False,
                "verify_iss": False,
                "verify_sub": False,
                "verify_jti": False,
            },
        )
    except jwt.PyJWTError as error:
        detail = f"JWT verification failed: {_go_jwt_error(parts[1], error)}"
        return _json(401, {"code": 401, "detail": detail, "error": "Invalid token"})
    return None


# --- Commands ------------------------------------------------------------------------------


class ProcessGroups:
    """Process groups of the commands started here, so that stopping the daemon ends them.

    A command keeps its group after it returns when it left background processes behind;
    a group is forgotten once it is empty, so that its id cannot have been reused by an
    unrelated group by the time the daemon kills.
    """

    def __init__(self) -> None:
        self._ids: set[int] = set()

    def add(self, pgid: int) -> None:
        self._ids.add(pgid)

    def kill(self, pgid: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)

    def kill_all(self) -> None:
        for pgid in list(self._ids):
            self.kill(pgid)

    def prune(self) -> None:
        for pgid in list(self._ids):
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                self._ids.discard(pgid)
            except PermissionError:
                pass


@dataclass(frozen=True)
class CommandResult:
    stdout: str
    stderr: str
    exit_code: int
    duration: float  # seconds
    start_ns: int  # wall clock, ns since the epoch
    end_ns: int

    def to_json(self) -> dict[str, Any]:
        """Upstream's ExecuteResponse."""
        return {
            "stdout": self.stdout,
            "stderr": self.stderr,
            "exit_code": self.exit_code,
            "duration": self.duration,
            "start_time": _rfc3339(self.start_ns),
            "end_time": _rfc3339(self.end_ns),
        }


class _NotStarted(Exception):
    """The command could not be started; the message is Go's error text."""


def _look_path(name: str) -> str:
    """Go's exec.LookPath, searching the daemon's PATH (not the request's env)."""
    if "/" in name:
        return name
    found = shutil.which(name, path=os.environ.get("PATH", "")) if name else None
    if found is None:
        raise _NotStarted(f"exec: {json.dumps(name)}: executable file not found in $PATH")
    return found


async def run_command(
    argv: list[str], timeout: float, cwd: Path, env: dict[str, str], groups: ProcessGroups
) -> CommandResult:
    """Run argv the way upstream's exec.CommandContext(...).Run() does, in its own group.

    When `timeout` (seconds) expires the whole process group is killed and the result is
    exit code 124 with "Command timed out after N seconds" appended to stderr. A command
    that cannot start gives exit code 1 and Go's error text on stderr; one killed by a
    signal gives -1 (Go's ProcessState.ExitCode()).
    """
    start_ns, started = time.time_ns(), time.monotonic()
    stdout, stderr, exit_code = await _run(argv, timeout, cwd, env, groups)
    duration, end_ns = time.monotonic() - started, time.time_ns()
    if exit_code is None:
        exit_code = TIMEOUT_EXIT_CODE
        stderr += f"Command timed out after {timeout:.0f} seconds"
    return CommandResult(stdout, stderr, exit_code, duration, start_ns, end_ns)


async def _run(
    argv: list[str], timeout: float, cwd: Path, env: dict[str, str], groups: ProcessGroups
) -> tuple[str, str, int | None]:
    """(stdout, stderr, exit code), the exit code None when the timeout expired."""
    if timeout <= 0:  # Go's context is already done: the command never starts
        return "", "", None
    try:
        executable = _look_path(argv[0])
    except _NotStarted as error:
        return "", str(error), 1
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            executable=executable,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env=env,
            # Its own process group, for the kill on timeout, but the daemon's session, which
            # localcube ends as a whole when it removes the sandbox.
            process_group=0,
        )
    except OSError as error:
        return "", f"fork/exec {executable}: {_errno_text(error)}", 1
    except ValueError:  # a NUL byte in an argument or in the environment
        return "", f"fork/exec {executable}: invalid argument", 1
    assert process.stdout is not None and process.stderr is not None
    groups.add(process.pid)
    outputs = asyncio.gather(process.stdout.read(), process.stderr.read(), process.wait())
    try:
        out, err, code = await asyncio.wait_for(asyncio.shield(outputs), timeout)
    except TimeoutError:
        groups.kill(process.pid)
        # A process that left the group may still hold the pipes: do not wait for it forever.
        done, _ = await asyncio.wait({outputs}, timeout=_KILL_GRACE)
        if outputs not in done:
            outputs.cancel()
            return "", "", None
        out, err, _ = outputs.result()
        return _go_text(out), _go_text(err), None
    except asyncio.CancelledError:
        groups.kill(process.pid)
        outputs.cancel()
        raise
    finally:
        groups.prune()
    return _go_text(out), _go_text(err), code if code >= 0 else -1


# --- Files ---------------------------------------------------------------------------------


def _write_and_stat(fd: int, data: bytes) -> os.stat_result:
    with os.fdopen(fd, "wb") as file:
        file.write(data)
        file.flush()
        return os.fstat(file.fileno())


def _list_directory(directory: Path) -> list[dict[str, Any]]:
    """Upstream's FileEntry list: sorted by name, symlinks described, not followed."""
    with os.scandir(directory) as scan:
        entries = sorted(scan, key=lambda entry: os.fsencode(entry.name))
    files = []
    for entry in entries:
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:  # gone meanwhile; upstream skips entries whose Info() fails
            continue
        files.append(
            {
                "name": _os_text(entry.name),
                "size": info.st_size,
                "modified": _rfc3339(info.st_mtime_ns),
                "mode": go_file_mode(info.st_mode),
                "is_dir": stat.S_ISDIR(info.st_mode),
            }
        )
    return files


def _content_type(path: Path) -> str:
    """Go's mime.TypeByExtension, which adds charset=utf-8 to text types."""
    if not mimetypes.inited:
        mimetypes.init()
    suffix = path.suffix
    found = mimetypes.types_map.get(suffix) or mimetypes.types_map.get(suffix.lower())
    if found is None:
        return "application/octet-stream"
    return f"{found}; charset=utf-8" if found.startswith("text/") else found


async def _read_form(request: web.Request) -> tuple[dict[str, str], dict[str, bytes]]:
    """(values, files) of a multipart body, first part of each name winning, as Go keeps them.

    A malformed body gives an empty form (gin's PostForm ignores the parse error); content
    beyond MAX_BODY_SIZE raises HTTPRequestEntityTooLarge.
    """
    values: dict[str, str] = {}
    files: dict[str, bytes] = {}
    total = 0
    try:
        reader = await request.multipart()
        while (part := await reader.next()) is not None:
            if not isinstance(part, BodyPartReader):
                continue
            chunks = []
            while chunk := await part.read_chunk(_CHUNK_SIZE):
                total += len(chunk)
                if total > MAX_BODY_SIZE:
                    raise web.HTTPRequestEntityTooLarge(MAX_BODY_SIZE, total)
                chunks.append(chunk)
            if not part.name:
                continue
            if part.filename:
                files.setdefault(part.name, b"".join(chunks))
            else:
                values.setdefault(part.name, _go_text(b"".join(chunks)))
    except (ValueError, KeyError, AssertionError):
        return {}, {}
    return values, files


# --- The server ----------------------------------------------------------------------------


class PicoD:
    """Upstream PicoD's handlers over one workspace."""

    def __init__(self, workspace: Workspace, public_key: RSAPublicKey | None) -> None:
        """public_key None disables authentication (--auth none)."""
        self.workspace = workspace
        self.public_key = public_key
        self.process_groups = ProcessGroups()
        self._started = time.monotonic_ns()

    def make_app(self) -> web.Application:
        app = web.Application(
            client_max_size=MAX_BODY_SIZE,
            middlewares=[_log_requests, _limit_body, _gin_not_found],
        )
        app.router.add_get("/health", self.health, allow_head=False)
        app.router.add_post("/api/execute", self._authenticated(self.execute))
        app.router.add_post("/api/files", self._authenticated(self.upload))
        app.router.add_get("/api/files", self._authenticated(self.list_files), allow_head=False)
        app.router.add_get(
            r"/api/files/{path:[\s\S]*}", self._authenticated(self.download), allow_head=False
        )
        return app

    def _authenticated(self, handler: Handler) -> Handler:
        key = self.public_key
        if key is None:
            return handler

        async def checked(request: web.Request) -> web.StreamResponse:
            refusal = check_authorization(request.headers.get("Authorization", ""), key)
            return refusal or await handler(request)

        return checked

    async def health(self, request: web.Request) -> web.Response:
        uptime = go_duration_string(time.monotonic_ns() - self._started)
        return _json(
            200, {"service": "PicoD", "status": "ok", "uptime": uptime, "version": VERSION}
        )

    async def execute(self, request: web.Request) -> web.Response:
        try:
            body = bind_json(await request.read(), _EXECUTE_REQUEST)
        except BadRequest as error:
            return _error(400, str(error))
        if not body["command"]:
            return _error(400, "command cannot be empty")
        timeout = DEFAULT_TIMEOUT
        if body["timeout"]:
            try:
                timeout = parse_duration(body["timeout"])
            except ValueError as error:
                return _error(400, f"Invalid timeout format: {error}")
        cwd = self.workspace.root
        if body["working_dir"]:
            try:
                cwd = self.workspace.resolve(body["working_dir"])
            except ValueError as error:
                return _error(400, f"Invalid working directory: {error}")
            if not cwd.exists():
                try:
                    self.workspace.mkdirs(cwd)
                except (OSError, WorkspaceEscape) as error:
                    reason = (
                        _path_error("mkdir", cwd, error) if isinstance(error, OSError) else error
                    )
                    return _error(500, f"Failed to create working directory: {reason}")
        env = {**os.environ, **(body["env"] or {})}
        result = await run_command(body["command"], timeout, cwd, env, self.process_groups)
        return _json(200, result.to_json())

    async def upload(self, request: web.Request) -> web.Response:
        content_type = re.split("[ ;]", request.headers.get("Content-Type", ""), maxsplit=1)[0]
        if content_type.startswith("multipart/form-data"):
            values, files = await _read_form(request)
            if not values.get("path"):
                return _error(400, "Missing 'path' field")
            if "file" not in files:
                return _error(400, "Failed to get file: http: no such file")
            try:
                target = self.workspace.resolve(values["path"])
            except ValueError as error:
                return _error(400, str(error))
            mode = parse_file_mode(values.get("mode", ""))
            return await self._save(target, files["file"], mode, multipart=True)
        raw = await request.read()
        try:  # up to 32 MiB to parse and decode: off the event loop
            body = await asyncio.to_thread(bind_json, raw, _UPLOAD_REQUEST)
            target = self.workspace.resolve(body["path"])
            data = await asyncio.to_thread(decode_base64, body["content"])
        except ValueError as error:
            return _error(400, str(error))
        return await self._save(target, data, parse_file_mode(body["mode"]), multipart=False)

    async def _save(self, target: Path, data: bytes, mode: int, *, multipart: bool) -> web.Response:
        """Write an upload; the two upstream upload paths word their failures differently."""
        if target != self.workspace.root:
            try:
                await asyncio.to_thread(self.workspace.mkdirs, target.parent)
            except WorkspaceEscape as error:
                return _error(400, str(error))
            except OSError as error:
                reason = _path_error("mkdir", error.filename or target.parent, error)
                return _error(500, f"Failed to create directory: {reason}")
        try:
            fd = await asyncio.to_thread(os.open, target, _WRITE_FLAGS, mode)
        except OSError as error:
            if multipart:
                return _error(500, "Failed to create destination file")
            return _error(500, f"Failed to write file: {_path_error('open', target, error)}")
        try:
            info = await asyncio.to_thread(_write_and_stat, fd, data)
        except OSError as error:
            if multipart:
                return _error(500, "Failed to save file content")
            return _error(500, f"Failed to write file: {_path_error('write', target, error)}")
        return _json(
            200,
            {
                "path": _os_text(os.path.relpath(target, self.workspace.root)),
                "size": info.st_size,
                "mode": go_file_mode(info.st_mode),
                "modified": _rfc3339(info.st_mtime_ns),
            },
        )

    async def list_files(self, request: web.Request) -> web.Response:
        path = request.query.get("path", "")
        if not path:
            return _error(400, "Missing 'path' query parameter")
        try:
            directory = self.workspace.resolve(path)
        except ValueError as error:
            return _error(400, str(error))
        try:
            files = await asyncio.to_thread(_list_directory, directory)
        except FileNotFoundError:
            return _error(404, "Directory not found")
        except OSError as error:
            operation = "readdirent" if directory.is_file() else "open"
            reason = _path_error(operation, directory, error)
            return _error(500, f"Failed to read directory: {reason}")
        return _json(200, {"files": files})

    async def download(self, request: web.Request) -> web.StreamResponse:
        try:
            target = self.workspace.resolve(request.match_info["path"])
        except ValueError as error:
            return _error(400, str(error))
        try:
            info = target.stat()
        except FileNotFoundError:
            return _error(404, "File not found")
        except OSError as error:
            return _error(500, f"Failed to get file info: {_path_error('stat', target, error)}")
        if stat.S_ISDIR(info.st_mode):
            return _error(400, "Path is a directory, not a file")
        if not stat.S_ISREG(info.st_mode):  # upstream would block on a FIFO
            return _error(400, "Path is not a regular file")
        try:
            file = await asyncio.to_thread(open, target, "rb")
        except PermissionError:  # http.ServeFile's answers
            return web.Response(status=403, text="403 Forbidden")
        except OSError:
            return web.Response(status=404, text="404 page not found")
        with file:
            return await self._stream(request, target, file)

    async def _stream(
        self, request: web.Request, target: Path, file: BinaryIO
    ) -> web.StreamResponse:
        info = os.fstat(file.fileno())
        filename = _os_text(target.name).replace("\r", " ").replace("\n", " ")
        response = web.StreamResponse(
            headers={
                "Content-Description": "File Transfer",
                "Content-Transfer-Encoding": "binary",
                "Content-Disposition": f'attachment; filename="{filename}"',
                "Content-Type": _content_type(target),
            }
        )
        response.content_length = info.st_size
        response.last_modified = info.st_mtime
        await response.prepare(request)
        remaining = info.st_size
        while remaining > 0:
            chunk = await asyncio.to_thread(file.read, min(_CHUNK_SIZE, remaining))
            if not chunk:
                break
            await response.write(chunk)
            remaining -= len(chunk)
        await response.write_eof()
        return response


def _too_large() -> web.Response:
    return _json(
        413,
        {
            "detail": f"maximum allowed size is {MAX_BODY_SIZE} bytes",
            "error": "request body too large",
        },
    )


@web.middleware
async def _log_requests(request: web.Request, handler: Handler) -> web.StreamResponse:
    """One line per request: method, path (still percent-encoded) and status; nothing else."""
    status = 500
    try:
        response = await handler(request)
        status = response.status
        return response
    except web.HTTPException as error:
        status = error.status
        raise
    finally:
        log.info("%s %s %d", request.method, request.rel_url.raw_path, status)


@web.middleware
async def _limit_body(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Upstream's maxBodySizeMiddleware, also applied to bodies without Content-Length."""
    if (request.content_length or 0) > MAX_BODY_SIZE:
        return _too_large()
    try:
        return await handler(request)
    except web.HTTPRequestEntityTooLarge:
        return _too_large()


@web.middleware
async def _gin_not_found(request: web.Request, handler: Handler) -> web.StreamResponse:
    """gin answers unknown routes and wrong methods alike with a plain-text 404."""
    try:
        return await handler(request)
    except (web.HTTPNotFound, web.HTTPMethodNotAllowed):
        return web.Response(status=404, text="404 page not found")


# --- Command line --------------------------------------------------------------------------


def _listen_port() -> int:
    text = os.environ.get("PORT", "")
    if not text:
        raise ValueError("the PORT environment variable is required")
    if not re.fullmatch("[0-9]{1,5}", text) or int(text) > 65535:
        raise ValueError(f"invalid PORT {text!r}: want a number from 0 to 65535")
    return int(text)


async def serve(picod: PicoD, host: str, port: int) -> int:
    """Serve until SIGTERM or SIGINT, then kill the commands' process groups; exit status."""
    runner = web.AppRunner(picod.make_app(), access_log=None, shutdown_timeout=_SHUTDOWN_TIMEOUT)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except OSError as error:
        await runner.cleanup()
        reason = _errno_text(error) if error.errno else str(error)
        print(f"picod: cannot listen on {host}:{port}: {reason}", file=sys.stderr)
        return 1
    bound = runner.addresses[0][1] if runner.addresses else port
    log.info("listening on %s:%s, workspace %s", host, bound, picod.workspace.root)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    log.info("shutting down")
    picod.process_groups.kill_all()
    await runner.cleanup()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m localcube.picod",
        description="PicoD-compatible code-interpreter daemon (listens on $HOST:$PORT).",
    )
    parser.add_argument(
        "--workspace", default=".", help="root of all file operations (created if missing)"
    )
    parser.add_argument(
        "--auth",
        choices=("jwt", "none"),
        default="jwt",
        help=f"jwt: verify RS256 bearer tokens with ${PUBLIC_KEY_ENV} (default); none: no auth",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format="%(asctime)s picod: %(message)s"
    )
    try:
        port = _listen_port()
        key = load_public_key(os.environ.get(PUBLIC_KEY_ENV)) if args.auth == "jwt" else None
        workspace = Workspace(args.workspace)
    except ValueError as error:
        print(f"picod: {error}", file=sys.stderr)
        return 1
    except OSError as error:
        print(f"picod: workspace: {_path_error('mkdir', args.workspace, error)}", file=sys.stderr)
        return 1
    host = os.environ.get("HOST") or "127.0.0.1"
    return asyncio.run(serve(PicoD(workspace, key), host, port))


if __name__ == "__main__":
    sys.exit(main())
