"""`./dev parallel`: the smoke scenarios over two behavex processes against one localcube,
with one summary for the whole run; and what the workers are given on a cluster."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from behave.configuration import Configuration
from behave.runner_util import collect_feature_locations, parse_features

from acceptance.core.settings import load_settings
from acceptance.platforms.kubernetes.cluster import ClusterTarget
from acceptance.run.listing import main as listing_main
from acceptance.run.parallel_run import (
    Phase,
    _names_paths,
    _runs_alone,
    _shared_target,
    _slowest_first,
    run,
    unreported,
)
from acceptance.run.report_run import reports_dir
from acceptance.run.results import (
    RunResults,
    ScenarioResult,
    run_features,
    selection,
)
from tests.suite.commands import run_module
from tests.suite.run_counts import counts_of, html_text, junit_totals


@pytest.mark.slow
def test_the_smoke_scenarios_pass_over_two_processes_with_one_summary(tmp_path: Path) -> None:
    """The stateful interpreter's scenarios among them: the workers reach the localcube this
    run started by its URL, and must still know that it serves one (none is skipped)."""
    status, output = run_module(
        "acceptance.run.parallel_run",
        "--processes=2",
        "--tags=@smoke or @requires.stateful-interpreter",
        f"--define=reports_dir={tmp_path}",
        timeout=300,
    )
    assert status == 0, output
    planned = re.search(r"(\d+) scenarios: 0 run alone .*, (\d+) in 2 parallel processes", output)
    assert planned, output
    count = int(planned[1])
    assert count > 0
    assert output.count("Run summary: ") == 1, output
    assert re.search(rf"Run summary: \d+ scenarios: {count} passed, 0 failed", output), output
    assert output.count("Preflight: ") == 1, output
    # Detected once, by the run: its workers are held to it.
    assert output.count("AgentCube release: main (detected: ") == 2, output  # start, summary
    # What a sequential run prints: the preflight first, a line per scenario, one summary.
    assert output.startswith("AgentCube release: main (detected: "), output
    assert len(re.findall(r"^  passed +\d+\.\d\d s  ", output, re.M)) == count, output
    assert "Exit code" not in output and "| FEATURES_PATH" not in output, output
    assert list((tmp_path / "junit").glob("concurrent-TESTS-*.xml")), "one JUnit tree"
    # One count: the summary's, JUnit's (the scenarios left out as skipped test cases, as
    # a sequential run's) and the HTML page's.
    console = counts_of(output)
    assert junit_totals(tmp_path / "junit") == {
        "tests": console["total"],
        "failures": console["failed"],
        "errors": 0,
        "skipped": console["skipped"],
    }
    assert counts_of(html_text(tmp_path / "report.html")) == console


def test_workers_on_a_cluster_share_the_forwards_and_the_token_of_the_run() -> None:
    target = ClusterTarget(
        "http://127.0.0.1:41001",
        "http://127.0.0.1:41002",
        "minted-token",
        None,
        "admin-token",
        frozenset(),
    )
    settings = load_settings({"platform": "kubernetes", "agentcube_release": "pre-460"}, {})
    defines, secrets = _shared_target(target, settings)
    assert defines == [
        "--define=router_url=http://127.0.0.1:41001",
        "--define=workload_manager_url=http://127.0.0.1:41002",
        "--define=platform=kubernetes",
        "--define=agentcube_release=pre-460",
        "--define=router_read_timeout=30s",
        "--define=port_forward=false",
        "--define=token_source=static",
    ]
    assert secrets == {
        "AGENTCUBE_API_TOKEN": "minted-token",
        "AGENTCUBE_ADMIN_API_TOKEN": "admin-token",
    }


def test_the_reports_directory_is_read_with_the_cluster_settings_given() -> None:
    arguments = ["-D", "platform=kubernetes", "-D", "kube_context=kind-e2e", "-D", "reports_dir=r"]
    assert reports_dir(Configuration(arguments).userdata) == Path("r")


def test_paths_are_told_from_the_values_of_behaves_options() -> None:
    assert _names_paths(["-D", "a=b", "--tags=@smoke", "features/x.feature:12"])
    assert _names_paths(["--", "features/x.feature"])
    assert not _names_paths(["-D", "a=b", "-t", "@x", "--name", "one name", "--def", "c=d"])
    assert not _names_paths(["-vDa=b", "--stop", "-i", "lifetime"])


def test_a_path_with_a_line_selects_that_scenario_alone() -> None:
    config = Configuration(["features/code_execution.feature:26"])
    features = parse_features(collect_feature_locations(config.paths))
    selected, deselected = selection(features, config)
    assert [str(scenario.location) for scenario in selected] == [
        "features/code_execution.feature:26"
    ]
    assert deselected == []


def test_the_slow_scenarios_are_started_first() -> None:
    features = parse_features(collect_feature_locations(["features"]))
    scenarios = [scenario for feature in features for scenario in feature.walk_scenarios()]
    locations = _slowest_first(scenarios)
    slow = [str(s.location) for s in scenarios if "slow" in s.effective_tags]
    assert len(slow) >= 5
    assert sorted(locations[: len(slow)]) == sorted(slow)
    assert sorted(locations) == sorted(str(s.location) for s in scenarios)


def test_a_scenario_that_fills_the_concurrency_limit_runs_alone() -> None:
    """Filling every slot the Router declares makes any other worker's call rightly
    refused as overloaded (pkg/router/server.go:142-148): such a scenario runs alone."""
    features = parse_features(collect_feature_locations([Path("features")]))
    filling = [
        scenario
        for feature in features
        for scenario in feature.walk_scenarios()
        if any("concurrency limit" in step.name for step in scenario.steps)
    ]
    assert len(filling) >= 2, "the many-sessions and the overload scenarios"
    beside_others = [scenario.name for scenario in filling if not _runs_alone(scenario)]
    assert not beside_others, (
        f"these fill the concurrency limit beside other scenarios: {beside_others}"
    )


def test_unreported_finds_the_selected_scenarios_without_a_result() -> None:
    """Seen on a real cluster: behavex marked one outline row "untested" and no worker
    reported it; the summary counted one scenario fewer and said nothing. (The run names
    them as not run: the wiring tests below.)"""
    config = Configuration(["--tags=@smoke", "features"])
    selected = selection(parse_features(collect_feature_locations(config.paths)), config)[0]
    reported, dropped = selected[1:], selected[0]
    results = RunResults(scenarios=[_result(scenario) for scenario in reported])
    assert unreported(selected, results) == [dropped]
    assert unreported(selected, RunResults(scenarios=[_result(s) for s in selected])) == []


def _result(scenario) -> ScenarioResult:
    return ScenarioResult(scenario.feature.name, scenario.name, (), "passed", 0.1, "", "")


def test_a_run_whose_phase_reports_no_result_fails_naming_the_scenarios_not_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The wiring: only the alone phase is selected (nothing else starts), and its behavex
    run "passes" without reporting a scenario."""
    monkeypatch.setattr(Phase, "run", lambda phase, arguments, environment: 0)
    monkeypatch.setattr(Phase, "results", lambda phase: RunResults())
    status = run(1, ["--tags=@serial", f"--define=reports_dir={tmp_path}"])
    err = capsys.readouterr().err
    assert status == 1, err
    assert re.search(r"Selected but not run \(\d+\):\n  - Many calls at once: ", err), err


