"""The coverage map (docgen/coverage.yaml): every scenario by its id, with what it
proves, and what upstream's own e2e tests and the umbrella issue's items check, against the
scenarios here that cover each. `python -m docgen.coverage` prints docs/coverage.md;
tests/suite/test_coverage.py keeps the document equal to it and the map equal to features/.

Scenarios are keyed by their own `@id.<id>` tag in features/; the map holds what each
proves, never its title. `ScenarioMap.lookup` is the one place an id becomes a scenario,
and `ScenarioMap.drift` names every scenario whose id the map and features/ do not share.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from behave.model import Scenario
from behave.parser import parse_file

MAP_FILE = Path(__file__).with_name("coverage.yaml")
FEATURES = Path(__file__).resolve().parents[1] / "features"
ID_TAG = "id."


class CoverageMapError(Exception):
    """The map names a scenario it does not define, or is out of step with features/."""


@dataclass(frozen=True)
class MappedScenario:
    """A scenario by its id, its feature file (under features/) and its title there (an
    outline's with its <placeholders>; empty for an id features/ lacks); what it proves;
    what of it no broken target fails yet, and a proof outside
    tests/suite/test_broken_targets.py's cases, if any."""

    id: str
    feature: str
    title: str
    proves: str
    not_proven: str = ""
    other_proof: str = ""

    def __str__(self) -> str:
        return f"{self.title} (`{self.feature}`)"


@dataclass(frozen=True)
class Check:
    """One upstream e2e test or umbrella-issue item: its name and where it is written,
    what it asserts, the scenarios here that cover it, and what each side checks that the
    other does not."""

    name: str
    where: str
    asserts: str
    scenarios: tuple[MappedScenario, ...]
    only_upstream: str
    only_here: str


@dataclass(frozen=True)
class ScenarioMap:
    """The map's scenarios, in the order of the data file."""

    scenarios: tuple[MappedScenario, ...]

    def lookup(self, wanted: str) -> MappedScenario:
        """The scenario of this id; an id the map does not define is an error naming it."""
        for scenario in self.scenarios:
            if scenario.id == wanted:
                return scenario
        raise CoverageMapError(f"{MAP_FILE.name} names scenario {wanted!r}, which it lacks")

    def of_feature(self, feature: str) -> tuple[MappedScenario, ...]:
        return tuple(scenario for scenario in self.scenarios if scenario.feature == feature)

    def drift(self, features: Path = FEATURES) -> list[str]:
        """What keeps the map from being features/: ids it names that no scenario of that
        feature carries (removed, or moved), and scenarios written there without an id it
        has."""
        written = {
            (path.name, scenario_id(scenario)): scenario.name
            for path in sorted(features.glob("*.feature"))
            for scenario in parse_file(str(path)).scenarios
        }
        mapped = {(scenario.feature, scenario.id) for scenario in self.scenarios}
        return [
            *(
                f"not in features/: @{ID_TAG}{sid} (`{feature}`)"
                for feature, sid in sorted(mapped - set(written))
            ),
            *(
                f"not in {MAP_FILE.name}: {written[feature, sid]} (`{feature}`"
                + (f", @{ID_TAG}{sid})" if sid else ", no @id tag)")
                for feature, sid in sorted(set(written) - mapped)
            ),
        ]


@dataclass(frozen=True)
class CoverageMap:
    upstream: str
    umbrella_issue: str
    scenarios: ScenarioMap
    upstream_tests: tuple[Check, ...]
    umbrella_items: tuple[Check, ...]

    @property
    def checks(self) -> tuple[Check, ...]:
        return self.upstream_tests + self.umbrella_items


def scenario_id(scenario: Scenario) -> str:
    """The id a scenario carries as its `@id.<id>` tag ("" without one)."""
    return next((tag[len(ID_TAG) :] for tag in scenario.tags if tag.startswith(ID_TAG)), "")


@cache
def titles(features: Path = FEATURES) -> dict[tuple[str, str], str]:
    """The title of each scenario of features/ that carries an id, by feature and id."""
    return {
        (path.name, scenario_id(scenario)): scenario.name
        for path in sorted(features.glob("*.feature"))
        for scenario in parse_file(str(path)).scenarios
        if scenario_id(scenario)
    }


def parse_map(data: dict[str, Any]) -> CoverageMap:
    """The map from its data (the YAML file's), each scenario titled as features/ titles
    it; an id defined twice or named but not defined is a CoverageMapError."""
    scenarios = tuple(
        MappedScenario(
            sid,
            feature,
            titles().get((feature, sid), ""),
            entry["proves"],
            entry.get("not_proven", ""),
            entry.get("other_proof", ""),
        )
        for feature, entries in data["scenarios"].items()
        for sid, entry in entries.items()
    )
    ids = [scenario.id for scenario in scenarios]
    if doubled := sorted({sid for sid in ids if ids.count(sid) > 1}):
        raise CoverageMapError(f"{MAP_FILE.name} defines these scenario ids twice: {doubled}")
    scenario_map = ScenarioMap(scenarios)

    def checks(entries: list[dict[str, Any]], where: str = "") -> tuple[Check, ...]:
        return tuple(
            Check(
                entry["name"],
                entry.get("where", where),
                entry["asserts"],
                tuple(map(scenario_map.lookup, entry["scenarios"])),
                entry["only_upstream"],
                entry["only_here"],
            )
            for entry in entries
        )

    return CoverageMap(
        data["upstream"],
        data["umbrella_issue"],
        scenario_map,
        checks(data["upstream_tests"]),
        checks(data["umbrella_items"], "umbrella issue"),
    )


@cache
def coverage_map() -> CoverageMap:
    """The map of docgen/coverage.yaml."""
    return parse_map(yaml.safe_load(MAP_FILE.read_text(encoding="utf-8")))


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def coverage_document(coverage: CoverageMap) -> str:
    """docs/coverage.md, generated from the map's checks."""
    header = [
        "# What upstream's e2e tests check, and where this suite checks it",
        "",
        "Generated by `python -m docgen.coverage > docs/coverage.md` from "
        "`docgen/coverage.yaml`; tests/suite/test_coverage.py keeps it so. Upstream's "
        f"files are in `{coverage.upstream}`; the umbrella issue is upstream's "
        f'"{coverage.umbrella_issue}".',
        "",
        "Upstream's load tests have their counterpart in `features/sustained_load.feature`, "
        "which the default run leaves out: run it with `./dev suite "
        "--tags=@load` (settings `load_sessions`, `load_rate`, `load_required_share`).",
        "",
        "No upstream e2e test streams: server-sent events, answers of unknown length, "
        "WebSocket conversations and many callers streaming at once are this suite's alone "
        "(`features/streams.feature`, tag `@streaming`; docs/scenarios.md).",
        "",
    ]
    columns = [
        "| upstream | where | asserts | covered here by | only upstream checks | "
        "only this suite checks |",
        "|---|---|---|---|---|---|",
    ]

    def rows(checks: tuple[Check, ...]) -> list[str]:
        return [
            "| "
            + " | ".join(
                _cell(cell)
                for cell in (
                    check.name,
                    f"`{check.where}`",
                    check.asserts,
                    "; ".join(map(str, check.scenarios)) or "not covered",
                    check.only_upstream,
                    check.only_here,
                )
            )
            + " |"
            for check in checks
        ]

    return "\n".join(
        [
            *header,
            *("## Upstream's e2e tests (run_e2e.sh)", "", *columns, *rows(coverage.upstream_tests)),
            "",
            *("## The umbrella issue's items", "", *columns, *rows(coverage.umbrella_items)),
        ]
    )


if __name__ == "__main__":
    sys.stdout.write(coverage_document(coverage_map()) + "\n")
