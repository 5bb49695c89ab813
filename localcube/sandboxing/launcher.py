"""Sandbox processes: start one for a runtime, wait until it serves, end it without orphans.

Each sandbox is the leader of its own session (setsid), so it outlives a crashed localcube
and everything it started can be found and ended through that session id. A pid is only
trusted together with its start time from /proc, so a recycled pid is never killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import shutil
import signal
import subprocess
import time
from asyncio import FIRST_COMPLETED
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import aiohttp

from agentcube_contract.picod_command import PicodCommand
from localcube.manifests import CODE_INTERPRETER, Runtime
from localcube.sandboxing.bare_python import bare_python_bin
from localcube.sandboxing.picod_template import (
    INHERITED_ENV,
    ForkedSandbox,
    SandboxTemplate,
    TemplateError,
)
from localcube.sandboxing.ports import PortAllocator

_LOG_TAIL_BYTES = 2000
_PROCESS_FILE = "process"  # "PID START_TIME" of the sandbox's session leader
_ENDING_THREADS = 2
_PROBE_INTERVAL = 0.002  # seconds between two readiness probes of a starting sandbox
_PROBE_OFTEN_FOR = 2.0  # ... for this long; then
_PROBE_SLOWLY = 0.05


class SandboxStartError(RuntimeError):
    """The sandbox process could not start or exited before it served."""


class SandboxNotReady(SandboxStartError):
    """The sandbox process runs but did not serve within the ready timeout."""


@dataclass(frozen=True)
class StartedProcess:
    pid: int
    process_start: str
    endpoints: tuple[tuple[str, int], ...]
    workspace: Path


def process_start_time(pid: int) -> str | None:
    """The start time of a live pid (field 22 of /proc/PID/stat), or None if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None
    if fields[0] in ("Z", "X"):  # state: a zombie no longer serves
        return None
    return fields[19]


def is_alive(pid: int, process_start: str) -> bool:
    return process_start_time(pid) == process_start


# How long ending a sandbox keeps killing the members of its session before it gives up on
# one that does not die (stuck in the kernel); its directory is removed all the same.
_KILL_PATIENCE = 0.5


def _sandbox_processes(pid: int, process_start: str) -> list[int]:
    """The members of the sandbox's session, and the sandbox itself while it leads none: the
    template reports a fork's pid before the child calls setsid, so a sandbox ended at once
    (localcube stopping while it starts) may still be in the template's session."""
    members = _session_members(pid)
    if pid not in members and is_alive(pid, process_start):
        members.append(pid)
    return members


def _session_members(session_id: int) -> list[int]:
    members = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fields = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if int(fields[3]) == session_id and fields[0] not in ("Z", "X"):
            members.append(int(entry.name))
    return members


Probe = Callable[[int, str | None], Awaitable[bool]]


@dataclass(frozen=True)
class _ExecutedProcess:
    """A sandbox started by exec (an agent's command, a `--picod-command`): it serves once
    its port accepts connections and its readiness path, if any, answers 2xx."""

    pid: int
    child: subprocess.Popen[bytes]
    port: int
    readiness_path: str | None
    probe: Probe

    async def wait_ready(self, timeout: float, log: Path) -> None:
        started = time.monotonic()
        while True:
            if self.child.poll() is not None:
                raise SandboxStartError(
                    f"sandbox process exited with code {self.child.returncode}: {_tail(log)}"
                )
            if await self.probe(self.port, self.readiness_path):
                return
            waited = time.monotonic() - started
            if waited > timeout:
                raise SandboxNotReady(f"sandbox not ready within {timeout:g}s: {_tail(log)}")
            # Most serve within tens of milliseconds: probe often, and seldom once it is slow.
            await asyncio.sleep(_PROBE_INTERVAL if waited < _PROBE_OFTEN_FOR else _PROBE_SLOWLY)


@dataclass(frozen=True)
class _ForkedProcess:
    """localcube's daemon forked from the template, which reports when it listens."""

    pid: int
    forked: ForkedSandbox

    async def wait_ready(self, timeout: float, log: Path) -> None:
        listening, exited = self.forked.listening, self.forked.exited
        await asyncio.wait((listening, exited), timeout=timeout, return_when=FIRST_COMPLETED)
        if listening.done():
            if listening.exception() is not None:
                raise SandboxStartError(f"{listening.exception()}: {_tail(log)}")
            return
        if exited.done():
            raise SandboxStartError(
                f"sandbox process exited with code {exited.result()}: {_tail(log)}"
            )
        raise SandboxNotReady(f"sandbox not ready within {timeout:g}s: {_tail(log)}")


