"""The launcher's processes: started in their own process groups, waited for until ready,
and all stopped at the end, children included.

Everything a part started is stopped with it: at stop time the supervisor collects each
part's descendants (a pod the node started in a session of its own is still its child),
sends SIGTERM to each process group, and SIGKILL to whatever is left after the grace.

A launcher killed hard (SIGKILL, the OOM killer) can stop nothing, so each part also dies
with it: it starts under `setpriv --pdeathsig KILL`, then checks that its parent is still the
launcher (which may have died before the parent-death signal was set) before it execs the
part's program. The parent-death signal fires when the thread that started the part ends:
parts are started from the launcher's main thread only.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from onemachine.cluster.interrupts import Interrupts
from onemachine.cluster.parts import Part
from onemachine.cluster.readiness import wait_until

LOG = logging.getLogger("onemachine.cluster")
TAIL_LINES = 20
POLL_INTERVAL = 0.1


class PartFailed(Exception):
    """A part that exited or was not ready in time; the message names it and shows the end
    of its log."""


@dataclass
class Running:
    part: Part
    process: subprocess.Popen[bytes]
    log: Path
    started: float

    @property
    def name(self) -> str:
        return self.part.name


class Supervisor:
    """Starts parts and stops them all, last started first. `interrupts` (installed by the
    launcher) may end a wait with Stop, never a start before its part is recorded."""

    def __init__(
        self,
        logs: Path,
        base_env: Mapping[str, str],
        cwd: Path,
        interrupts: Interrupts | None = None,
    ) -> None:
        self._logs = logs
        self._base_env = dict(base_env)
        self._cwd = cwd
        self._interrupts = interrupts or Interrupts()
        self.running: list[Running] = []
        self._stopping: set[int] = set()  # processes seen by the stop, orphans included

    def start(self, part: Part) -> Running:
        log = self._logs / f"{part.name}.log"
        with self._interrupts.held(), log.open("ab") as output:
            process = subprocess.Popen(
                dying_with_this_process(part.argv),
                env={**self._base_env, **part.env},
                cwd=self._cwd,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            running = Running(part, process, log, time.monotonic())
            self.running.append(running)
        LOG.info("started %s (pid %d), log %s", part.name, process.pid, log)
        return running

    def _poll(self, running: Running) -> int | None:
        with self._interrupts.held():
            return running.process.poll()

    def wait_ready(self, running: Running, timeout: float) -> None:
        """Return once the part's probe passes; PartFailed if it exits or times out."""

        def ready() -> bool:
            code = self._poll(running)
            if code is not None:
                raise PartFailed(
                    f"{running.name} exited ({_exit(code)}) before it was ready"
                    + _tail(running.log)
                )
            return running.part.ready()

        left = running.started + timeout - time.monotonic()
        if not wait_until(ready, timeout=left, interval=POLL_INTERVAL):
            raise PartFailed(
                f"{running.name} was not ready within {timeout:g} s "
                f"(waiting for {running.part.ready})" + _tail(running.log)
            )
        LOG.info("%s ready (%.1f s)", running.name, time.monotonic() - running.started)

    def start_ready(self, part: Part, timeout: float) -> Running:
        running = self.start(part)
        self.wait_ready(running, timeout)
        return running

    def wait_any_exit(self) -> Running:
        """Block until one of the parts exits, and return it."""
        exited = wait_until(
            lambda: next((r for r in self.running if self._poll(r) is not None), None),
            timeout=None,
            interval=0.5,
        )
        assert exited is not None  # a wait without a timeout ends only with a value
        return exited

    def describe_exit(self, running: Running) -> str:
        return f"{running.name} exited ({_exit(running.process.returncode)})" + _tail(running.log)

    def stop_all(self, grace: float) -> None:
        """Stop the parts one by one, last started first, so that each still has what it
        depends on while it shuts down (kube-apiserver its etcd): SIGTERM to its process
        group, then SIGKILL to the group and its descendants after `grace` seconds. A signal
        meanwhile ends every grace: all is killed at once."""
        for running in reversed(self.running):
            if self._interrupts.kill_at_once:
                break
            if running.process.poll() is not None:
                continue
            targets = {running.process.pid} | descendants({running.process.pid})
            self._stopping |= targets
            _signal_group(running.process.pid, signal.SIGTERM)
            began = time.monotonic()

            def stopped_or_interrupted(
                running: Running = running, targets: set[int] = targets
            ) -> bool:
                running.process.poll()
                return not any(map(_alive, targets)) or self._interrupts.kill_at_once

            wait_until(stopped_or_interrupted, timeout=grace, interval=POLL_INTERVAL)
            if self._interrupts.kill_at_once:
                break
            if any(_alive(pid) for pid in targets):
                LOG.info("%s still running %g s after SIGTERM: killed", running.name, grace)
            else:
                LOG.info("%s stopped (%.1f s)", running.name, time.monotonic() - began)
            _signal_group(running.process.pid, signal.SIGKILL)
            for pid in targets:
                _signal(pid, signal.SIGKILL)
            running.process.wait()
        if self._interrupts.kill_at_once:
            LOG.info("second signal: killing every part")
        self.kill_all()

    def kill_all(self) -> None:
        """SIGKILL every part's process group and every descendant, at once."""
        targets = self._everything()
        for running in self.running:
            _signal_group(running.process.pid, signal.SIGKILL)
        for pid in targets:
            _signal(pid, signal.SIGKILL)
        for running in self.running:
            running.process.wait()
        wait_until(lambda: not any(map(_alive, targets)), timeout=None, interval=POLL_INTERVAL)

    def _everything(self) -> set[int]:
        pids = {running.process.pid for running in self.running if running.process.poll() is None}
        return pids | descendants(pids) | {pid for pid in self._stopping if _alive(pid)}


# Run by `sh -c` with the launcher's pid as $1 and the part's argv after it.
_SAME_PARENT = '[ "$PPID" = "$1" ] || exit 125; shift; exec "$@"'


def dying_with_this_process(argv: tuple[str, ...]) -> list[str]:
    """`argv` run so that it gets SIGKILL when this process ends, however it ends."""
    return [
        "setpriv",
        "--pdeathsig",
        "KILL",
        "--",
        "sh",
        "-c",
        _SAME_PARENT,
        "sh",
        str(os.getpid()),
        *argv,
    ]


def descendants(roots: set[int]) -> set[int]:
    """Every live process below `roots`, by parent pid."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            parent = _parent(entry)
            if parent is not None:
                children.setdefault(parent, []).append(int(entry.name))
    found: set[int] = set()
    pending = list(roots)
    while pending:
        for child in children.get(pending.pop(), []):
            if child not in found:
                found.add(child)
                pending.append(child)
    return found


def _parent(entry: Path) -> int | None:
    try:
        stat = (entry / "stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def _alive(pid: int) -> bool:
    """Alive and not a zombie (a zombie of ours is reaped by its Popen; another's by init)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def _exit(code: int) -> str:
    return f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"


def _tail(log: Path) -> str:
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()[-TAIL_LINES:]
    except OSError:
        return f"; its log {log} cannot be read"
    if not lines:
        return f"; its log {log} is empty"
    return f"; the end of its log {log}:\n" + "\n".join(f"  | {line}" for line in lines)
