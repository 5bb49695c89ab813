"""The coverage map (docgen/coverage.yaml) holds every scenario of features/ under
its @id tag, names only scenarios it defines, points only inside the repository, and has a
row for every item of the umbrella issue; docs/coverage.md is the table it generates."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from docgen.coverage import (
    MAP_FILE,
    CoverageMapError,
    ScenarioMap,
    coverage_document,
    coverage_map,
    parse_map,
)
from tests.suite.commands import run_module

ROOT = Path(__file__).resolve().parents[2]
# Upstream's umbrella issue, kept beside the map (a copy: tests/test_recordings_copies.py).
UMBRELLA_ISSUE = ROOT / "docgen" / "e2e-umbrella-issue.txt"


def a_map(scenario_ids: list[str], *defined: str) -> dict:
    """The data of a map that defines the ids `defined` in a.feature and whose one
    upstream test names `scenario_ids`."""
    return {
        "upstream": "u@1",
        "umbrella_issue": "U",
        "scenarios": {"a.feature": {sid: {"proves": "p"} for sid in defined}},
        "upstream_tests": [
            {
                "name": "T",
                "where": "t.go:1",
                "asserts": "x",
                "scenarios": scenario_ids,
                "only_upstream": "",
                "only_here": "",
            }
        ],
        "umbrella_items": [],
    }


def test_the_map_is_the_scenarios_of_features() -> None:
    assert coverage_map().scenarios.drift() == [], (
        f"edit {MAP_FILE.relative_to(ROOT)}: each scenario of features/ by its @id tag"
    )


def test_a_removed_an_unmapped_and_an_untagged_scenario_are_named(tmp_path: Path) -> None:
    (tmp_path / "a.feature").write_text(
        "Feature: A\n  @id.kept\n  Scenario: Kept\n    Given x\n"
        "  @id.new\n  Scenario: New\n    Given x\n  Scenario: Bare\n    Given x\n"
    )
    scenarios = parse_map(a_map(["kept"], "kept", "gone")).scenarios
    assert scenarios.drift(tmp_path) == [
        "not in features/: @id.gone (`a.feature`)",
        "not in coverage.yaml: Bare (`a.feature`, no @id tag)",
        "not in coverage.yaml: New (`a.feature`, @id.new)",
    ]


def test_a_check_naming_an_undefined_scenario_is_refused_naming_it() -> None:
    with pytest.raises(CoverageMapError, match="names scenario 'gone', which it lacks"):
        parse_map(a_map(["kept", "gone"], "kept"))


def test_an_id_defined_twice_is_refused_naming_it() -> None:
    data = a_map(["kept"], "kept")
    data["scenarios"]["b.feature"] = {"kept": {"proves": "p"}}
    with pytest.raises(CoverageMapError, match=r"defines these scenario ids twice: \['kept'\]"):
        parse_map(data)


def test_a_lookup_by_id_finds_the_scenario() -> None:
    scenarios: ScenarioMap = coverage_map().scenarios
    assert str(scenarios.lookup("first-call")) == (
        "The first call opens a session and the next call in it reaches the same sandbox "
        "(`agent_invocation.feature`)"
    )


def test_the_map_points_only_inside_the_repository() -> None:
    text = MAP_FILE.read_text(encoding="utf-8")
    outside = re.findall(r"https?://\S+|\.\./shared\S*|/work/\S+", text)
    assert outside == [], f"{MAP_FILE.name} points outside the repository: {outside}"


def test_the_document_is_the_generated_table() -> None:
    status, output = run_module("docgen.coverage", timeout=60)
    assert status == 0, output
    assert (ROOT / "docs" / "coverage.md").read_text(encoding="utf-8") == output, (
        "regenerate with: python -m docgen.coverage > docs/coverage.md"
    )


def test_each_upstream_test_and_umbrella_item_has_one_row() -> None:
    coverage = coverage_map()
    names = [check.name for check in coverage.checks]
    assert len(names) == len(set(names)), f"a check named twice among {names}"
    document = coverage_document(coverage)
    assert [name for name in names if f"| {name} |" not in document] == []


def test_every_item_of_the_umbrella_issue_is_in_the_map() -> None:
    text = UMBRELLA_ISSUE.read_text(encoding="utf-8")
    items = re.findall(r"^([AB]\d)\. ", text, re.MULTILINE)
    corner_cases = re.findall(r"^(\d)\. ", text.split("Corner cases:", 1)[1], re.MULTILINE)
    wanted = [*items, *(f"Corner case {number}:" for number in corner_cases)]
    assert len(wanted) == 8, f"the umbrella issue's items as read: {wanted}"
    mapped = [check.name for check in coverage_map().umbrella_items]
    assert [item for item in wanted if not any(name.startswith(item) for name in mapped)] == []
