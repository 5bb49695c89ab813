"""Two TCP streams joined: bytes copied both ways unchanged, with half-closes. Used by the
launcher's host relay and the node's Service proxy alike."""

from __future__ import annotations

import asyncio
import contextlib

CHUNK = 65536


async def join(
    outer: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    inner: tuple[asyncio.StreamReader, asyncio.StreamWriter],
) -> None:
    """Copy each side to the other until both have ended; the inner writer closed after."""
    try:
        await asyncio.gather(_pump(outer[0], inner[1]), _pump(inner[0], outer[1]))
    finally:
        inner[1].close()


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until end of file, then half-close the other side."""
    with contextlib.suppress(OSError):
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
