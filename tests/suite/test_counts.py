"""One count of passed, failed, skipped and never run, the same on the console (the run
summary, the only totals a run prints), in the HTML report and in JUnit: for a selection
with scenarios skipped for the target, and for a run interrupted by Ctrl-C, which says so
first, with the scenario it cut off and how many never ran (issue 34)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.suite.commands import ROOT, run_module, user_environment
from tests.suite.run_counts import HEADLINE, counts_of, html_text, junit_totals

pytestmark = pytest.mark.slow

LONG_SCENARIO = "A command that runs longer than an ordinary call completes with its full output"


def test_a_selection_with_scenarios_skipped_for_the_target_has_one_count(
    shared_cube, tmp_path: Path
) -> None:
    """A localcube without authentication, a token it ignores: the credential scenarios
    are skipped for this target; the tags leave the others out."""
    status, output = run_module(
        "acceptance.run.report_run",
        *("--tags=@security", f"--define=router_url={shared_cube.url}"),
        f"--define=reports_dir={tmp_path}",
        timeout=180,
        AGENTCUBE_API_TOKEN="ignored-Qd3",
    )
    assert status == 0, output
    console = counts_of(output)
    assert console["here"] > 0 and console["deselected"] > 0, output
    assert console["total"] == console["passed"] + console["failed"] + console["skipped"]
    assert counts_of(html_text(tmp_path / "report.html")) == console
    assert junit_totals(tmp_path / "junit") == {
        "tests": console["total"],
        "failures": console["failed"],
        "errors": 0,
        "skipped": console["skipped"],
    }
    assert "scenarios passed" not in output, "behave's own totals, counted otherwise"


def test_an_interrupted_run_says_so_first_with_the_scenario_cut_off_and_what_never_ran(
    tmp_path: Path,
) -> None:
    command = [sys.executable, "-m", "acceptance.run.report_run", "-f", "plain"]
    command += ["--tags=@long-task", f"--define=reports_dir={tmp_path}"]
    environment = {**user_environment(), "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen(
        command,
        cwd=ROOT,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as run:
        assert run.stdout is not None
        lines = []
        for line in run.stdout:
            lines.append(line)
            if f"Scenario: {LONG_SCENARIO}" in line:
                time.sleep(0.5)  # within its two-second command
                run.send_signal(signal.SIGINT)
                break
        lines += run.stdout.readlines()
        status = run.wait(timeout=60)
    output = "".join(lines)
    assert status == 1, output
    console = counts_of(output)
    headline = HEADLINE.search(output)
    assert headline and headline["cut_off"] == f"Long tasks: {LONG_SCENARIO}", output
    assert console["interrupted"] == 1 and console["never_ran"] >= 1, output
    assert console["total"] == sum(
        console[name] for name in ("passed", "failed", "interrupted", "skipped", "never_ran")
    ), output
    assert "Failed scenarios:" not in output, "the scenario cut off is no failure"
    assert counts_of(html_text(tmp_path / "report.html")) == console
    junit = junit_totals(tmp_path / "junit")
    assert junit["tests"] == console["total"], (junit, console)
    assert junit["failures"] + junit["errors"] == console["failed"] + console["interrupted"]
    assert junit["skipped"] == console["skipped"] + console["never_ran"], (junit, console)
