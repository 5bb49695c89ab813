"""Upstream's file transfers: multipart uploads, writing files, listings, downloads."""

import mimetypes
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO

from aiohttp import BodyPartReader, web
from aiohttp.http_exceptions import BadHttpMessage

from localcube.picod.compression import COMPRESSED
from localcube.picod.gocompat import go_file_mode, go_text, os_text, rfc3339
from localcube.picod.servecontent import serve_content

_CHUNK_SIZE = 256 << 10
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC


def create_file(path: Path, mode: int) -> int:
    """A descriptor to write path, truncated or created with mode; a symlink is refused."""
    return os.open(path, _WRITE_FLAGS, mode)


def write_and_stat(fd: int, data: bytes) -> os.stat_result:
    with os.fdopen(fd, "wb") as file:
        file.write(data)
        file.flush()
        return os.fstat(file.fileno())


def list_directory(directory: Path) -> list[dict[str, Any]]:
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
                "name": entry.name,  # undecodable bytes kept: json_response escapes them
                "size": info.st_size,
                "modified": rfc3339(info.st_mtime_ns),
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


async def read_form(request: web.Request, limit: int) -> tuple[dict[str, str], dict[str, bytes]]:
    """(values, files) of a multipart body, first part of each name winning, as Go keeps them.

    A body that is malformed or longer than limit bytes gives an empty form: gin's PostForm
    ignores the error of ParseMultipartForm, which reads through http.MaxBytesReader.
    """
    values: dict[str, str] = {}
    files: dict[str, bytes] = {}
    try:
        reader = await request.multipart()
        while (part := await reader.next()) is not None:
            if not isinstance(part, BodyPartReader):
                continue
            chunks = []
            while chunk := await part.read_chunk(_CHUNK_SIZE):
                if request.content.total_bytes > limit:
                    return {}, {}
                chunks.append(chunk)
            if not part.name:
                continue
            if part.filename:
                files.setdefault(part.name, b"".join(chunks))
            else:
                values.setdefault(part.name, go_text(b"".join(chunks)))
    except (ValueError, KeyError, AssertionError, BadHttpMessage):
        return {}, {}
    return values, files


async def stream_file(request: web.Request, path: Path, file: BinaryIO) -> web.StreamResponse:
    """Send the open file as upstream's download does: an attachment named after path."""
    filename = os_text(path.name).replace("\r", " ").replace("\n", " ")
    headers = {
        "Content-Description": "File Transfer",
        "Content-Transfer-Encoding": "binary",
        "Content-Disposition": f'attachment; filename="{filename}"',
        "Content-Type": _content_type(path),
    }
    return await serve_content(request, file, headers, compressed=bool(request.get(COMPRESSED)))
