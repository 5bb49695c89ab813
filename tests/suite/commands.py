"""Run one of the suite's commands as a user would, from the repository root: none of the
caller's AGENTCUBE_ variables reach it, only those a test gives."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_module(module: str, *arguments: str, timeout: float, **environ: str) -> tuple[int, str]:
    """`python -m module arguments...` with these AGENTCUBE_ (or other) variables; its exit
    status and its output (stdout, then stderr)."""
    result = subprocess.run(
        [sys.executable, "-m", module, *arguments],
        cwd=ROOT,
        env=user_environment(**environ),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return result.returncode, result.stdout + result.stderr


@dataclass(frozen=True)
class BehaveRun:
    """A finished run: its exit status and both streams. It unpacks as (status, output),
    as run_module's answer does."""

    status: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        """stdout, then stderr."""
        return self.stdout + self.stderr

    def __iter__(self) -> Iterator[int | str]:
        return iter((self.status, self.output))


def run_behave(
    *arguments: str, timeout: float, userdata: Mapping[str, str] | None = None, **environ: str
) -> BehaveRun:
    """`python -m acceptance.run.main --no-color arguments... --define=name=value...` (each of
    `userdata`), from the repository root with these AGENTCUBE_ (or other) variables and
    none of the caller's."""
    defined = [f"--define={name}={value}" for name, value in (userdata or {}).items()]
    result = subprocess.run(
        [sys.executable, "-m", "acceptance.run.main", "--no-color", *arguments, *defined],
        cwd=ROOT,
        env=user_environment(**environ),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return BehaveRun(result.returncode, result.stdout, result.stderr)


def user_environment(**environ: str) -> dict[str, str]:
    """The caller's environment without its AGENTCUBE_ settings, with `environ` added."""
    kept = {name: value for name, value in os.environ.items() if not name.startswith("AGENTCUBE_")}
    return {**kept, **environ}
