"""docs/scenarios.md is the index docgen/scenario_index.py generates: one section
per feature file, one row per scenario, each with what it proves and the broken targets of
tests/suite/test_broken_targets.py that fail it; a scenario the coverage map lacks stops
the generator naming it."""

from __future__ import annotations

from pathlib import Path

import pytest
from behave.parser import parse_file

from docgen.coverage import CoverageMapError, coverage_map, parse_map
from docgen.scenario_index import BrokenTarget, broken_targets, scenario_index
from tests.suite.commands import run_module
from tests.suite.test_broken_targets import CASES

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "scenarios.md"
# A map of one scenario, "Mapped" of a.feature.
MAPPED_ONLY = parse_map(
    {
        "upstream": "u@1",
        "umbrella_issue": "U",
        "scenarios": {"a.feature": {"mapped": {"proves": "p"}}},
        "upstream_tests": [],
        "umbrella_items": [],
    }
)


def test_the_page_is_the_generated_index() -> None:
    status, output = run_module("docgen.scenario_index", timeout=60)
    assert status == 0, output
    assert PAGE.read_text(encoding="utf-8") == output, (
        "regenerate with: python -m docgen.scenario_index > docs/scenarios.md"
    )


def test_every_scenario_has_its_row_under_its_feature() -> None:
    page = PAGE.read_text(encoding="utf-8")
    missing = []
    for path in sorted((ROOT / "features").glob("*.feature")):
        section = page.split(f"(`features/{path.name}`)\n", 1)
        for scenario in parse_file(str(path)).scenarios:
            if len(section) < 2 or f"\n| {scenario.name} |" not in section[1].split("\n## ")[0]:
                missing.append(f"{scenario.name} (`{path.name}`)")
    assert missing == [], f"scenarios without their row in docs/scenarios.md: {missing}"


def test_a_scenario_the_map_lacks_stops_the_index_naming_it(tmp_path: Path) -> None:
    (tmp_path / "a.feature").write_text(
        "Feature: A\n  @id.mapped\n  Scenario: Mapped\n    Given x\n"
        "  Scenario: Unmapped\n    Given x\n"
    )
    with pytest.raises(CoverageMapError, match=r"lacks these scenarios: Unmapped \(`a.feature`\)"):
        scenario_index(MAPPED_ONLY, [], tmp_path)


def test_the_broken_targets_are_read_as_the_test_defines_them() -> None:
    read = {case.name: case for case in broken_targets()}
    assert list(read) == list(CASES)
    assert [
        name
        for name, case in CASES.items()
        if (read[name].fault, read[name].target, read[name].patterns)
        != (case.fault, case.target, case.names)
    ] == []


def test_every_broken_target_fails_a_scenario_of_the_index() -> None:
    """A case whose patterns match no scenario (one renamed) would prove nothing here."""
    scenarios = [
        scenario
        for path in sorted((ROOT / "features").glob("*.feature"))
        for scenario in parse_file(str(path)).scenarios
    ]
    idle = [case.name for case in broken_targets() if not any(map(case.fails, scenarios))]
    assert idle == [], f"broken targets that fail no scenario: {idle}"


def test_an_outline_is_failed_through_the_names_of_its_examples(tmp_path: Path) -> None:
    path = tmp_path / "a.feature"
    path.write_text(
        "Feature: A\n  Scenario Outline: Send <what>\n    Given <what>\n"
        "    Examples:\n      | what |\n      | a pear |\n"
    )
    outline = parse_file(str(path)).scenarios[0]
    assert BrokenTarget("pears", None, "cube", ("Send a pear",)).fails(outline)
    assert not BrokenTarget("apples", None, "cube", ("Send an apple",)).fails(outline)


def test_a_case_without_its_fault_and_names_is_refused_naming_it(tmp_path: Path) -> None:
    source = tmp_path / "cases.yaml"
    source.write_text("a case:\n  names: [x]\n")
    with pytest.raises(CoverageMapError, match=r"cases.yaml: case 'a case' has no fault and"):
        broken_targets(source)


def test_a_map_entry_says_what_its_scenario_proves() -> None:
    assert [
        scenario.id for scenario in coverage_map().scenarios.scenarios if not scenario.proves
    ] == []


def test_a_features_description_keeps_its_paragraphs(tmp_path: Path) -> None:
    (tmp_path / "a.feature").write_text(
        "@smoke\nFeature: A\n\n  First line,\n  and its second.\n\n  Another paragraph.\n\n"
        "  # a comment\n  @slow @id.mapped\n  Scenario: Mapped\n    Given x\n"
    )
    page = scenario_index(MAPPED_ONLY, [], tmp_path)
    assert "`)\n\nFirst line,\nand its second.\n\nAnother paragraph.\n\n| scenario |" in page
    assert "| Mapped | @smoke @slow | p | not yet shown to fail" in page
