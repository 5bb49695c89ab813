"""Runs one of upstream's Python e2e files as `python FILE` runs it, and records each test's
result as unittest reports it, into a JSON file: `python unittest_recorder.py RESULTS FILE`.

The files print their own output between unittest's verbose lines (the SDK logs, the tests'
prints), so reading the report back is guesswork; the result objects are not. This script
runs in the e2e's virtual environment, with the standard library only: it imports nothing
of this repository.
"""

from __future__ import annotations

import atexit
import json
import os
import runpy
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from _typeshed import OptExcInfo
import unittest

results: list[dict[str, Any]] = []


class RecordingResult(unittest.TextTestResult):
    """unittest's own text result (the output is unchanged), each outcome also kept."""

    def _keep(self, test: unittest.TestCase, status: str, detail: str = "") -> None:
        results.append(
            {
                "name": getattr(test, "_testMethodName", None) or str(test),
                "id": test.id(),
                "description": self.getDescription(test),
                "status": status,
                "detail": detail,
            }
        )

    def addSuccess(self, test: unittest.TestCase) -> None:
        super().addSuccess(test)
        self._keep(test, "passed")

    def addFailure(self, test: unittest.TestCase, err: OptExcInfo) -> None:
        super().addFailure(test, err)
        self._keep(test, "failed", self.failures[-1][1])

    def addError(self, test: unittest.TestCase, err: OptExcInfo) -> None:
        super().addError(test, err)
        self._keep(test, "failed", self.errors[-1][1])

    def addSkip(self, test: unittest.TestCase, reason: str) -> None:
        super().addSkip(test, reason)
        self._keep(test, "skipped", reason)

    def addExpectedFailure(self, test: unittest.TestCase, err: OptExcInfo) -> None:
        super().addExpectedFailure(test, err)
        self._keep(test, "passed", "expected failure")

    def addUnexpectedSuccess(self, test: unittest.TestCase) -> None:
        super().addUnexpectedSuccess(test)
        self._keep(test, "failed", "unexpected success")


def main() -> None:
    record, script = sys.argv[1], sys.argv[2]

    def write() -> None:
        with open(record, "w", encoding="utf-8") as out:
            json.dump(results, out)

    atexit.register(write)
    # typeshed types the attribute as a callable of three positional arguments, which the
    # class is (stream, descriptions, verbosity)
    unittest.TextTestRunner.resultclass = RecordingResult  # type: ignore[assignment]
    sys.argv = [script]
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
