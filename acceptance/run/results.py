"""What a run did, kept for its end-of-run summary: each scenario's outcome, tags and
duration, each step's duration, the latencies measured, and the notes of the closing report.

A behave process collects them as it goes. A parallel run has many behave processes: each
saves its results as JSON in one directory, and the parallel command loads them all.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

from behave.configuration import Configuration
from behave.model import Feature, Scenario
from behave.runner_util import collect_feature_locations, parse_features

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"
# A scenario the run's interruption (Ctrl-C) cut off: it neither passed nor failed.
INTERRUPTED = "interrupted"


@dataclass(frozen=True)
class ScenarioResult:
    feature: str
    name: str
    tags: tuple[str, ...]
    outcome: str
    duration: float
    failed_step: str = ""  # a failed scenario's: the step, and the first line of why
    failure: str = ""

    @property
    def title(self) -> str:
        return f"{self.feature}: {self.name}"


@dataclass(frozen=True)
class StepResult:
    scenario: str
    text: str
    duration: float


def failure_of(scenario: Scenario) -> tuple[str, str]:
    """The step that failed (or "" for a hook) and the first line of its error."""
    for step in scenario.all_steps:
        if step.status.has_failed():
            why = str(step.exception) if step.exception else step.error_message
            return f"{step.keyword} {step.name}", first_line(why or step.status.name)
    return "", first_line(scenario.error_message or "failed in a hook")


def first_line(message: str | BaseException) -> str:
    """The first line of a message that is not blank (an error without one: its type)."""
    blank = type(message).__name__ if isinstance(message, BaseException) else ""
    return next((line.strip() for line in str(message).splitlines() if line.strip()), blank)


def run_features(config: Configuration) -> list[Feature]:
    """The features a run with this configuration parses, as behave's runner does: its
    paths less what `exclude` leaves out (for the run, the parallel run and the listing)."""
    locations = collect_feature_locations(config.paths)
    features: list[Feature] = parse_features(
        [location for location in locations if not config.exclude(location)],
        language=config.lang,
    )
    return features


def selection(
    features: list[Feature], config: Configuration
) -> tuple[list[Scenario], list[Scenario]]:
    """The scenarios at the run's paths (a `features/x.feature:12` is one scenario) that its
    tag expression and names select, and those they leave out; call it before the run,
    which marks others skipped too."""
    selected: list[Scenario] = []
    deselected: list[Scenario] = []
    for feature in features:
        for scenario in feature.walk_scenarios():
            if not scenario.should_skip:
                chosen = scenario.should_run_with_tags(config.tag_expression)
                chosen = chosen and scenario.should_run_with_name_select(config)
                (selected if chosen else deselected).append(scenario)
    return selected, deselected


@dataclass
class RunResults:
    scenarios: list[ScenarioResult] = field(default_factory=list)
    steps: list[StepResult] = field(default_factory=list)
    latencies: dict[str, list[float]] = field(default_factory=dict)
    notes: dict[str, list[str]] = field(default_factory=dict)
    # Scenarios the tags or names left out and selected, counted once before the run.
    deselected: int = 0
    selected: int = 0
    # Whether the run was interrupted (Ctrl-C) before every selected scenario ran.
    interrupted: bool = False
    # The AgentCube release the run was held to, and why (acceptance.run.preflight.Release).
    release: str = ""

    def add_scenario(self, scenario: Scenario, *, cut_off: bool = False) -> None:
        """Record a scenario that has ended; `cut_off`: by the run's interruption."""
        if cut_off:
            outcome = INTERRUPTED
        elif scenario.status.has_failed():  # any failure, error or undefined step
            outcome = FAILED
        else:  # a skipped or untested one counts as skipped
            outcome = PASSED if scenario.status.name == PASSED else SKIPPED
        failed_step, failure = failure_of(scenario) if outcome == FAILED else ("", "")
        result = ScenarioResult(
            feature=scenario.feature.name,
            name=scenario.name,
            tags=tuple(sorted(str(tag) for tag in scenario.effective_tags)),  # not behave's Tag
            outcome=outcome,
            duration=scenario.duration,
            failed_step=failed_step,
            failure=failure,
        )
        self.scenarios.append(result)
        self.steps += [
            StepResult(result.title, f"{step.keyword} {step.name}", step.duration)
            for step in scenario.all_steps
            if step.duration
        ]

    @property
    def never_ran(self) -> int:
        """The selected scenarios an interrupted run never reached."""
        return max(self.selected - len(self.scenarios), 0) if self.interrupted else 0

    def merge(self, other: RunResults) -> None:
        self.scenarios += other.scenarios
        self.steps += other.steps
        for name, samples in other.latencies.items():
            self.latencies.setdefault(name, []).extend(samples)
        for title, items in other.notes.items():
            self.notes.setdefault(title, []).extend(items)
        self.release = self.release or other.release

    def save(self, directory: Path) -> None:
        """Write these results to a new file in the directory, whole at once for a reader
        watching it."""
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{os.getpid()}-{uuid.uuid4().hex[:8]}.json"
        written = path.with_suffix(".part")
        written.write_text(json.dumps(asdict(self)))
        written.replace(path)

    @classmethod
    def load_file(cls, path: Path) -> RunResults:
        """The results one process saved."""
        data = json.loads(path.read_text())
        data["scenarios"] = [
            ScenarioResult(**{**s, "tags": tuple(s["tags"])}) for s in data["scenarios"]
        ]
        data["steps"] = [StepResult(**s) for s in data["steps"]]
        return cls(**data)

    @classmethod
    def load(cls, directory: Path) -> RunResults:
        """The results saved in the directory by every process of a run, merged."""
        merged = cls()
        for path in sorted(directory.glob("*.json")):
            merged.merge(cls.load_file(path))
        return merged
