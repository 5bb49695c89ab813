"""Run localcube as a child process from Python: the suite's default target and the tests'.

`start()` waits for the ready line and returns a handle; `stop()` sends SIGTERM and
returns the exit code. Its stderr (the server's log) goes to a file, so a long run never
blocks on a full pipe and the log can be attached as evidence.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

_READY_PREFIX = "localcube ready: "
_PROJECT_ROOT = Path(__file__).resolve().parent.parent


class LocalCubeStartError(RuntimeError):
    pass


@dataclass
class RunningLocalCube:
    url: str
    process: subprocess.Popen[str]
    log_path: Path
    arguments: list[str] = field(default_factory=list)

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self, timeout: float = 30.0) -> int:
        """Graceful stop (SIGTERM); the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()
        finally:
            self._close_pipes()

    def crash(self) -> None:
        """SIGKILL the server only: its sandboxes live on, as after a real crash."""
        self.process.kill()
        self.process.wait()
        self._close_pipes()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def _close_pipes(self) -> None:
        if self.process.stdout is not None:
            self.process.stdout.close()


def start(
    manifests: list[str | Path],
    log_path: Path,
    *,
    port: int = 0,
    state_dir: Path | None = None,
    gc_interval: str = "1s",
    extra_arguments: list[str] | None = None,
    ready_timeout: float = 30.0,
) -> RunningLocalCube:
    """Start `python -m localcube serve` and wait until it prints its ready line."""
    arguments = [sys.executable, "-m", "localcube", "serve", "--port", str(port)]
    arguments += ["--gc-interval", gc_interval]
    for manifest in manifests:
        arguments += ["--manifests", str(manifest)]
    if state_dir is not None:
        arguments += ["--state-dir", str(state_dir)]
    arguments += extra_arguments or []
    # The suite's own settings, tokens among them, are none of localcube's business.
    env = {name: value for name, value in os.environ.items() if not name.startswith("AGENTCUBE_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_PROJECT_ROOT), env.get("PYTHONPATH")]))
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            arguments,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            env=env,
            text=True,
        )
    line = _first_line(process, ready_timeout)
    if not line.startswith(_READY_PREFIX):
        process.kill()
        process.wait()
        tail = log_path.read_text(errors="replace")[-2000:]
        raise LocalCubeStartError(
            f"localcube did not start (exit code {process.returncode}): {tail.strip()}"
        )
    return RunningLocalCube(line[len(_READY_PREFIX) :].strip(), process, log_path, arguments)


def _first_line(process: subprocess.Popen[str], timeout: float) -> str:
    lines: list[str] = []
    output = process.stdout
    assert output is not None  # started with stdout=PIPE
    reader = threading.Thread(target=lambda: lines.append(output.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    return lines[0] if lines else ""
