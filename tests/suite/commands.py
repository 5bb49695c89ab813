"""Run one of the suite's commands as a user would, from the repository root."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_module(module: str, *arguments: str, timeout: float, **environ: str) -> tuple[int, str]:
    """`python -m module arguments...` with extra environment variables; its exit status
    and its output (stdout, then stderr)."""
    result = subprocess.run(
        [sys.executable, "-m", module, *arguments],
        cwd=ROOT,
        env={**os.environ, **environ},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return result.returncode, result.stdout + result.stderr
