"""The end-of-run summary: scenarios by tag, durations, the slowest scenarios and steps, the
latencies the scenarios measured and each failed scenario with why; as tables, which the
console prints as text and the HTML report renders, and the closing notes (skipped
scenarios, leaks, kept sessions...).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from textwrap import indent

from acceptance.core.evidence import text_table
from acceptance.core.measurements import Summary, summaries
from acceptance.run.results import (
    FAILED,
    INTERRUPTED,
    PASSED,
    SKIPPED,
    RunResults,
)
from acceptance.run.tags import is_id_tag

SLOWEST = 5


@dataclass(frozen=True)
class Table:
    title: str
    headers: tuple[str, ...]
    rows: Sequence[tuple[str, ...]]


@dataclass(frozen=True)
class RunSummary:
    headline: str
    tables: list[Table]
    latencies: list[Summary]
    release: str = ""  # the release the run was held to, and why


def summarize(results: RunResults, wall_time: float) -> RunSummary:
    """The summary, with the counts every report of the run gives (a scenario the tags
    left out is skipped); an interrupted run's headline says so first."""
    scenarios = results.scenarios
    outcomes = _outcomes(results)
    counts = {outcome: sum(s.outcome == outcome for s in scenarios) for outcome in outcomes}
    skipped_here = counts[SKIPPED]
    counts[SKIPPED] += results.deselected
    total = len(scenarios) + results.deselected + results.never_ran
    cut_off = [s.title for s in scenarios if s.outcome == INTERRUPTED]
    where = f' in "{cut_off[0]}"' if cut_off else " between scenarios"
    headline = (
        (f"interrupted (Ctrl-C){where}: " if results.interrupted else "")
        + f"{total} scenarios: "
        + ", ".join(f"{counts[outcome]} {outcome}" for outcome in outcomes)
        + (
            f" ({results.deselected} not selected by the tags or names, {skipped_here} not "
            "for this target)"
            if results.deselected
            else ""
        )
        + (f", {results.never_ran} never ran" if results.interrupted else "")
        + f"; {wall_time:.1f} s wall time, {sum(s.duration for s in scenarios):.1f} s "
        "in scenarios"
    )
    latencies = summaries(results.latencies)
    tables = [_by_tag(results), _slowest_scenarios(results), _slowest_steps(results)]
    if latencies:
        tables.append(_latency_table(latencies))
    if failed := [
        (s.title, s.failed_step or "(a hook)", s.failure) for s in scenarios if s.outcome == FAILED
    ]:
        tables.append(Table("Failed scenarios", ("scenario", "failed step", "why"), failed))
    return RunSummary(headline, tables, latencies, results.release)


def _outcomes(results: RunResults) -> tuple[str, ...]:
    """The outcomes the summary counts: the interrupted one only in an interrupted run."""
    return (PASSED, FAILED, *([INTERRUPTED] if results.interrupted else []), SKIPPED)


def _by_tag(results: RunResults) -> Table:
    shown = _outcomes(results)
    outcomes: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(shown, 0))
    seconds: dict[str, float] = defaultdict(float)
    for scenario in results.scenarios:
        grouping = [tag for tag in scenario.tags if not is_id_tag(tag)]  # an id groups none
        for tag in grouping or ["(no tag)"]:
            outcomes[tag][scenario.outcome] += 1
            seconds[tag] += scenario.duration
    rows = [
        (
            tag if tag.startswith("(") else f"@{tag}",
            *(str(outcomes[tag][outcome]) for outcome in shown),
            _seconds(seconds[tag]),
        )
        for tag in sorted(outcomes)
    ]
    return Table("Scenarios by tag", ("tag", *shown, "time"), rows)


def _slowest_scenarios(results: RunResults) -> Table:
    slowest = sorted(results.scenarios, key=lambda s: s.duration, reverse=True)[:SLOWEST]
    rows = [(_seconds(s.duration), s.outcome, s.title) for s in slowest]
    return Table("Slowest scenarios", ("time", "outcome", "scenario"), rows)


def _slowest_steps(results: RunResults) -> Table:
    slowest = sorted(results.steps, key=lambda s: s.duration, reverse=True)[:SLOWEST]
    rows = [(_seconds(s.duration), s.text, s.scenario) for s in slowest]
    return Table("Slowest steps", ("time", "step", "scenario"), rows)


def _latency_table(latencies: list[Summary]) -> Table:
    rows = [
        (s.name, str(len(s.samples)), *map(_ms, (min(s.samples), s.p50, s.p95, max(s.samples))))
        for s in latencies
    ]
    headers = ("measurement", "samples", "min", "p50", "p95", "max")
    return Table("Latencies measured", headers, rows)


def _seconds(value: float) -> str:
    return f"{value:.2f} s"


def _ms(value: float) -> str:
    return f"{value * 1000:.1f} ms"


def format_summary(summary: RunSummary) -> str:
    """The summary as plain text, each table with aligned columns."""
    parts = [f"Run summary: {summary.headline}"]
    if summary.release:
        parts.append(summary.release)
    for table in summary.tables:
        parts.append(f"{table.title}:" + ("" if table.rows else " none"))
        if table.rows:
            parts.append(indent(text_table((table.headers, *table.rows), str.ljust), "  "))
    return "\n".join(parts)


def closing_report(notes: Mapping[str, list[str]], summary: RunSummary) -> str:
    """What a run prints at its end: the notes, one titled list each, then the summary."""
    listed = "\n".join(
        f"{title} ({len(items)}):\n" + "\n".join(f"  - {item}" for item in items)
        for title, items in notes.items()
        if items
    )
    return "\n\n".join(part for part in (listed, format_summary(summary)) if part)
