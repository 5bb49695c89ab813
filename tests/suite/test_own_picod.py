"""The suite runs code-interpreter scenarios against one's own PicoD (docs/own-picod.md):
`-D picod_command` reaches the localcube the suite starts. The PicoD here is localcube's
own daemon behind a wrapper that records each start."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.localcube.picod_process import own_picod_command

ROOT = Path(__file__).resolve().parents[2]
FEATURES = ("features/code_execution.feature", "features/workspace_files.feature")


@pytest.mark.slow
def test_code_interpreter_scenarios_pass_with_the_picod_command(tmp_path: Path) -> None:
    records = tmp_path / "records"
    command = [sys.executable, "-m", "behave", "--no-color", "-f", "plain", *FEATURES]
    command += ["--tags", "@code-interpreter", "-D", f"reports_dir={tmp_path}"]
    command += ["-D", f"picod_command={own_picod_command(tmp_path, records)}"]
    env = {name: value for name, value in os.environ.items() if not name.startswith("AGENTCUBE_")}
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    assert " 0 failed" in result.stdout
    output = result.stdout + result.stderr
    skipped = output[output.index("Skipped for this target") :]
    for scenario in ("a variable defined by one run", "When a stateful interpreter's kernel dies"):
        assert scenario in skipped, "own-picod.md says the stateful scenarios are skipped"
    assert "set stateful_interpreter" in skipped, skipped
    started = list(records.iterdir())
    assert len(started) >= 3, "the scenarios' interpreters ran the picod_command"
    assert all(record.read_text().endswith("key=given\n") for record in started)
