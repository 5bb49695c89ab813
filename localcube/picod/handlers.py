"""Upstream PicoD's HTTP handlers over one workspace, answering with its JSON bodies."""

import asyncio
import os
import re
import stat
import time
from pathlib import Path
from typing import Any

from aiohttp import web

from agentcube_contract.durations import parse_duration
from localcube.picod.binding import (
    EXECUTE_REQUEST,
    UPLOAD_REQUEST,
    BadRequest,
    bind_json,
    decode_base64,
    parse_file_mode,
)
from localcube.picod.commands import ProcessGroups, run_command
from localcube.picod.compression import GO_BUFFER_SIZE
from localcube.picod.files import (
    create_file,
    list_directory,
    read_form,
    stream_file,
    write_and_stat,
)
from localcube.picod.gocompat import (
    go_duration_string,
    go_file_mode,
    go_json,
    path_error,
    rfc3339,
)
from localcube.picod.workspace import Workspace, WorkspaceEscape

MAX_BODY_SIZE = 32 << 20
DEFAULT_TIMEOUT = 60.0
VERSION = "0.0.1"
_MULTIPART_SAVE_FAILURES = {
    "open": "Failed to create destination file",
    "write": "Failed to save file content",
}


# What go_string and os.fsdecode keep of an invalid UTF-8 byte: a lone surrogate.
_INVALID_BYTE = re.compile("[\udc80-\udcff]")


def json_response(status: int, body: dict[str, Any]) -> web.Response:
    """gin's c.JSON: Go's JSON, each invalid UTF-8 byte of a Go string written as Go's
    encoding/json writes it, a `\\ufffd` escape (command output: commands.go_string);
    net/http sends a Content-Length only for a body within its 2 KiB buffer, else chunks."""
    text = _INVALID_BYTE.sub(lambda _: "\\ufffd", go_json(body))
    data = text.encode()
    response = web.Response(
        status=status, body=data, content_type="application/json", charset="utf-8"
    )
    if len(data) > GO_BUFFER_SIZE:
        response.enable_chunked_encoding()
    return response


def error_response(status: int, message: str) -> web.Response:
    return json_response(status, {"code": status, "error": message})


async def read_body(request: web.Request) -> bytes:
    """The whole body; past MAX_BODY_SIZE, BadRequest as http.MaxBytesReader words it.

    Only a declared Content-Length over the limit is answered 413 (by the server's
    middleware); a chunked body fails here, while the JSON decoder reads it.
    """
    try:
        return await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise BadRequest("http: request body too large") from None


