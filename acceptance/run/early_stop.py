"""A run that stops before any scenario: why, one line per problem, told on the console and
as an error in a JUnit file, so that CI's reports explain the stop as the console does."""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

from acceptance.core.evidence import redact
from acceptance.core.settings import ConfigError
from acceptance.platforms.base import TargetStartError
from acceptance.run.preflight import PreflightFailed
from acceptance.run.tag_check import UnknownTagError

TITLE = "The run stopped before any scenario"
JUNIT_FILE = "TESTS-run-stopped.xml"
# Errors that name their problem and its fix; any other error is told with its traceback.
EXPLAINED = (PreflightFailed, ConfigError, UnknownTagError, TargetStartError, AssertionError)


@dataclass(frozen=True)
class EarlyStop:
    """Why the run stopped: one line per problem (a line may be followed by details)."""

    kind: str
    problems: tuple[str, ...]

    @classmethod
    def of(cls, error: BaseException) -> EarlyStop:
        """The stop an error caused while the run started (secrets masked)."""
        if isinstance(error, PreflightFailed):
            problems = error.problems
        elif isinstance(error, KeyboardInterrupt):
            problems = ["interrupted (Ctrl-C)"]
        elif isinstance(error, EXPLAINED):
            problems = [str(error)]
        else:
            problems = ["".join(traceback.format_exception(error)).rstrip()]
        return cls(type(error).__name__, tuple(redact(problem) for problem in problems))

    def console_text(self) -> str:
        """What the console shows last: the title, then each problem."""
        count = len(self.problems)
        lines = [f"{TITLE} ({count} problem{'s' if count > 1 else ''} to fix):"]
        lines += [f"  - {problem}".replace("\n", "\n    ") for problem in self.problems]
        return "\n".join(lines)

    def write_junit(self, directory: Path) -> None:
        """A JUnit file whose one test case, the run's start, failed with this error."""
        directory.mkdir(parents=True, exist_ok=True)
        counts = {"tests": "1", "errors": "1", "failures": "0", "skipped": "0", "time": "0"}
        suite = ElementTree.Element("testsuite", {"name": "acceptance run", **counts})
        case = ElementTree.SubElement(
            suite, "testcase", classname="acceptance run", name="start of the run", time="0"
        )
        error = ElementTree.SubElement(case, "error", type=self.kind, message=self.problems[0])
        error.text = self.console_text()
        path = directory / JUNIT_FILE
        ElementTree.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)
