"""What a run prints, as a user sees it: a passing smoke run fits one screen with one set of
totals, and a failure is named with why at the end whatever the formatter."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.suite.commands import run_behave


@pytest.mark.slow
def test_a_passing_smoke_run_prints_at_most_60_lines_with_one_set_of_totals(
    tmp_path: Path,
) -> None:
    status, output = run_behave("--tags=@smoke", f"--define=reports_dir={tmp_path}", timeout=120)
    assert status == 0, output
    lines = output.splitlines()
    assert len(lines) <= 60, output
    assert re.search(r"Run summary: \d+ scenarios: \d+ passed, 0 failed, \d+ skipped", output)
    assert "scenarios passed" not in output, "behave's own totals, counted otherwise"
    assert "not selected by the tags or names" in output
    assert "workspace" not in output.lower(), "a scenario the tags leave out was printed"


@pytest.mark.slow
def test_a_failure_is_named_with_why_even_by_a_formatter_that_shows_no_reason(
    tmp_path: Path,
) -> None:
    status, output = run_behave(
        "--format=progress",
        "--name=still defined in the next",
        "--define=stateful_interpreter=python-interpreter",  # a stateless one: it fails
        f"--define=reports_dir={tmp_path}",
        timeout=120,
    )
    assert status == 1, output
    failures = output[output.index("Failed scenarios:") :]
    assert "a variable defined by one run of code is still defined in the next" in failures
    assert 'And the session has set the variable "x" to 10' in failures
    assert "setting the session up failed" in failures