class _Refused(Exception):
    """A request refused with upstream's error answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.response = error_response(status, message)


class PicoD:
    """Upstream PicoD's handlers over one workspace."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.process_groups = ProcessGroups()
        self._started = time.monotonic_ns()

    async def health(self, request: web.Request) -> web.Response:
        uptime = go_duration_string(time.monotonic_ns() - self._started)
        return json_response(
            200, {"service": "PicoD", "status": "ok", "uptime": uptime, "version": VERSION}
        )

    async def execute(self, request: web.Request) -> web.Response:
        try:
            body = bind_json(await read_body(request), EXECUTE_REQUEST)
        except BadRequest as error:
            return error_response(400, str(error))
        if not body["command"]:
            return error_response(400, "command cannot be empty")
        timeout = DEFAULT_TIMEOUT
        if body["timeout"]:
            try:
                timeout = parse_duration(body["timeout"])
            except ValueError as error:
                return error_response(400, f"Invalid timeout format: {error}")
        cwd = self.workspace.root
        if body["working_dir"]:
            try:
                cwd = await asyncio.to_thread(self._working_directory, body["working_dir"])
            except _Refused as refusal:
                return refusal.response
        env = {**os.environ, **(body["env"] or {})}
        result = await run_command(body["command"], timeout, cwd, env, self.process_groups)
        return json_response(200, result.to_json())

    def _working_directory(self, path: str) -> Path:
        """Upstream's choice of working directory: refuse, create (mkdirSafe) or take as is.

        Raises _Refused with upstream's answer. A path that exists but cannot be entered is
        returned as is: the command then fails to start, as upstream's does.
        """
        try:
            candidate = self.workspace.candidate(path)
            candidate.stat()
        except ValueError as error:
            raise _Refused(400, f"Invalid working directory: {error}") from None
        except FileNotFoundError:
            try:
                self.workspace.check_new_directory(candidate)
                self.workspace.mkdirs(candidate)
            except WorkspaceEscape as error:
                raise _Refused(500, f"Failed to create working directory: {error}") from None
            except OSError as error:
                reason = path_error("mkdir", error.filename or candidate, error)
                raise _Refused(500, f"Failed to create working directory: {reason}") from None
        except OSError:
            return candidate
        try:
            return self.workspace.resolve(path)
        except ValueError as error:
            raise _Refused(400, f"Invalid working directory: {error}") from None

    async def upload(self, request: web.Request) -> web.Response:
        content_type = re.split("[ ;]", request.headers.get("Content-Type", ""), maxsplit=1)[0]
        if content_type.startswith("multipart/form-data"):
            values, files = await read_form(request, MAX_BODY_SIZE)
            if not values.get("path"):
                return error_response(400, "Missing 'path' field")
            if "file" not in files:
                return error_response(400, "Failed to get file: http: no such file")
            try:
                target = self.workspace.resolve(values["path"])
            except ValueError as error:
                return error_response(400, str(error))
            mode = parse_file_mode(values.get("mode", ""))
            named = self.workspace.upstream_name(values["path"])
            return await self._save(target, named, files["file"], mode, multipart=True)
        try:  # up to 32 MiB to parse and decode: off the event loop
            raw = await read_body(request)
            body = await asyncio.to_thread(bind_json, raw, UPLOAD_REQUEST)
            target = self.workspace.resolve(body["path"])
            data = await asyncio.to_thread(decode_base64, body["content"])
        except ValueError as error:
            return error_response(400, str(error))
        named = self.workspace.upstream_name(body["path"])
        mode = parse_file_mode(body["mode"])
        return await self._save(target, named, data, mode, multipart=False)

    async def _save(
        self, target: Path, named: Path, data: bytes, mode: int, *, multipart: bool
    ) -> web.Response:
        """Write an upload to `target`, answering with the path upstream names (`named`);
        the two upstream upload paths word their failures differently."""
        if target != self.workspace.root:
            try:
                await asyncio.to_thread(self.workspace.mkdirs, target.parent)
            except WorkspaceEscape as error:
                return error_response(400, str(error))
            except OSError as error:
                reason = path_error("mkdir", error.filename or target.parent, error)
                return error_response(500, f"Failed to create directory: {reason}")
        op = "open"
        try:
            fd = await asyncio.to_thread(create_file, target, mode)
            op = "write"
            info = await asyncio.to_thread(write_and_stat, fd, data)
        except OSError as error:
            if multipart:
                return error_response(500, _MULTIPART_SAVE_FAILURES[op])
            return error_response(500, f"Failed to write file: {path_error(op, target, error)}")
        return json_response(
            200,
            {
                "path": os.path.relpath(named, self.workspace.root),
                "size": info.st_size,
                "mode": go_file_mode(info.st_mode),
                "modified": rfc3339(info.st_mtime_ns),
            },
        )

    async def list_files(self, request: web.Request) -> web.Response:
        path = request.query.get("path", "")
        if not path:
            return error_response(400, "Missing 'path' query parameter")
        try:
            directory = self.workspace.resolve_to_read(path)
        except ValueError as error:
            return error_response(400, str(error))
        if directory is None:
            return error_response(404, "Directory not found")
        try:
            files = await asyncio.to_thread(list_directory, directory)
        except FileNotFoundError:
            return error_response(404, "Directory not found")
        except OSError as error:
            reason = path_error("open", directory, error)  # os.ReadDir opens with O_DIRECTORY
            return error_response(500, f"Failed to read directory: {reason}")
        return json_response(200, {"files": files})

    async def download(self, request: web.Request) -> web.StreamResponse:
        try:
            target = self.workspace.resolve_to_read(request.match_info["path"])
        except ValueError as error:
            return error_response(400, str(error))
        if target is None:
            return error_response(404, "File not found")
        try:
            info = target.stat()
        except FileNotFoundError:
            return error_response(404, "File not found")
        except OSError as error:
            return error_response(
                500, f"Failed to get file info: {path_error('stat', target, error)}"
            )
        if stat.S_ISDIR(info.st_mode):
            return error_response(400, "Path is a directory, not a file")
        if not stat.S_ISREG(info.st_mode):  # upstream would block on a FIFO
            return error_response(400, "Path is not a regular file")
        try:
            file = await asyncio.to_thread(open, target, "rb")
        except PermissionError:  # http.ServeFile's answers
            return web.Response(status=403, text="403 Forbidden")
        except OSError:
            return web.Response(status=404, text="404 page not found")
        with file:
            return await stream_file(request, target, file)
