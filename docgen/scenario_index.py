"""The index of the scenarios by capability (docs/scenarios.md): for each feature file its
description, and for each scenario its tags, what it proves (from the coverage map,
docgen/coverage.yaml) and the broken targets that fail it (the cases of
tests/suite/test_broken_targets.py, read from its source as data: importing it would start
pytest's machinery and localcube's).

`python -m docgen.scenario_index > docs/scenarios.md` writes the page;
tests/suite/test_scenario_index.py keeps it so.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from behave.model import Feature, Scenario, ScenarioOutline
from behave.parser import parse_file

from docgen.coverage import FEATURES, CoverageMap, CoverageMapError, coverage_map

ROOT = FEATURES.parent
BROKEN_TARGETS = ROOT / "tests" / "suite" / "test_broken_targets.py"
DEFAULT_TARGET = "cube"


@dataclass(frozen=True)
class BrokenTarget:
    """One case of test_broken_targets.py: its name, the fault its proxy injects (if any),
    the localcube it reaches, and the behave -n patterns of the scenarios it must fail."""

    name: str
    fault: str | None
    target: str
    patterns: tuple[str, ...]

    def fails(self, scenario: Scenario) -> bool:
        """Whether the case runs the scenario (behave -n: a pattern found in its name, or
        in the name of one of an outline's examples)."""
        names = [scenario.name]
        if isinstance(scenario, ScenarioOutline):
            names += [example.name for example in scenario.scenarios]
        return any(re.search(pattern, name) for pattern in self.patterns for name in names)

    def __str__(self) -> str:
        how = [f"`{self.fault}`"] if self.fault else []
        if self.target != DEFAULT_TARGET:
            how.append(f"the localcube `{self.target}`")
        return f"{self.name} ({', '.join(how)})"


def _literal(node: ast.expr, where: str) -> object:
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise CoverageMapError(f"{where}: not a literal: {ast.unparse(node)}") from None


def broken_targets(source: Path = BROKEN_TARGETS) -> list[BrokenTarget]:
    """The cases of the module's `CASES = {name: Case(fault, names, ...), ...}`."""
    tree = ast.parse(source.read_text(encoding="utf-8"), filename=str(source))
    for node in tree.body:
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "CASES":
            cases = node.value
            break
    else:
        raise CoverageMapError(f"{source} has no CASES")
    if not isinstance(cases, ast.Dict):
        raise CoverageMapError(f"{source}: CASES is not a dict literal")
    found = []
    for key, case in zip(cases.keys, cases.values, strict=True):
        where = f"{source.name}:{case.lineno}"
        if key is None or not isinstance(case, ast.Call) or len(case.args) < 2:
            raise CoverageMapError(f"{where}: not a `name: Case(fault, names, ...)` entry")
        keywords = {keyword.arg: keyword.value for keyword in case.keywords}
        target = keywords.get("target")
        found.append(
            BrokenTarget(
                str(_literal(key, where)),
                _literal(case.args[0], where),
                DEFAULT_TARGET if target is None else str(_literal(target, where)),
                tuple(_literal(case.args[1], where)),
            )
        )
    return found


def _tags(feature: Feature, scenario: Scenario) -> str:
    tags = [*feature.tags, *scenario.tags]
    if isinstance(scenario, ScenarioOutline):
        tags += [tag for examples in scenario.examples for tag in examples.tags]
    return " ".join(f"@{tag}" for tag in dict.fromkeys(tags))


def _description(path: Path, feature: Feature) -> list[str]:
    """The feature's description as written, its paragraphs apart (behave's model drops
    the blank lines between them)."""
    written = path.read_text(encoding="utf-8").splitlines()[feature.line :]
    lines: list[str] = []
    for line in map(str.strip, written):
        if line.startswith(_DESCRIPTION_ENDS):
            break
        if line or (lines and lines[-1]):
            lines.append(line)
    return lines[: len(lines) - (lines[-1:] == [""])]


# Where a feature's description ends: the first tag, comment or block after it.
_DESCRIPTION_ENDS = ("@", "#", "Background:", "Rule:", "Scenario", "Example")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _feature_section(
    path: Path, coverage: CoverageMap, cases: list[BrokenTarget]
) -> tuple[list[str], list[str]]:
    """The feature's section, and its scenarios that the map lacks."""
    feature = parse_file(str(path))
    mapped = {scenario.title: scenario for scenario in coverage.scenarios.of_feature(path.name)}
    lines = [f"## {feature.name} (`features/{path.name}`)", "", *_description(path, feature), ""]
    lines += [
        "| scenario | tags | what it proves | broken target that fails it |",
        "|---|---|---|---|",
    ]
    missing = []
    for scenario in feature.scenarios:
        entry = mapped.get(scenario.name)
        if entry is None:
            missing.append(f"{scenario.name} (`{path.name}`)")
            continue
        failing = [str(case) for case in cases if case.fails(scenario)]
        if entry.other_proof:
            failing.append(entry.other_proof)
        shown = "; ".join(failing) or "not yet shown to fail against a broken target"
        if failing and entry.not_proven:
            shown += f"; not yet shown to fail: {entry.not_proven}"
        cells = (scenario.name, _tags(feature, scenario), entry.proves, shown)
        lines.append("| " + " | ".join(map(_cell, cells)) + " |")
    return [*lines, ""], missing


INTRODUCTION = """\
# The scenarios, by capability

Generated by `python -m docgen.scenario_index > docs/scenarios.md` from `features/`,
`docgen/coverage.yaml` (what each scenario proves) and the cases of
`tests/suite/test_broken_targets.py` (the broken target that fails it);
tests/suite/test_scenario_index.py keeps it so. Which upstream e2e test and umbrella-issue
item each scenario covers: [coverage.md](coverage.md).

Each broken target is a behave run against a deliberately broken target: the fault proxy
`tests/suite/fault_proxy.py` (its fault in backquotes) in front of a real localcube, or a
localcube started with options that break a promise. The case must fail the scenario with
a message naming the expectation; every such run is also scanned for the bearer tokens it
uses, none of which may appear in its output or reports.

After the whole run, the suite checks that no sandbox of a session it opened is left on the
target (with a platform that can observe sandboxes): a leftover fails the run with
`HOOK-ERROR in after_all` naming the sessions (proven by `deletion-not-done`). Sessions kept
on purpose (`keep_on_failure=true`) are not counted. Which scenarios a run selects, and how
to run `@serial` and `@disruptive` ones: [running.md](running.md).
"""


def scenario_index(
    coverage: CoverageMap, cases: list[BrokenTarget], features: Path = FEATURES
) -> str:
    """docs/scenarios.md. Raises CoverageMapError naming the scenarios the map lacks."""
    sections, missing = [INTRODUCTION], []
    for path in sorted(features.glob("*.feature")):
        lines, lacking = _feature_section(path, coverage, cases)
        sections.append("\n".join(lines))
        missing += lacking
    if missing:
        raise CoverageMapError("docgen/coverage.yaml lacks these scenarios: " + "; ".join(missing))
    return "\n".join(sections).rstrip() + "\n"


if __name__ == "__main__":
    sys.stdout.write(scenario_index(coverage_map(), broken_targets()))
