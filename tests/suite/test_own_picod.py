"""The suite runs code-interpreter scenarios against one's own PicoD (docs/own-picod.md):
`-D picod_command` reaches the localcube the suite starts. The PicoD here is localcube's
own daemon behind a wrapper that records each start."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.localcube.picod_process import own_picod_command
from tests.suite.commands import run_behave

FEATURES = ("features/code_execution.feature", "features/workspace_files.feature")


@pytest.mark.slow
def test_code_interpreter_scenarios_pass_with_the_picod_command(tmp_path: Path) -> None:
    records = tmp_path / "records"
    result = run_behave(
        *("-f", "plain", *FEATURES, "--tags", "@code-interpreter"),
        userdata={
            "reports_dir": str(tmp_path),
            "picod_command": own_picod_command(tmp_path, records),
        },
        timeout=300,
    )
    assert result.status == 0, result.stdout[-6000:] + result.stderr[-3000:]
    assert re.search(r"Run summary: \d+ scenarios: \d+ passed, 0 failed", result.stderr), (
        result.stderr
    )
    output = result.output
    skipped = output[output.index("Skipped for this target") :]
    for scenario in ("a variable defined by one run", "When a stateful interpreter's kernel dies"):
        assert scenario in skipped, "own-picod.md says the stateful scenarios are skipped"
    assert "set stateful_interpreter" in skipped, skipped
    started = list(records.iterdir())
    assert len(started) >= 3, "the scenarios' interpreters ran the picod_command"
    assert all(record.read_text().endswith("key=given\n") for record in started)
