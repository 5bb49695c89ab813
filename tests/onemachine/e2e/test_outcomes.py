"""The report is read from what the real runners give: a real `go test -json` of a small
module, and a real unittest file run through the recorder."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from onemachine.e2e.outcomes import FAILED, PASSED, SKIPPED, Report, from_go_events, from_recorded
from onemachine.e2e.runners import RECORDER

GO_TESTS = textwrap.dedent(
    """\
    package sample

    import "testing"

    func TestPasses(t *testing.T) {}

    func TestFails(t *testing.T) { t.Fatal("the router answered 502") }

    func TestSkips(t *testing.T) { t.Skip("skipping OIDC test: OIDC_ENABLED not set") }

    func TestWithSubtests(t *testing.T) {
        t.Run("first", func(t *testing.T) {})
        t.Run("second", func(t *testing.T) { t.Error("second broke") })
    }
    """
)

PYTHON_TESTS = textwrap.dedent(
    '''\
    import unittest

    class Sample(unittest.TestCase):
        def test_plain(self):
            pass

        def test_documented(self):
            """A docstring unittest prints in place of the name, as upstream's files have."""
            import sys
            print("[MCP E2E] what a test prints between unittest's words", file=sys.stderr)

        def test_fails(self):
            self.assertEqual("Hello", "Goodbye")

        def test_errors(self):
            raise RuntimeError("sandbox gone")

        def test_skipped(self):
            raise unittest.SkipTest("MCP_K8S_MCP_URL not set")

    if __name__ == "__main__":
        unittest.main(verbosity=2)
    '''
)


def go_module(directory: Path, body: str) -> Path:
    directory.mkdir()
    (directory / "go.mod").write_text("module example.com/sample\n\ngo 1.21\n")
    (directory / "sample_test.go").write_text(body)
    return directory


def go_test_json(module: Path) -> list[str]:
    env = os.environ | {"GOTOOLCHAIN": "local", "GOFLAGS": "-mod=mod"}
    answer = subprocess.run(
        ["go", "test", "-v", "-json", "-count=1", "./..."],
        cwd=module,
        env=env,
        capture_output=True,
        text=True,
    )
    return answer.stdout.splitlines()


needs_go = pytest.mark.skipif(shutil.which("go") is None, reason="no go on PATH")


@needs_go
def test_each_go_test_and_subtest_is_an_outcome_with_its_own_output(tmp_path: Path) -> None:
    lines = go_test_json(go_module(tmp_path / "module", GO_TESTS))
    outcomes = {outcome.name: outcome for outcome in from_go_events(lines)}
    assert {name: o.status for name, o in outcomes.items()} == {
        "TestPasses": PASSED,
        "TestFails": FAILED,
        "TestSkips": SKIPPED,
        "TestWithSubtests/first": PASSED,
        "TestWithSubtests/second": FAILED,
        "TestWithSubtests": FAILED,
    }
    assert "the router answered 502" in outcomes["TestFails"].detail
    assert "OIDC_ENABLED not set" in outcomes["TestSkips"].detail


@needs_go
def test_a_package_that_does_not_build_is_a_failure_with_the_compiler_s_words(
    tmp_path: Path,
) -> None:
    broken = 'package sample\n\nimport "testing"\n\nfunc TestX(t *testing.T) { undefined() }\n'
    lines = go_test_json(go_module(tmp_path / "module", broken))
    outcomes = from_go_events(lines)
    assert [(o.name, o.status) for o in outcomes] == [("package example.com/sample", FAILED)]
    assert "undefined" in outcomes[0].detail


def unittest_report(tmp_path: Path, body: str) -> tuple[Path, str, int]:
    """The file run as the command runs it: through the recorder, from its directory."""
    (tmp_path / "test_sample.py").write_text(body)
    recorded = tmp_path / "results.json"
    answer = subprocess.run(
        [sys.executable, str(RECORDER), str(recorded), "test_sample.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    return recorded, answer.stdout + answer.stderr, answer.returncode


def test_each_unittest_result_is_read_from_the_recorded_results(tmp_path: Path) -> None:
    recorded, report, code = unittest_report(tmp_path, PYTHON_TESTS)
    outcomes = {o.name: o for o in from_recorded("test_sample.py", recorded, report, code)}
    assert {name: o.status for name, o in outcomes.items()} == {
        "test_plain": PASSED,
        "test_documented": PASSED,
        "test_fails": FAILED,
        "test_errors": FAILED,
        "test_skipped": SKIPPED,
    }
    assert "'Hello' != 'Goodbye'" in outcomes["test_fails"].detail
    assert "sandbox gone" in outcomes["test_errors"].detail
    assert "sandbox gone" not in outcomes["test_fails"].detail
    assert outcomes["test_skipped"].detail == "MCP_K8S_MCP_URL not set"
    # The file's own output is unittest's verbose report, unchanged.
    assert "as upstream's files have. ... [MCP E2E] what a test prints" in report


def test_a_file_that_fails_before_any_test_is_itself_a_failure(tmp_path: Path) -> None:
    recorded, report, code = unittest_report(tmp_path, "import agentcube_not_installed\n")
    outcomes = from_recorded("test_sample.py", recorded, report, code)
    assert [(o.name, o.status) for o in outcomes] == [("test_sample.py", FAILED)]
    assert "agentcube_not_installed" in outcomes[0].detail


def test_the_summary_counts_every_suite_and_names_each_failure(tmp_path: Path) -> None:
    report = Report()
    report.add(from_recorded("test_sample.py", *unittest_report(tmp_path, PYTHON_TESTS)))
    line = report.summary(61.4)
    assert line.startswith(
        "upstream e2e on the one-machine cluster: 2 passed, 2 failed, 1 skipped in 61 s "
        "(test_sample.py 2 passed, 2 failed, 1 skipped)"
    )
    assert "failed: test_sample.py: test_errors, test_sample.py: test_fails" in line
    assert report.failed


def test_junit_holds_a_suite_per_runner_with_failures_and_skips(tmp_path: Path) -> None:
    report = Report()
    report.add(from_recorded("test_sample.py", *unittest_report(tmp_path, PYTHON_TESTS)))
    report.write_junit(tmp_path / "junit.xml")
    suite = ElementTree.parse(tmp_path / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("name"), suite.get("tests"), suite.get("failures"), suite.get("skipped")) == (
        "test_sample.py",
        "5",
        "2",
        "1",
    )
    failure = suite.find("testcase[@name='test_fails']/failure")
    assert failure is not None and "'Hello' != 'Goodbye'" in (failure.text or "")


def test_nothing_run_is_said_and_is_no_failure() -> None:
    report = Report()
    assert report.summary(3) == (
        "upstream e2e on the one-machine cluster: 0 passed, 0 failed, 0 skipped in 3 s "
        "(nothing ran)"
    )
    assert not report.failed
