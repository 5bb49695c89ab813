"""`./dev report`: one behave run that writes the HTML report for review
(`<reports_dir>/report.html`) and the JUnit XML for CI (`<reports_dir>/junit/`), with its
progress on the console. Other arguments are behave's, as for `./dev suite`.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

from behave.configuration import Configuration

from acceptance.platforms.target import read_settings
from acceptance.run.main import main as run_suite


def reports_dir(userdata: Mapping[str, str]) -> Path:
    """The reports directory behave's userdata (-D reports_dir) or the environment name."""
    return Path(read_settings(userdata, os.environ).suite.reports_dir)


def report_arguments(arguments: list[str], reports: Path) -> list[str]:
    """behave's arguments for a run that writes both reports into `reports` (the HTML
    report first, so that behave pairs it with its -o)."""
    config = Configuration(arguments)
    console = [] if config.format else ["-f", config.default_format]
    return [
        *("-f", "html-review", "-o", str(reports / "report.html")),
        *console,
        *arguments,
        *("--junit", "--junit-directory", str(reports / "junit")),
    ]


def main(arguments: list[str]) -> int:
    reports = reports_dir(Configuration(arguments).userdata)
    shutil.rmtree(reports / "junit", ignore_errors=True)  # no earlier report to mislead
    status = run_suite(report_arguments(arguments, reports))
    print(f"Reports: {reports / 'report.html'} (HTML), {reports / 'junit'}/ (JUnit XML)")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
