"""Reading a run's counts where a person reads them: the run summary's headline (console or
HTML report) and the totals of its JUnit XML."""

from __future__ import annotations

import html
import re
from pathlib import Path
from xml.etree import ElementTree

HEADLINE = re.compile(
    r"Run summary:? (?P<interruption>interrupted \(Ctrl-C\) in \"(?P<cut_off>[^\"]+)\": )?"
    r"(?P<total>\d+) scenarios: (?P<passed>\d+) passed, (?P<failed>\d+) failed, "
    r"(?:(?P<interrupted>\d+) interrupted, )?(?P<skipped>\d+) skipped"
    r"(?: \((?P<deselected>\d+) not selected by the tags or names, (?P<here>\d+) not for this "
    r"target\))?(?:, (?P<never_ran>\d+) never ran)?;"
)


def counts_of(text: str) -> dict[str, int]:
    found = HEADLINE.search(text)
    assert found, f"no run summary headline in:\n{text[-3000:]}"
    return {
        name: int(value) for name, value in found.groupdict().items() if value and value.isdigit()
    }


def junit_totals(directory: Path) -> dict[str, int]:
    totals = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    for path in directory.glob("*.xml"):
        suite = ElementTree.parse(path).getroot()
        for name in totals:
            totals[name] += int(suite.get(name, "0"))
    return totals


def html_text(path: Path) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", path.read_text())).split())
