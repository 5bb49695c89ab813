"""The end-of-run summary: scenarios by tag, durations, the slowest steps and the latencies
measured, from one process's results or from many merged."""

from __future__ import annotations

from pathlib import Path

from acceptance.core.measurements import Measurements
from acceptance.run.latency_chart import latency_chart_png
from acceptance.run.results import RunResults, ScenarioResult, StepResult
from acceptance.run.summary import SLOWEST, closing_report, format_summary, summarize


def scenario(name: str, tags: tuple[str, ...], outcome: str, duration: float) -> ScenarioResult:
    return ScenarioResult("Feature", name, tags, outcome, duration)


def results() -> RunResults:
    measurements = Measurements()
    for seconds in (0.010, 0.020, 0.030, 0.040, 0.500):
        measurements.record("invocation in a session", seconds)
    measurements.record("session creation (cold)", 1.25)
    run = RunResults(
        scenarios=[
            scenario("fast", ("smoke", "agent-runtime", "id.fast"), "passed", 0.5),
            scenario("broken", ("smoke", "id.broken"), "failed", 1.5),
            scenario("elsewhere", ("use.with_agentcube_release=pre-460",), "skipped", 0.0),
            scenario("untagged", ("id.untagged",), "passed", 9.0),
        ],
        steps=[StepResult("Feature: s", f"When step {n}", float(n)) for n in range(8)],
        latencies=measurements.samples(),
        notes={"Skipped for this target": ["Feature: elsewhere: not here"]},
    )
    return run


def table(summary, title: str):
    return next(t for t in summary.tables if t.title == title)


def test_scenarios_are_counted_and_timed_by_tag() -> None:
    """A scenario's id names it alone: it groups nothing, and counts as no tag."""
    by_tag = table(summarize(results(), 12.0), "Scenarios by tag")
    assert by_tag.rows == [
        ("(no tag)", "1", "0", "0", "9.00 s"),
        ("@agent-runtime", "1", "0", "0", "0.50 s"),
        ("@smoke", "1", "1", "0", "2.00 s"),
        ("@use.with_agentcube_release=pre-460", "0", "0", "1", "0.00 s"),
    ]


def test_the_headline_counts_outcomes_and_both_durations() -> None:
    assert summarize(results(), 12.0).headline == (
        "4 scenarios: 2 passed, 1 failed, 1 skipped; 12.0 s wall time, 11.0 s in scenarios"
    )


def test_the_slowest_scenarios_and_steps_come_first() -> None:
    summary = summarize(results(), 12.0)
    assert [row[2] for row in table(summary, "Slowest scenarios").rows][:2] == [
        "Feature: untagged",
        "Feature: broken",
    ]
    steps = table(summary, "Slowest steps").rows
    assert len(steps) == SLOWEST
    assert steps[0] == ("7.00 s", "When step 7", "Feature: s")


def test_latencies_show_every_measured_name_with_its_range_p50_and_p95() -> None:
    latencies = table(summarize(results(), 12.0), "Latencies measured")
    assert latencies.headers == ("measurement", "samples", "min", "p50", "p95", "max")
    assert latencies.rows == [
        ("invocation in a session", "5", "10.0 ms", "30.0 ms", "500.0 ms", "500.0 ms"),
        ("session creation (cold)", "1", "1250.0 ms", "1250.0 ms", "1250.0 ms", "1250.0 ms"),
    ]


def test_the_text_has_aligned_columns_and_the_notes_come_first() -> None:
    text = closing_report(results().notes, summarize(results(), 12.0))
    assert text.startswith("Skipped for this target (1):\n  - Feature: elsewhere: not here\n\n")
    assert "Run summary: 4 scenarios" in text
    assert "  @smoke                               1       1       0        2.00 s" in text
    assert all(line == line.rstrip() for line in text.splitlines())


def test_nothing_measured_leaves_the_latency_table_out() -> None:
    summary = summarize(RunResults(), 0.1)
    assert [t.title for t in summary.tables] == [
        "Scenarios by tag",
        "Slowest scenarios",
        "Slowest steps",
    ]
    assert "Slowest steps: none" in format_summary(summary)


def test_results_saved_by_several_processes_merge_into_one(tmp_path: Path) -> None:
    first, second = results(), results()
    second.notes = {"Could not clean up": ["session x: 500"]}
    first.save(tmp_path)
    second.save(tmp_path)
    merged = RunResults.load(tmp_path)
    assert len(merged.scenarios) == 8
    assert merged.scenarios[0] == first.scenarios[0]
    assert len(merged.latencies["invocation in a session"]) == 10
    assert merged.notes["Could not clean up"] == ["session x: 500"]
    assert summarize(merged, 1.0).headline.startswith("8 scenarios: 4 passed, 2 failed")


def test_the_chart_is_a_png() -> None:
    png = latency_chart_png(summarize(results(), 12.0).latencies)
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(png) > 5000


def test_scenarios_left_out_by_the_tags_count_as_skipped_as_behave_counts_them() -> None:
    run = results()
    run.deselected = 10
    assert summarize(run, 12.0).headline.startswith(
        "14 scenarios: 2 passed, 1 failed, 11 skipped (10 not selected by the tags or names, "
        "1 not for this target); "
    )


def test_each_failed_scenario_is_named_with_its_step_and_why() -> None:
    run = results()
    run.scenarios.append(
        ScenarioResult(
            "Feature", "odd", (), "failed", 1.0, 'Then the command prints "10"', "Expected: 10"
        )
    )
    failures = table(summarize(run, 12.0), "Failed scenarios")
    assert failures.rows == [
        ("Feature: broken", "(a hook)", ""),
        ("Feature: odd", 'Then the command prints "10"', "Expected: 10"),
    ]
