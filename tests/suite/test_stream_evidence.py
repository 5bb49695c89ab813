"""A stream's evidence: when its events were sent and when they arrived. A run against a
Router that buffers whole answers fails the events scenario, and its HTML report shows,
at the failed step, a table of each event's send and arrival times, so that the buffering
is plain at a glance; the console shows the same table."""

from __future__ import annotations

import re

import pytest

from acceptance.core.evidence import Exchange, text_table
from localcube import embedded
from tests.localcube.support import FIXTURES
from tests.suite.commands import run_behave
from tests.suite.fault_proxy import FaultProxy
from tests.suite.test_reports import readable_texts

TOKEN = "stream-evidence-Wd5Rt8"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    work = tmp_path_factory.mktemp("stream-evidence")
    (work / "tokens").write_text(f"caller={TOKEN}\n")
    cube = embedded.start(
        [FIXTURES],
        work / "localcube.log",
        gc_interval="100ms",
        extra_arguments=["--token-file", str(work / "tokens")],
    )
    try:
        with FaultProxy(cube.url, "buffer-whole-answers") as proxy:
            report = work / "report.html"
            result = run_behave(
                *("-f", "html-review", "-o", str(report), "-f", "plain"),
                "--name=reach the caller as the agent produces them",
                userdata={
                    "router_url": proxy.url,
                    "platform": "localcube",
                    "reports_dir": str(work),
                },
                timeout=180,
                AGENTCUBE_API_TOKEN=TOKEN,
            )
    finally:
        cube.stop()
    assert result.status == 1, result.stdout[-4000:] + result.stderr[-2000:]
    return result.output, "\n".join(readable_texts(report))


def test_the_html_report_shows_the_events_send_and_arrival_times(run) -> None:
    _, html = run
    assert "Stream timeline of GET" in html
    table = re.search(r'<table class="evidence-table">.*?</table>', html, re.S)
    assert table, "the failed step carries the timeline as an HTML table"
    assert "<th>sent by the agent</th><th>arrived at the caller</th>" in table[0]
    assert table[0].count("<tr>") == 1 + 8  # the headings and the 8 events


def test_the_console_shows_the_same_timeline(run) -> None:
    output, _ = run
    assert "Expected: the first event to reach the caller at least" in output
    assert re.search(r"event\s+sent by the agent\s+arrived at the caller", output)
    assert TOKEN not in output


def test_an_exchange_shows_its_timeline_as_an_aligned_table() -> None:
    timeline = (("event", "sent"), ("0", "+0.000 s"), ("10", "+1.000 s"))
    exchange = Exchange("GET", "http://router.test/events", {}, None, status=200, timeline=timeline)
    assert text_table(timeline) == "event      sent\n    0  +0.000 s\n   10  +1.000 s"
    assert "  |    10  +1.000 s" in exchange.format()
