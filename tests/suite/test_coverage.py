"""docs/coverage.md is the table acceptance/run/coverage.py generates, and every scenario it
names still exists, under its title, in its feature file."""

from __future__ import annotations

from pathlib import Path

from behave.parser import parse_file

from acceptance.run.coverage import CHECKS, Check, Scenario, coverage_document
from tests.suite.commands import run_module

ROOT = Path(__file__).resolve().parents[2]


def missing_scenarios(checks: tuple[Check, ...], features: Path) -> list[str]:
    """The scenarios the checks name that their feature file does not hold."""
    titles: dict[str, set[str]] = {}
    for path in features.glob("*.feature"):
        feature = parse_file(str(path))
        titles[path.name] = {scenario.name for scenario in feature.scenarios}
    return sorted(
        str(scenario)
        for check in checks
        for scenario in check.scenarios
        if scenario.title not in titles.get(scenario.feature, set())
    )


def test_every_scenario_named_exists() -> None:
    assert missing_scenarios(CHECKS, ROOT / "features") == []


def test_a_scenario_that_no_longer_exists_is_named(tmp_path: Path) -> None:
    (tmp_path / "a.feature").write_text("Feature: A\n  Scenario: Kept\n    Given x\n")
    check = Check(
        "T", "t.go:1", "x", (Scenario("a.feature", "Kept"), Scenario("a.feature", "Gone")), "", ""
    )
    assert missing_scenarios((check,), tmp_path) == ["Gone (`a.feature`)"]


def test_the_document_is_the_generated_table() -> None:
    status, output = run_module("acceptance.run.coverage", timeout=60)
    assert status == 0, output
    assert (ROOT / "docs" / "coverage.md").read_text(encoding="utf-8") == output, (
        "regenerate with: python -m acceptance.run.coverage > docs/coverage.md"
    )


def test_each_upstream_test_and_umbrella_item_has_one_row() -> None:
    names = [check.name for check in CHECKS]
    assert len(names) == len(set(names))
    assert all(f"| {name} |" in coverage_document() for name in names)
