"""Fixtures of the launcher's tests: a bin-dir of stand-ins and the launcher run as a child
process (it enters a namespace of its own: never the test process)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.onemachine.cluster import stand_ins

ROOT = Path(__file__).resolve().parents[3]


def namespaces_allowed() -> bool:
    """As the launcher asks: a network namespace as root, a user one with it otherwise."""
    flags = ["-n"] if os.geteuid() == 0 else ["-rn"]
    return subprocess.run(["unshare", *flags, "true"], capture_output=True).returncode == 0


needs_namespaces = pytest.mark.skipif(
    not namespaces_allowed(), reason="this machine does not allow network namespaces"
)


def launcher_command(bin_dir: Path, tmp_path: Path, *extra: str) -> list[str]:
    agentcube, sandbox = stand_ins.checkouts(tmp_path / "checkouts")
    return [
        sys.executable,
        "-m",
        "onemachine",
        "cluster",
        "--bin-dir",
        str(bin_dir),
        "--agentcube-src",
        str(agentcube),
        "--agent-sandbox-src",
        str(sandbox),
        "--state-dir",
        str(tmp_path / "state"),
        *extra,
    ]


def started_pids(stderr: str) -> dict[str, int]:
    """The parts the launcher says it started, and their pids."""
    return {name: int(pid) for name, pid in re.findall(r"started (\S+) \(pid (\d+)\)", stderr)}


class Launchers:
    """The launchers a test started, each stopped at the test's end whatever happened
    (SIGTERM, then SIGKILL), with every part it said it started."""

    def __init__(self, tmp_path: Path) -> None:
        self._tmp_path = tmp_path
        self._started: list[tuple[subprocess.Popen, Path]] = []

    def start(self, bin_dir: Path, *extra: str) -> tuple[subprocess.Popen, Path]:
        """The launcher as a child, its stderr in a file (whose path is returned)."""
        errors = self._tmp_path / f"launcher-{len(self._started)}.err"
        with errors.open("w") as output:
            launcher = subprocess.Popen(
                launcher_command(bin_dir, self._tmp_path, *extra),
                stdout=subprocess.DEVNULL,
                stderr=output,
                text=True,
                cwd=ROOT,
            )
        self._started.append((launcher, errors))
        return launcher, errors

    def run(self, bin_dir: Path, *extra: str, timeout: float = 60) -> Finished:
        launcher, errors = self.start(bin_dir, *extra)
        launcher.wait(timeout=timeout)
        return Finished(launcher.returncode, errors.read_text())

    def stop_all(self) -> None:
        for launcher, errors in self._started:
            if launcher.poll() is None:
                launcher.terminate()
                try:
                    launcher.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    launcher.kill()
                    launcher.wait()
            for pid in started_pids(errors.read_text()).values():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


@dataclass(frozen=True)
class Finished:
    returncode: int
    stderr: str


@pytest.fixture
def launchers(tmp_path: Path) -> Iterator[Launchers]:
    started = Launchers(tmp_path)
    yield started
    started.stop_all()


@pytest.fixture
def run_launcher(launchers: Launchers) -> Callable[..., Finished]:
    return launchers.run
