"""Fixtures of the launcher's tests: a bin-dir of stand-ins and the launcher run as a child
process (it enters a namespace of its own: never the test process)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cluster import stand_ins

ROOT = Path(__file__).resolve().parents[2]


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
        sys.executable, "-m", "localcube", "cluster",
        "--bin-dir", str(bin_dir),
        "--agentcube-src", str(agentcube),
        "--agent-sandbox-src", str(sandbox),
        "--state-dir", str(tmp_path / "state"),
        *extra,
    ]  # fmt: skip


def started_pids(stderr: str) -> dict[str, int]:
    """The parts the launcher says it started, and their pids."""
    return {name: int(pid) for name, pid in re.findall(r"started (\S+) \(pid (\d+)\)", stderr)}


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.fixture
def run_launcher(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess]:
    def run(bin_dir: Path, *extra: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(
            launcher_command(bin_dir, tmp_path, *extra),
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=ROOT,
        )

    return run
