"""The stateful code runner of a stateful interpreter: one Jupyter kernel (ipykernel) per
sandbox, driven with jupyter_client, answering in the shape of E2B's `run_code`.

A localcube extension: upstream PicoD runs every command in a fresh process (upstream
issue #223 plans a runner on a Jupyter kernel). The kernel is the session's state, so a
kernel that dies takes the sandbox with it (`on_death`), as a sandbox crash would: a
session whose variables silently vanished would be worse than one that ends.

The kernel is started with the daemon, not with the first run, and not waited for by the
daemon's readiness: a session opens as fast as a stateless one, and its first run waits for
whatever of the kernel's start is left. It runs in a process group of its own (for the
interrupt on timeout) inside the daemon's session, so that ending the sandbox ends it too
(jupyter_client's own launcher would give it a session of its own).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_client.asynchronous.client import AsyncKernelClient
from jupyter_client.connect import write_connection_file

from localcube.picod.commands import ProcessGroups

READY_TIMEOUT = 30.0  # seconds a first run waits for the kernel to start
INTERRUPT_GRACE = 2.0  # seconds an interrupted run has to end before the kernel is killed
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# E2B's Result fields, by the MIME type of the kernel's display data they hold.
_RESULT_FIELDS = {
    "text/plain": "text",
    "text/html": "html",
    "text/markdown": "markdown",
    "image/svg+xml": "svg",
    "image/png": "png",
    "image/jpeg": "jpeg",
    "application/pdf": "pdf",
    "text/latex": "latex",
    "application/json": "json",
    "application/javascript": "javascript",
}


class KernelDied(RuntimeError):
    """The kernel ended; the message says how. Its state is lost."""


@dataclass
class Execution:
    """E2B's Execution: results (the last expression's value and display calls), the logs
    written to stdout and stderr (in the chunks the kernel sent them), the error raised, if
    any, and the kernel's execution count."""

    results: list[dict[str, Any]] = field(default_factory=list)
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    error: dict[str, str] | None = None
    execution_count: int | None = None

    def add(self, message: dict[str, Any]) -> None:
        """Take in one IOPub message of the run."""
        kind, content = message["msg_type"], message["content"]
        if kind == "stream":
            (self.stdout if content["name"] == "stdout" else self.stderr).append(content["text"])
        elif kind in ("execute_result", "display_data"):
            self.results.append(_result(content["data"], main=kind == "execute_result"))
        elif kind == "error":
            self.error = {
                "name": content["ename"],
                "value": content["evalue"],
                "traceback": _ANSI.sub("", "\n".join(content["traceback"])),
            }

    def to_json(self) -> dict[str, Any]:
        return {
            "results": self.results,
            "logs": {"stdout": self.stdout, "stderr": self.stderr},
            "error": self.error,
            "execution_count": self.execution_count,
        }


def _result(data: dict[str, Any], *, main: bool) -> dict[str, Any]:
    result: dict[str, Any] = {"is_main_result": main}
    extra = {}
    for mime, value in data.items():
        if mime in _RESULT_FIELDS:
            result[_RESULT_FIELDS[mime]] = value
        else:
            extra[mime] = value
    if extra:
        result["extra"] = extra
    return result


