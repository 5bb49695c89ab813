"""`./dev parallel`: the smoke scenarios over two behavex processes against one localcube,
with one summary for the whole run."""

from __future__ import annotations

import re
from pathlib import Path

from tests.suite.commands import run_module


def test_the_smoke_scenarios_pass_over_two_processes_with_one_summary(tmp_path: Path) -> None:
    status, output = run_module(
        "acceptance.parallel_run",
        "--processes=2",
        "--tags=@smoke",
        f"--define=reports_dir={tmp_path}",
        timeout=300,
    )
    assert status == 0, output
    planned = re.search(r"(\d+) scenarios: 0 run alone .*, (\d+) in 2 parallel processes", output)
    assert planned, output
    count = int(planned[1])
    assert count > 0
    assert output.count("Run summary: ") == 1, output
    assert f"Run summary: {count} scenarios: {count} passed, 0 failed" in output, output
    junit = list((tmp_path / "parallel" / "concurrent" / "behave").glob("TESTS-*.xml"))
    assert junit, "behavex writes JUnit XML"
