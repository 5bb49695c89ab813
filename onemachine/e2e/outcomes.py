"""What each test came to: read from `go test -json` events and from the results
unittest_recorder.py keeps of a Python file; one summary line and a JUnit file of them all."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"


@dataclass(frozen=True)
class Outcome:
    suite: str
    name: str
    status: str
    seconds: float = 0.0
    detail: str = ""


@dataclass
class Report:
    outcomes: list[Outcome] = field(default_factory=list)

    def add(self, outcomes: Iterable[Outcome]) -> None:
        self.outcomes.extend(outcomes)

    @property
    def failed(self) -> bool:
        return any(outcome.status == FAILED for outcome in self.outcomes)

    def summary(self, seconds: float) -> str:
        """One line: the counts, each suite's, and the failures by name."""
        counts = Counter(outcome.status for outcome in self.outcomes)
        suites = []
        for suite in dict.fromkeys(outcome.suite for outcome in self.outcomes):
            mine = Counter(o.status for o in self.outcomes if o.suite == suite)
            suites.append(f"{suite} {_counts(mine)}")
        failures = [f"{o.suite}: {o.name}" for o in self.outcomes if o.status == FAILED]
        line = (
            f"upstream e2e on the one-machine cluster: {_counts(counts)} in {seconds:.0f} s"
            f" ({'; '.join(suites) or 'nothing ran'})"
        )
        return line + (f"\nfailed: {', '.join(failures)}" if failures else "")

    def write_junit(self, path: Path) -> None:
        root = ElementTree.Element("testsuites")
        for suite in dict.fromkeys(outcome.suite for outcome in self.outcomes):
            mine = [o for o in self.outcomes if o.suite == suite]
            counts = Counter(o.status for o in mine)
            element = ElementTree.SubElement(
                root,
                "testsuite",
                name=suite,
                tests=str(len(mine)),
                failures=str(counts[FAILED]),
                skipped=str(counts[SKIPPED]),
                time=f"{sum(o.seconds for o in mine):.3f}",
            )
            for outcome in mine:
                case = ElementTree.SubElement(
                    element,
                    "testcase",
                    classname=suite,
                    name=outcome.name,
                    time=f"{outcome.seconds:.3f}",
                )
                if outcome.status == FAILED:
                    ElementTree.SubElement(case, "failure", message="failed").text = outcome.detail
                elif outcome.status == SKIPPED:
                    ElementTree.SubElement(case, "skipped", message=outcome.detail)
        ElementTree.indent(root)
        ElementTree.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def _counts(counts: Counter[str]) -> str:
    return ", ".join(f"{counts[status]} {status}" for status in (PASSED, FAILED, SKIPPED))


def from_go_events(lines: Iterable[str], suite: str = "go") -> list[Outcome]:
    """The tests of `go test -json` output (cmd/test2json's events): one outcome per test
    and subtest that ended; a package that failed without a failed test (it did not
    build, or panicked) is an outcome of its own, with its output."""
    output: dict[tuple[str, str], list[str]] = {}
    outcomes: list[Outcome] = []
    failed_tests: set[str] = set()
    for line in lines:
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue  # go's own messages (a download, a build error) come as plain text too
        key = (event.get("Package", ""), event.get("Test", ""))
        action = event.get("Action")
        if action == "build-output":  # the compiler's words, by the build's ImportPath
            output.setdefault((event.get("ImportPath", ""), ""), []).append(event["Output"])
        elif action == "output":
            output.setdefault(key, []).append(event.get("Output", ""))
        elif action in ("pass", "fail", "skip"):
            status = {"pass": PASSED, "fail": FAILED, "skip": SKIPPED}[action]
            built = event.get("FailedBuild")  # the compiler's words, when the build failed
            text = "".join(output.get((built, ""), []) if built else []) + "".join(
                output.get(key, [])
            )
            if key[1]:
                outcomes.append(Outcome(suite, key[1], status, event.get("Elapsed", 0.0), text))
                if status == FAILED:
                    failed_tests.add(key[0])
            elif status == FAILED and key[0] not in failed_tests:
                outcomes.append(Outcome(suite, f"package {key[0]}", FAILED, 0.0, text))
    return outcomes


def from_recorded(file: str, recorded: Path, report: str, exit_code: int) -> list[Outcome]:
    """The tests of a Python e2e file, from what unittest_recorder.py recorded; the file
    itself as a failed outcome when it exited non-zero and no test says why (it did not
    import, say), with the end of its output."""
    try:
        results = json.loads(recorded.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        results = []
    outcomes = [Outcome(file, r["name"], r["status"], 0.0, r["detail"]) for r in results]
    if exit_code != 0 and not any(outcome.status == FAILED for outcome in outcomes):
        outcomes.append(Outcome(file, file, FAILED, 0.0, _tail(report)))
    return outcomes


def _tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.splitlines()[-lines:])
