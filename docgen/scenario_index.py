"""The index of the scenarios by capability (docs/scenarios.md): for each feature file its
description, and for each scenario its tags, what it proves (from the coverage map,
docgen/coverage.yaml) and the broken targets that fail it (the cases
tests/suite/test_broken_targets.py runs, kept as data in tests/suite/broken_targets.yaml).

`python -m docgen.scenario_index > docs/scenarios.md` writes the page;
tests/suite/test_scenario_index.py keeps it so.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml
from behave.model import Feature, Scenario, ScenarioOutline
from behave.parser import parse_file

from docgen.coverage import (
    FEATURES,
    ID_TAG,
    CoverageMap,
    CoverageMapError,
    coverage_map,
    scenario_id,
)

ROOT = FEATURES.parent
BROKEN_TARGETS = ROOT / "tests" / "suite" / "broken_targets.yaml"
DEFAULT_TARGET = "cube"


@dataclass(frozen=True)
class BrokenTarget:
    """One case of broken_targets.yaml: its name, the fault its proxy injects (if any),
    the localcube it reaches, the behave -n patterns of the scenarios it must fail, and the
    -D settings of its run."""

    name: str
    fault: str | None
    target: str
    patterns: tuple[str, ...]
    userdata: tuple[tuple[str, str], ...] = ()

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
        if not how:  # neither fault nor target: what breaks is what the run is told
            how = [f"`-D {name}={value}`" for name, value in self.userdata]
        return f"{self.name} ({', '.join(how)})"


def broken_targets(source: Path = BROKEN_TARGETS) -> list[BrokenTarget]:
    """The cases of broken_targets.yaml: `name: {fault, names, target?, ...}` each."""
    found = []
    for name, case in (yaml.safe_load(source.read_text(encoding="utf-8")) or {}).items():
        if not isinstance(case, dict) or "fault" not in case or not case.get("names"):
            raise CoverageMapError(f"{source.name}: case {name!r} has no fault and names")
        target = case.get("target", DEFAULT_TARGET)
        userdata = tuple((case.get("userdata") or {}).items())
        found.append(BrokenTarget(str(name), case["fault"], target, tuple(case["names"]), userdata))
    return found


def _tags(feature: Feature, scenario: Scenario) -> str:
    tags = [*feature.tags, *scenario.tags]
    if isinstance(scenario, ScenarioOutline):
        tags += [tag for examples in scenario.examples for tag in examples.tags]
    return " ".join(f"@{tag}" for tag in dict.fromkeys(tags) if not tag.startswith(ID_TAG))


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
    mapped = {scenario.id: scenario for scenario in coverage.scenarios.of_feature(path.name)}
    lines = [f"## {feature.name} (`features/{path.name}`)", "", *_description(path, feature), ""]
    lines += [
        "| scenario | tags | what it proves | broken target that fails it |",
        "|---|---|---|---|",
    ]
    missing = []
    for scenario in feature.scenarios:
        entry = mapped.get(scenario_id(scenario))
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
`docgen/coverage.yaml` (what each scenario proves) and the cases
`tests/suite/test_broken_targets.py` runs, `tests/suite/broken_targets.yaml` (the broken
target that fails it);
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

Timing verdicts give the same answer every run. One scenario compares two measurements of
one run: "A first call served from the warm pool waits for no sandbox to start" compares the
fastest first call from the pool with the fastest call in the session it opened. The call
in the session is part of every first call, so the difference is the opening of the session
alone, held to a fixed 0.5 s. A claim that waits on upstream's one-second poll
(`pkg/workloadmanager/handlers.go:331-340`) exceeds it in every run. A claim of a waiting
sandbox stays far below it (milliseconds on localcube). Cold starts, whose time varies from
run to run (0.12 s to 1.1 s on the one-machine cluster), are not part of the verdict:
`tests/suite/test_warm_pool_verdict.py` runs it five times against a target whose cold
starts alternate between no time and a second while each claim waits a second (it fails
every run), and five times against localcube (it passes every run). Every other timing
verdict holds one measurement to a limit the run set (`fail_fast`, a command's timeout,
`overload_hold`, a session's idle timeout or lifetime), never to another measurement. The
last two are scaled once, before the first scenario, to the target's cold start where the
user left them (`acceptance/run/timings.py`), so that a session outlives its first answer;
each scenario then holds the session's end to the limit it was given.
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
