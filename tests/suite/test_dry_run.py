"""behave itself finds a definition for every step: a dry run reports none undefined."""

from __future__ import annotations

from tests.suite.commands import run_behave


def test_dry_run_finds_a_definition_for_every_step() -> None:
    status, output = run_behave("--dry-run", "-f", "null", timeout=60)
    assert status == 0, output
    steps_summary = next(line for line in output.splitlines() if " steps passed, " in line)
    assert "undefined" not in steps_summary, output
    assert "0 skipped, 0 untested" not in steps_summary, f"no step was found: {output}"
