"""What each test came to, read from what the runners print: `go test -json` events and
unittest's verbose report; one summary line and a JUnit file of them all."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ElementTree
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"

# unittest's verbose line (verbosity=2): "name (module.Class.name) ... ok", the docstring's
# first line, when there is one, on a line of its own before " ... ".
_UNITTEST = re.compile(
    r"^(?P<name>\w+) \((?P<id>[\w.]+)\)(?:\n(?P<doc>[^\n]*?))? \.\.\. "
    r"(?P<result>ok|FAIL|ERROR|skipped.*|expected failure|unexpected success)$",
    re.MULTILINE,
)
_UNITTEST_STATUS = {"ok": PASSED, "expected failure": PASSED, "FAIL": FAILED, "ERROR": FAILED}


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
                    element, "testcase", classname=suite, name=outcome.name,
                    time=f"{outcome.seconds:.3f}",
                )  # fmt: skip
                if outcome.status == FAILED:
                    ElementTree.SubElement(case, "failure", message="failed").text = outcome.detail
                elif outcome.status == SKIPPED:
                    ElementTree.SubElement(case, "skipped", message=outcome.detail)
        ElementTree.indent(root)
        ElementTree.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def _counts(counts: Counter) -> str:
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
            text = "".join(output.get((event.get("FailedBuild", ""), ""), [])) + "".join(
                output.get(key, [])
            )
            if key[1]:
                outcomes.append(Outcome(suite, key[1], status, event.get("Elapsed", 0.0), text))
                if status == FAILED:
                    failed_tests.add(key[0])
            elif status == FAILED and key[0] not in failed_tests:
                outcomes.append(Outcome(suite, f"package {key[0]}", FAILED, 0.0, text))
    return outcomes


def from_unittest(file: str, report: str, exit_code: int) -> list[Outcome]:
    """The tests of a unittest file's verbose report; the file itself as a failed outcome
    when it exited non-zero and no test says why (it did not import, say)."""
    outcomes = []
    for match in _UNITTEST.finditer(report):
        result = match["result"]
        status = _UNITTEST_STATUS.get(result, SKIPPED if result.startswith("skipped") else FAILED)
        detail = result.removeprefix("skipped").strip() if status == SKIPPED else ""
        outcomes.append(
            Outcome(file, match["name"], status, 0.0, detail or _failure(report, match["name"]))
        )
    if exit_code != 0 and not any(outcome.status == FAILED for outcome in outcomes):
        outcomes.append(Outcome(file, file, FAILED, 0.0, _tail(report)))
    return outcomes


def _failure(report: str, name: str) -> str:
    """The traceback unittest printed for test `name`, if it failed."""
    match = re.search(
        rf"^(?:FAIL|ERROR): {re.escape(name)} .*?(?=^(?:FAIL|ERROR): |^-{{70}}\nRan |\Z)",
        report,
        re.MULTILINE | re.DOTALL,
    )
    return match.group(0).strip() if match else ""


def _tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.splitlines()[-lines:])