class Kernel:
    """One ipykernel, its working directory the workspace, its own files in `state_dir`."""

    def __init__(
        self,
        workspace: Path,
        state_dir: Path,
        groups: ProcessGroups,
        on_death: Callable[[str], None],
    ) -> None:
        self._workspace = workspace
        self._state_dir = state_dir
        self._groups = groups
        self._on_death = on_death
        self._process: asyncio.subprocess.Process | None = None
        self._client: AsyncKernelClient | None = None
        self._ended: asyncio.Future[str] | None = None  # how the kernel ended
        self._ready: asyncio.Future[None] | None = None
        self._watcher: asyncio.Future[None] | None = None
        self._lock = asyncio.Lock()  # one run at a time, as in a notebook
        self._stopping = False

    async def start(self) -> None:
        """Launch the kernel; its readiness is awaited by the first run."""
        self._state_dir.mkdir(parents=True, exist_ok=True)
        # Abstract Unix sockets: no TCP port to collide with the ports localcube hands its
        # sandboxes, no socket file to leave behind; messages signed with a key of its own,
        # since any local process could reach the sockets.
        connection_file, _ = write_connection_file(
            str(self._state_dir / "kernel.json"),
            ip=f"@agentcube-kernel-{secrets.token_hex(16)}",
            transport="ipc",
            key=secrets.token_hex(32).encode(),
        )
        env = {
            **os.environ,
            "IPYTHONDIR": str(self._state_dir / "ipython"),
            "JUPYTER_RUNTIME_DIR": str(self._state_dir / "runtime"),
        }
        self._process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "ipykernel_launcher",
            "-f",
            connection_file,
            "--HistoryManager.enabled=False",
            cwd=self._workspace,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,  # its banner; the code's output comes on IOPub
            process_group=0,
        )
        self._groups.add(self._process.pid)
        self._ended = asyncio.get_running_loop().create_future()
        self._watcher = asyncio.ensure_future(self._watch(self._process))
        self._client = AsyncKernelClient(connection_file=connection_file)
        self._client.load_connection_file()
        self._client.start_channels()
        self._ready = asyncio.ensure_future(self._wait_ready())

    async def _wait_ready(self) -> None:
        """jupyter_client's wait_for_ready, tried again until READY_TIMEOUT: it takes a
        missed heartbeat (a kernel busy starting on a loaded machine) for the kernel's death,
        which only the process's end, which run() watches, really tells."""
        assert self._client is not None
        deadline = asyncio.get_running_loop().time() + READY_TIMEOUT
        while True:
            left = deadline - asyncio.get_running_loop().time()
            try:
                return await self._client.wait_for_ready(timeout=max(left, 0.0))
            except RuntimeError:
                if left <= 0:
                    raise

    async def _watch(self, process: asyncio.subprocess.Process) -> None:
        code = await process.wait()
        how = f"the kernel exited with code {code}" if code >= 0 else f"signal {-code} killed it"
        assert self._ended is not None
        self._ended.set_result(how)
        if not self._stopping:
            self._on_death(how)

    async def run(self, code: str, timeout: float) -> Execution:
        """Run code in the kernel, at most `timeout` seconds: then it is interrupted and the
        execution ends with a TimeoutError. Raises KernelDied."""
        async with self._lock:
            assert self._ready is not None and self._client is not None
            try:
                await self._until_ended_or(self._ready)
            except RuntimeError:  # wait_for_ready gave up
                self._kill()
                raise KernelDied(f"the kernel did not start within {READY_TIMEOUT:g} s") from None
            execution = Execution()
            running = asyncio.ensure_future(
                self._client.execute_interactive(
                    code, allow_stdin=False, output_hook=execution.add, timeout=None
                )
            )
            try:
                reply = await self._until_ended_or(running, timeout)
            except TimeoutError:
                reply = await self._interrupt(running)
                execution.error = {
                    "name": "TimeoutError",
                    "value": f"Execution timed out after {timeout:g} seconds",
                    "traceback": (execution.error or {}).get("traceback", ""),
                }
            finally:
                running.cancel()
            execution.execution_count = reply["content"].get("execution_count")
            return execution

    async def _until_ended_or(self, work: asyncio.Future[Any], timeout: float | None = None) -> Any:
        """The result of `work`, unless the kernel ends first (KernelDied) or `timeout`
        passes (TimeoutError)."""
        assert self._ended is not None
        done, _ = await asyncio.wait(
            {work, self._ended}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
        )
        if work in done:
            return work.result()
        if self._ended in done:
            raise KernelDied(self._ended.result())
        raise TimeoutError

    async def _interrupt(self, running: asyncio.Future[Any]) -> Any:
        """What a notebook's interrupt does: SIGINT, a KeyboardInterrupt in the running code.
        A run that does not end within INTERRUPT_GRACE kills the kernel."""
        assert self._process is not None and self._ended is not None
        with contextlib.suppress(ProcessLookupError):
            os.kill(self._process.pid, signal.SIGINT)
        try:
            return await self._until_ended_or(running, INTERRUPT_GRACE)
        except TimeoutError:
            self._kill()
            raise KernelDied(await self._ended) from None

    def _kill(self) -> None:
        if self._process is not None:
            self._groups.kill(self._process.pid)

    async def stop(self) -> None:
        """End the kernel with the daemon (not a death)."""
        self._stopping = True
        if self._client is not None:
            self._client.stop_channels()
        if self._ready is not None:
            self._ready.cancel()
        self._kill()
        if self._ended is not None:
            await self._ended
