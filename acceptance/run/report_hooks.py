"""What the hooks hand to the HTML review report (acceptance.run.html_report): step
attachments and the run summary (acceptance.run.start hands it why a run stopped). The
report is found by its format name, so a run without one never imports the formatter nor
matplotlib."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from behave.formatter.base import Formatter
from behave.runner import Context

from acceptance.core.evidence import Table
from acceptance.run.summary import RunSummary

if TYPE_CHECKING:
    from dominate.dom_tag import dom_tag

REVIEW_FORMAT = "html-review"  # behave.ini registers the formatter under this name


def review_reports(formatters: Iterable[Formatter]) -> list[Formatter]:
    """The review reports (acceptance.run.html_report.ReviewReport) among the formatters."""
    return [report for report in formatters if report.name == REVIEW_FORMAT]


def _review_reports(context: Context) -> list[Formatter]:
    # behave keeps its formatters on the runner; the pretty formatter documents this access.
    return review_reports(context._runner.formatters)


def attach_text(context: Context, caption: str, text: str | Callable[[], str]) -> None:
    """Attach text to the step that runs (or has just run) in every review report; text
    given as a function is only made when a review report is written."""
    reports = _review_reports(context)
    if reports and callable(text):
        text = text()
    for report in reports:
        report.embed("text/plain", text, caption)


def html_table(table: Table, **attributes: str) -> dom_tag:
    """A small table (headings, then rows of text) as an HTML table."""
    from dominate import tags  # here: only a review report loads dominate

    headings, *rows = table
    return tags.table(
        tags.thead(tags.tr(tags.th(cell) for cell in headings)),
        tags.tbody(tags.tr(tags.td(cell) for cell in row) for row in rows),
        **attributes,
    )


def attach_table(context: Context, caption: str, table: Table) -> None:
    """Attach a small table to the step that runs (or has just run) in every review report."""
    reports = _review_reports(context)
    html = html_table(table, cls="evidence-table").render(pretty=False) if reports else ""
    for report in reports:
        report.embed("text/html", html, caption)


def add_run_summary(context: Context, summary: RunSummary) -> None:
    """Give every review report the run summary."""
    for report in _review_reports(context):
        report.run_summary = summary