def test_a_scenario_a_phase_reported_no_result_for_is_run_again_on_its_own(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A worker whose behave run ended before its scenario (behavex: "untested") reports
    nothing: the scenario is run again, by itself, in a behave process of its own, so that
    the run still has its result, and the closing notes say so."""
    config = Configuration(["--tags=@serial", "features"])
    selected = selection(parse_features(collect_feature_locations(config.paths)), config)[0]
    dropped = selected[0]
    calls: list[Phase] = []

    def phase_run(phase: Phase, arguments: list[str], environment: dict[str, str]) -> int:
        calls.append(phase)
        return 0

    def phase_results(phase: Phase) -> RunResults:
        if len(calls) == 1:  # the phase's own run: one scenario has no result
            return RunResults(scenarios=[_result(s) for s in selected if s is not dropped])
        return RunResults(scenarios=[_result(dropped)])  # the run again

    monkeypatch.setattr(Phase, "run", phase_run)
    monkeypatch.setattr(Phase, "results", phase_results)
    status = run(1, ["--tags=@serial", f"--define=reports_dir={tmp_path}"])
    err = capsys.readouterr().err
    assert status == 0, err
    assert len(calls) == 2, calls
    assert calls[1].locations == [str(dropped.location)]
    assert calls[1].processes == 1
    assert re.search(rf"Run summary: \d+ scenarios: {len(selected)} passed, 0 failed", err), err
    assert re.search(
        rf"Run again on its own, no result from its phase \(1\):\n  - {dropped.feature.name}: ",
        err,
    ), err


def test_the_run_the_parallel_run_and_the_listing_leave_out_what_exclude_names(
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = Configuration(["--exclude", "code_execution"])
    files = {feature.filename for feature in run_features(config)}
    assert files and not any("code_execution" in name for name in files), files
    assert listing_main(["--exclude", "code_execution"]) == 0
    listed = capsys.readouterr().out
    assert "features/credentials.feature" in listed
    assert "code_execution" not in listed, listed
