"""Upstream PicoD's HTTP handlers over one workspace, answering with its JSON bodies."""

import asyncio
import os
import re
import stat
import time
from pathlib import Path
from typing import Any

from aiohttp import web

from localcube.picod.binding import (
    EXECUTE_REQUEST,
    UPLOAD_REQUEST,
    BadRequest,
    bind_json,
    decode_base64,
    parse_file_mode,
)
from localcube.picod.commands import ProcessGroups, run_command
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
    os_text,
    path_error,
    rfc3339,
)
from localcube.validation import parse_duration
from localcube.workspace import Workspace, WorkspaceEscape

MAX_BODY_SIZE = 32 << 20
DEFAULT_TIMEOUT = 60.0
VERSION = "0.0.1"
_MULTIPART_SAVE_FAILURES = {
    "open": "Failed to create destination file",
    "write": "Failed to save file content",
}


def json_response(status: int, body: dict[str, Any]) -> web.Response:
    return web.Response(status=status, text=go_json(body), content_type="application/json")


def error_response(status: int, message: str) -> web.Response:
    return json_response(status, {"code": status, "error": message})


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
            body = bind_json(await request.read(), EXECUTE_REQUEST)
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
                cwd = self.workspace.resolve(body["working_dir"])
            except ValueError as error:
                return error_response(400, f"Invalid working directory: {error}")
            if not cwd.exists():
                try:
                    self.workspace.mkdirs(cwd)
                except (OSError, WorkspaceEscape) as error:
                    reason = (
                        path_error("mkdir", cwd, error) if isinstance(error, OSError) else error
                    )
                    return error_response(500, f"Failed to create working directory: {reason}")
        env = {**os.environ, **(body["env"] or {})}
        result = await run_command(body["command"], timeout, cwd, env, self.process_groups)
        return json_response(200, result.to_json())

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
            return await self._save(target, files["file"], mode, multipart=True)
        raw = await request.read()
        try:  # up to 32 MiB to parse and decode: off the event loop
            body = await asyncio.to_thread(bind_json, raw, UPLOAD_REQUEST)
            target = self.workspace.resolve(body["path"])
            data = await asyncio.to_thread(decode_base64, body["content"])
        except ValueError as error:
            return error_response(400, str(error))
        return await self._save(target, data, parse_file_mode(body["mode"]), multipart=False)

    async def _save(self, target: Path, data: bytes, mode: int, *, multipart: bool) -> web.Response:
        """Write an upload; the two upstream upload paths word their failures differently."""
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
                "path": os_text(os.path.relpath(target, self.workspace.root)),
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
            directory = self.workspace.resolve(path)
        except ValueError as error:
            return error_response(400, str(error))
        try:
            files = await asyncio.to_thread(list_directory, directory)
        except FileNotFoundError:
            return error_response(404, "Directory not found")
        except OSError as error:
            operation = "readdirent" if directory.is_file() else "open"
            reason = path_error(operation, directory, error)
            return error_response(500, f"Failed to read directory: {reason}")
        return json_response(200, {"files": files})

    async def download(self, request: web.Request) -> web.StreamResponse:
        try:
            target = self.workspace.resolve(request.match_info["path"])
        except ValueError as error:
            return error_response(400, str(error))
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