class SandboxLauncher:
    """Starts and ends sandbox processes under `root` (one directory per sandbox)."""

    def __init__(
        self,
        root: Path,
        public_key_pem: str,
        ready_timeout: float,
        picod_command: PicodCommand | None = None,
    ) -> None:
        """`picod_command`: what runs code-interpreter sandboxes; None: localcube's daemon."""
        self.root = root
        self.public_key_pem = public_key_pem
        self.ready_timeout = ready_timeout
        self.picod_command = picod_command
        self._children: dict[int, subprocess.Popen[bytes]] = {}
        self._http: aiohttp.ClientSession | None = None
        self.ports = PortAllocator()
        self._python_bin = bare_python_bin(root.parent / "sandbox-python")
        self._template = SandboxTemplate()
        self._enders = ThreadPoolExecutor(_ENDING_THREADS, thread_name_prefix="sandbox-end")

    async def open(self) -> None:
        """Get ready to start sandboxes: the template of localcube's daemon imports now."""
        if self.picod_command is None:
            await self._template.start()

    async def start(self, runtime: Runtime, sandbox_id: str) -> StartedProcess:
        """Start a sandbox for `runtime` and return once it serves requests."""
        try:
            allocated = self.ports.allocate(len(runtime.ports))
        except RuntimeError as error:
            raise SandboxStartError(str(error)) from error
        local_ports = {
            port.port: local for port, local in zip(runtime.ports, allocated, strict=True)
        }
        directory = self.root / sandbox_id
        workspace = directory / "workspace"
        workspace.mkdir(parents=True)
        endpoints = tuple((port.path_prefix, local_ports[port.port]) for port in runtime.ports)
        first_port = endpoints[0][1]
        env = {name: os.environ[name] for name in INHERITED_ENV if name in os.environ}
        env["PATH"] = os.pathsep.join(filter(None, [str(self._python_bin), env.get("PATH")]))
        env.update(runtime.env)
        env.update({"HOME": str(workspace), "HOST": "127.0.0.1", "PORT": str(first_port)})
        env.update({f"PORT_{container}": str(local) for container, local in local_ports.items()})
        if runtime.kind == CODE_INTERPRETER and runtime.auth_mode == "picod":
            # As upstream, the Router's public key is given only with authMode `picod`
            # (pkg/workloadmanager/workload_builder.go:313-324).
            env["PICOD_AUTH_PUBLIC_KEY"] = self.public_key_pem
        log = directory / "sandbox.log"
        process: _ForkedProcess | _ExecutedProcess
        try:
            if runtime.kind == CODE_INTERPRETER and self.picod_command is None:
                process = await self._fork_picod(runtime, workspace, env, log)
            else:
                process = self._execute(runtime, first_port, workspace, env, log)
        except BaseException:  # a start that failed, or was cancelled (its client went away)
            shutil.rmtree(directory, ignore_errors=True)
            self.ports.release(local_ports.values())
            raise
        start = process_start_time(process.pid) or ""
        # Recorded before readiness, so a crash while it starts leaves no orphan: see sweep().
        (directory / _PROCESS_FILE).write_text(f"{process.pid} {start}")
        try:
            await process.wait_ready(self.ready_timeout, log)
        except BaseException:
            await self.end(process.pid, start, directory, local_ports.values())
            raise
        return StartedProcess(process.pid, start, endpoints, workspace)

    async def _fork_picod(
        self, runtime: Runtime, workspace: Path, env: dict[str, str], log: Path
    ) -> _ForkedProcess:
        """localcube's daemon, forked from the template; it says when it listens."""
        auth = "none" if runtime.auth_mode == "none" else "jwt"
        argv = ["--workspace", str(workspace), "--auth", auth]
        if runtime.stateful:  # a Jupyter kernel behind /api/run_code (localcube's extension)
            argv += ["--kernel-state", str(workspace.parent / "kernel")]
        fork = asyncio.ensure_future(
            self._template.fork(argv, workspace, env, log, runtime.memory_limit_bytes)
        )
        try:
            forked = await asyncio.shield(fork)
        except TemplateError as error:
            raise SandboxStartError(str(error)) from error
        except asyncio.CancelledError:  # the fork goes on: end what it starts
            with contextlib.suppress(TemplateError):
                forked = await fork
                pid = forked.pid.result()
                await self.end(pid, process_start_time(pid) or "", log.parent)
            raise
        return _ForkedProcess(forked.pid.result(), forked)

    def _execute(
        self, runtime: Runtime, port: int, workspace: Path, env: dict[str, str], log: Path
    ) -> _ExecutedProcess:
        """The runtime's own command, or the code interpreters' `--picod-command`."""
        if runtime.kind == CODE_INTERPRETER:
            assert self.picod_command is not None
            command = self.picod_command.argv(port, workspace)
            readiness_path: str | None = "/health"
        else:
            command = list(runtime.command)
            readiness_path = runtime.readiness_path
        output = open(log, "wb")  # noqa: SIM115 - handed to the child
        try:
            child = subprocess.Popen(
                command,
                cwd=workspace,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as error:
            raise SandboxStartError(f"cannot start {command[0]}: {error}") from error
        finally:
            output.close()
        self._children[child.pid] = child
        if runtime.memory_limit_bytes:
            limit = runtime.memory_limit_bytes
            # Memory in use, as a pod's limit counts it: RLIMIT_DATA (writable private
            # memory), not RLIMIT_AS, which counts every thread's reserved stack and malloc
            # arena and so stops a threaded server after a few concurrent calls. Where the
            # platform refuses, run without: localcube is no security boundary.
            with contextlib.suppress(OSError, ValueError):
                resource.prlimit(child.pid, resource.RLIMIT_DATA, (limit, limit))
        return _ExecutedProcess(child.pid, child, port, readiness_path, self._probe)

    async def end(
        self, pid: int, process_start: str, directory: Path, ports: Iterable[int] = ()
    ) -> None:
        """Kill every process of the sandbox's session, remove its directory and release its
        ports; return once the processes are gone. The scanning, waiting and removing run in
        a worker thread, so the event loop keeps serving while sandboxes end. Few threads:
        more would only contend with the event loop for the interpreter lock. A caller that
        is cancelled (its client went away) stops waiting; the ending still completes."""
        await asyncio.shield(self._ending(pid, process_start, directory, tuple(ports)))

    async def _ending(
        self, pid: int, process_start: str, directory: Path, ports: tuple[int, ...]
    ) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._enders, self._end_now, pid, process_start, directory)
        self.ports.release(ports)

    def _end_now(self, pid: int, process_start: str, directory: Path) -> None:
        """Blocking part of `end`.

        Linux never hands out a pid that is still some session's id, so while members of
        the session remain, the id is still ours even if its leader already died.
        """
        current_start = process_start_time(pid)
        if current_start is None or current_start == process_start:
            give_up = time.monotonic() + _KILL_PATIENCE
            while time.monotonic() < give_up:
                members = _sandbox_processes(pid, process_start)
                if not members:
                    break
                for member in members:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(member, signal.SIGKILL)
                self.reap()
                time.sleep(0.001)  # a killed process is gone within a millisecond or two
        child = self._children.pop(pid, None)
        if child is not None:
            child.wait()
        shutil.rmtree(directory, ignore_errors=True)

    def directory_of(self, sandbox_id: str) -> Path:
        return self.root / sandbox_id

    async def sweep(self, known_sandbox_ids: set[str]) -> list[str]:
        """End sandboxes on disk that no record knows (started when localcube crashed)."""
        swept = []
        for directory in self.root.iterdir():
            if directory.name in known_sandbox_ids:
                continue
            try:
                pid, start = (directory / _PROCESS_FILE).read_text().split()
            except (OSError, ValueError):
                pid, start = "0", ""
            if int(pid) > 0:
                await self.end(int(pid), start, directory)
            else:
                await asyncio.get_running_loop().run_in_executor(
                    self._enders, partial(shutil.rmtree, directory, ignore_errors=True)
                )
            swept.append(directory.name)
        return swept

    def reap(self) -> None:
        """Collect exited children so they do not linger as zombies."""
        for child in list(self._children.values()):
            child.poll()

    async def close(self) -> None:
        await self._template.close()
        if self._http is not None:
            await self._http.close()
        self._enders.shutdown(wait=True)

    async def _probe(self, port: int, readiness_path: str | None) -> bool:
        """Whether the port accepts connections and, with a readiness path, answers 2xx."""
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            return False
        writer.close()
        if readiness_path is None:
            return True
        if self._http is None:
            # No connection kept: each probes a sandbox that has just started, once.
            self._http = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(force_close=True),
                timeout=aiohttp.ClientTimeout(total=2),
            )
        try:
            async with self._http.get(f"http://127.0.0.1:{port}{readiness_path}") as answer:
                return 200 <= answer.status < 300
        except (TimeoutError, aiohttp.ClientError):
            return False


def _tail(log: Path) -> str:
    try:
        data = log.read_bytes()[-_LOG_TAIL_BYTES:]
    except FileNotFoundError:
        return "(no output)"
    return data.decode(errors="replace").strip() or "(no output)"
