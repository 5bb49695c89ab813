"""localcube's side of the PicoD template (localcube/picod/template.py): start it, ask it
for sandboxes, learn when each listens or exits. A template that died is started again on
the next request."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_PROJECT_ROOT = Path(__file__).resolve().parents[2]
_MESSAGE_LIMIT = 1 << 20
# What a sandbox gets of localcube's environment.
INHERITED_ENV = ("PATH", "LANG", "LC_ALL", "TZ")


class TemplateError(RuntimeError):
    """The template could not fork a sandbox, or died before it answered."""


@dataclass
class ForkedSandbox:
    """A sandbox process forked by the template; the futures resolve as it reports."""

    request_id: int
    pid: asyncio.Future[int] = field(default_factory=asyncio.Future)
    listening: asyncio.Future[None] = field(default_factory=asyncio.Future)
    exited: asyncio.Future[int] = field(default_factory=asyncio.Future)


class SandboxTemplate:
    """The template process, started on first use; its stderr is localcube's."""

    def __init__(self) -> None:
        self._process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None
        self._ids = itertools.count(1)
        self._by_id: dict[int, ForkedSandbox] = {}
        self._by_pid: dict[int, ForkedSandbox] = {}

    async def start(self) -> None:
        """Start the template unless it runs; it is ready to fork once it has imported."""
        if self._process is not None and self._process.returncode is None:
            return
        # What a sandbox's /proc/PID/environ shows: a fork keeps the template's first one.
        inherited = {name: os.environ[name] for name in INHERITED_ENV if name in os.environ}
        self._process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "localcube.picod.template",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env={**inherited, "PYTHONPATH": str(_PROJECT_ROOT)},
            limit=_MESSAGE_LIMIT,
        )
        self._reader = asyncio.create_task(self._read(self._process))

    async def fork(
        self,
        argv: list[str],
        cwd: Path,
        env: dict[str, str],
        log: Path,
        data_limit: int | None,
    ) -> ForkedSandbox:
        """A new sandbox running `python -m localcube.picod ARGV`; returns once it has a pid.
        Raises TemplateError."""
        await self.start()
        assert self._process is not None and self._process.stdin is not None
        request_id = next(self._ids)
        sandbox = self._by_id[request_id] = ForkedSandbox(request_id)
        request = {
            "id": request_id,
            "argv": argv,
            "cwd": str(cwd),
            "env": env,
            "log": str(log),
            "data_limit": data_limit,
        }
        try:
            self._process.stdin.write(json.dumps(request).encode() + b"\n")
            await self._process.stdin.drain()
            await sandbox.pid
        except (OSError, TemplateError) as error:
            self._by_id.pop(request_id, None)
            raise TemplateError(f"the PicoD template cannot fork: {error}") from error
        return sandbox

    async def close(self) -> None:
        """End the template (its sandboxes live on) and wait for it."""
        if self._process is None:
            return
        if self._process.stdin is not None:
            self._process.stdin.close()
        await self._process.wait()
        if self._reader is not None:
            await self._reader

    async def _read(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdout is not None
        async for line in process.stdout:
            self._dispatch(json.loads(line))
        await process.wait()
        failure = TemplateError(f"the PicoD template exited with code {process.returncode}")
        for sandbox in self._by_id.values():
            for waiting in (sandbox.pid, sandbox.listening):
                if not waiting.done():
                    waiting.set_exception(failure)
                    waiting.exception()  # retrieved: a sandbox may never be asked again
        self._by_id.clear()
        self._by_pid.clear()

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "exited" in message:
            sandbox = self._by_pid.pop(message["pid"], None)
            if sandbox is not None:
                self._by_id.pop(sandbox.request_id, None)
                sandbox.exited.set_result(message["exited"])
            return
        sandbox = self._by_id.get(message["id"])
        if sandbox is None:
            return
        if "error" in message:
            self._by_id.pop(sandbox.request_id)
            sandbox.pid.set_exception(TemplateError(message["error"]))
        elif "pid" in message:
            self._by_pid[message["pid"]] = sandbox
            sandbox.pid.set_result(message["pid"])
        elif message.get("listening"):  # the child's own message may overtake its pid
            sandbox.listening.set_result(None)
        if sandbox.pid.done() and sandbox.listening.done():
            self._by_id.pop(sandbox.request_id)
