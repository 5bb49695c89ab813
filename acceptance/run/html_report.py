"""The HTML report for product review (``./dev report``, or ``behave -f html-review -o
reports/report.html``): behave-html-pretty-formatter's page, each step with its HTTP
exchanges (redacted) and a failed one with the platform's evidence, opened by the run
summary and a latency chart, or by why a run stopped before any scenario. Hooks reach it
through acceptance.run.report_hooks.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from pathlib import Path

from behave.configuration import Configuration
from behave.formatter.base import StreamOpener
from behave.model import Feature
from behave_html_pretty_formatter import PrettyHTMLFormatter
from dominate import document
from dominate.tags import a, div, h2, h3, h4, img, p, pre, section
from dominate.util import raw

from acceptance.run.early_stop import TITLE, EarlyStop
from acceptance.run.report_hooks import REVIEW_FORMAT, html_table
from acceptance.run.summary import RunSummary

_STYLE = """<style>
.run-summary { margin: 0.5em 1em 1.5em; }
.run-summary table { border-collapse: collapse; margin: 0.3em 0 1em; }
.run-summary th, .run-summary td { border: 1px solid #bbb; padding: 2px 10px; text-align: left; }
.run-summary td:first-child { white-space: nowrap; }
.run-summary-table { display: inline-block; vertical-align: top; margin-right: 1.5em; }
.run-summary-table h4 { margin: 0.6em 0 0.2em; }
.run-summary img { max-width: 100%; }
.run-stopped { margin: 0.5em 1em 1.5em; padding: 0.5em 1em; border: 2px solid #c0392b; }
.run-stopped h3 { color: #c0392b; }
.run-stopped pre { white-space: pre-wrap; }
.evidence-table { border-collapse: collapse; margin: 0.3em 0; }
.evidence-table th, .evidence-table td { border: 1px solid #bbb; padding: 1px 8px; }
.evidence-table td { text-align: right; }
</style>"""


class ReviewReport(PrettyHTMLFormatter):
    """The pretty HTML report with the run summary under its global summary."""

    name = REVIEW_FORMAT
    description = "HTML report for review: pretty HTML with the run summary and latencies"

    # What acceptance.run.report_hooks and .start hand the report for the top of its page.
    run_summary: RunSummary | None = None
    early_stop: EarlyStop | None = None

    def __init__(self, stream: StreamOpener, config: Configuration) -> None:
        super().__init__(stream, config)
        self.add_html_head_element(_STYLE)

    def feature(self, feature: Feature) -> None:
        """The feature's description as prose: the formatter's narrow box would wrap each
        source line again into a ragged column."""
        super().feature(feature)
        self.features[-1].description = prose(feature.description)

    def _generate_global_summary(self) -> bool:
        # No public hook puts content at the top of the page: the run summary takes the place
        # of the global summary, which behave.ini turns off (it counts only what is shown).
        shown = super()._generate_global_summary()
        h2(self.title_string)
        if self.early_stop is not None:
            with section(cls="run-stopped", id="run-stopped"):
                h3(f"{TITLE}: error")
                for problem in self.early_stop.problems:
                    pre(problem)
        if self.run_summary is not None:
            _render_summary(self.run_summary)
        return shown


def prose(lines: list[str]) -> str:
    """Description lines as paragraphs, each joined into one line."""
    paragraphs = "\n".join(line.strip() for line in lines).split("\n\n")
    return "\n\n".join(" ".join(paragraph.split()) for paragraph in paragraphs if paragraph.strip())


def _render_summary(summary: RunSummary) -> None:
    with section(cls="run-summary", id="run-summary"):
        h3("Run summary")
        p(summary.headline)
        if summary.release:
            p(summary.release)
        if summary.latencies:
            # Imported here: matplotlib takes a second to load, which only a chart should cost.
            from acceptance.run.latency_chart import latency_chart_png

            png = latency_chart_png(summary.latencies)
            img(
                src="data:image/png;base64," + base64.b64encode(png).decode("ascii"),
                alt="p50 and p95 of each latency measured",
            )
        for summary_table in summary.tables:
            with div(cls="run-summary-table"):
                h4(summary_table.title + ("" if summary_table.rows else ": none"))
                if summary_table.rows:
                    html_table((summary_table.headers, *summary_table.rows))


def write_summary_page(summary: RunSummary, path: Path, links: Mapping[str, str]) -> None:
    """A page of the run summary and chart for `./dev parallel`, linking to the reports of
    its parts (`links`: title to a path relative to the page)."""
    page = document(title="AgentCube acceptance suite")
    with page.head:
        raw(_STYLE)
    with page:
        h2("AgentCube acceptance suite")
        _render_summary(summary)
        with section(cls="run-summary"):
            h4("Reports of its parts")
            for title, href in links.items():
                p(a(title, href=href))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page.render(), encoding="utf-8")
