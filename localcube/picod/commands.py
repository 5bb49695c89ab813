"""Commands run like upstream's exec.CommandContext, each in a process group of its own."""

import asyncio
import contextlib
import json
import os
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localcube.picod.gocompat import errno_text, path_error, rfc3339

TIMEOUT_EXIT_CODE = 124
_KILL_GRACE = 2.0  # seconds to wait for a killed group's output pipes to close


def go_string(data: bytes) -> str:
    """Go's string(data) of a command's output (pkg/picod/execute.go:153-156): invalid
    UTF-8 bytes kept, one lone surrogate each, for handlers.json_response to escape."""
    return data.decode("utf-8", "surrogateescape")


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
            "start_time": rfc3339(self.start_ns),
            "end_time": rfc3339(self.end_ns),
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
    try:  # os.StartProcess checks the directory first, to say what is wrong with it
        os.stat(cwd)
    except OSError as error:
        return "", path_error("chdir", cwd, error), 1
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
        return "", f"fork/exec {executable}: {errno_text(error)}", 1
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
        return go_string(out), go_string(err), None
    except asyncio.CancelledError:
        groups.kill(process.pid)
        outputs.cancel()
        raise
    finally:
        groups.prune()
    return go_string(out), go_string(err), code if code >= 0 else -1
