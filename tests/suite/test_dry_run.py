"""behave itself finds a definition for every step: a dry run reports none undefined."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_dry_run_finds_a_definition_for_every_step() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "behave", "--dry-run", "--no-color", "-f", "null"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    steps_summary = next(line for line in output.splitlines() if " steps passed, " in line)
    assert "undefined" not in steps_summary, output
    assert "0 skipped, 0 untested" not in steps_summary, f"no step was found: {output}"
