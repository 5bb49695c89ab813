"""`./dev report` against a localcube the suite starts, whose Router requires the tokens of
the suite's own issuer: one run writes the HTML report (steps, their HTTP exchanges, the
platform evidence of a failure, the run summary and its latency chart) and the JUnit XML,
prints the summary, and leaves no token anywhere (nothing shaped as a JWT): not in the
reports, not in localcube's log, not on the console.
A run that writes no report does not load the reporting modules.

The run declares localcube's stateless interpreter to be the stateful one, and adds the
scenarios that rely on it to the smoke scenarios: those fail and their evidence is written
too.
"""

from __future__ import annotations

import ast
import base64
import gzip
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from xml.etree import ElementTree

import pytest

from acceptance.run.html_report import prose
from tests.suite.commands import ROOT, run_module
from tests.suite.leaks import JWT_SHAPE

# the module's fixtures serve all its tests: one process runs them (pytest-xdist)
pytestmark = pytest.mark.xdist_group("reports")

# A text embed larger than the formatter's threshold is written gzipped and base64-encoded.
_COMPRESSED_EMBED = re.compile(r'data="([A-Za-z0-9+/=]+)"')


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    reports = tmp_path_factory.mktemp("reports")
    status, output = run_module(
        "acceptance.run.report_run",
        "--tags=@smoke or @requires.stateful-interpreter",
        "--format=plain",
        f"--define=reports_dir={reports}",
        "--define=stateful_interpreter=python-interpreter",
        timeout=300,
    )
    assert status == 1, output  # the stateful scenario fails, as arranged
    return reports, output


def readable_texts(path: Path) -> Iterator[str]:
    """The file's text and, for an HTML report, the text of its compressed embeds."""
    text = path.read_bytes().decode("utf-8", errors="replace")
    yield text
    if path.suffix == ".html":
        for data in _COMPRESSED_EMBED.findall(text):
            try:
                yield gzip.decompress(base64.b64decode(data)).decode("utf-8", errors="replace")
            except (OSError, ValueError):
                continue


def test_the_html_report_shows_steps_exchanges_evidence_and_the_summary(run) -> None:
    reports, _ = run
    html = (reports / "report.html").read_text()
    assert "Run summary" in html and "Latencies measured" in html
    assert "data:image/png;base64," in html, "the latency chart is embedded"
    assert "Scenario: The first call opens a session" in html and "I send" in html
    assert "HTTP exchanges" in html
    assert "Platform evidence" in html and "localcube sandboxes" in html
    assert "Authorization: &lt;redacted&gt;" in html, "the exchanges show the masked header"
    assert "carries no session id opens a session: the Router" in html, (
        "a feature's description reads as one paragraph, not the source's lines"
    )


def test_a_description_is_read_as_paragraphs() -> None:
    assert prose(["  One line", "and the next.", "", "A second  paragraph."]) == (
        "One line and the next.\n\nA second paragraph."
    )


def test_the_junit_report_has_every_feature_and_the_failure_evidence(run) -> None:
    reports, _ = run
    files = sorted((reports / "junit").glob("TESTS-*.xml"))
    assert files
    suites = [ElementTree.parse(path).getroot() for path in files]
    failures = [
        element.text or ""
        for suite in suites
        for element in suite.iter()
        if element.tag in ("failure", "error", "system-out")
    ]
    assert any("HTTP exchanges of this scenario" in text for text in failures)


def test_the_run_prints_its_summary(run) -> None:
    _, output = run
    assert "Run summary: " in output
    assert "Scenarios by tag:" in output and "@smoke" in output
    assert "Latencies measured:" in output and "first call (cold start)" in output


def test_the_token_is_nowhere_in_the_reports_nor_on_the_console(run) -> None:
    reports, output = run
    files = [path for path in reports.rglob("*") if path.is_file()]
    assert {path.name for path in files} >= {"report.html", "localcube.log"}
    leaking = [
        path for path in files if any(JWT_SHAPE.search(text) for text in readable_texts(path))
    ]
    assert leaking == []
    assert not JWT_SHAPE.search(output)
    assert "Authorization: Bearer" not in output


REPORTING_MODULES = (
    "acceptance.run.html_report",
    "acceptance.run.latency_chart",
    "behave_html_pretty_formatter",
    "dominate",
    "matplotlib",
)


def reporting_modules_loaded(*imports: str) -> list[str]:
    """The reporting modules a fresh interpreter holds after these imports."""
    code = (
        "import importlib, sys\n"
        f"for name in {list(imports)!r}: importlib.import_module(name)\n"
        f"print(sorted(name for name in {list(REPORTING_MODULES)!r} if name in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return ast.literal_eval(result.stdout.strip())


def test_a_run_without_a_report_does_not_load_the_reporting() -> None:
    """What a plain run loads: behave's hooks and the run's start (and the modules they
    start the run with)."""
    loaded = reporting_modules_loaded("environment", "acceptance.run.start")
    assert loaded == [], f"a run without an HTML report imports {loaded}"


def test_the_report_loads_its_formatter_and_the_chart() -> None:
    """The check above sees these modules when they are loaded."""
    loaded = reporting_modules_loaded("acceptance.run.html_report", "acceptance.run.latency_chart")
    assert loaded == sorted(REPORTING_MODULES)
