"""A PNG chart of the latencies a run measured: p50 and p95 of each measurement, side by
side, on a logarithmic axis (a cold start and an invocation differ by orders of magnitude)."""

from __future__ import annotations

import io

from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullFormatter

from acceptance.core.measurements import Summary

_BAR = 0.38
_COLOURS = {"p50": "#4c78a8", "p95": "#f58518"}


def latency_chart_png(latencies: list[Summary]) -> bytes:
    """The chart as PNG bytes; latencies must not be empty."""
    # A bare Figure, not pyplot: no global state, no display, and nothing to close.
    figure = Figure(figsize=(9, 0.9 + 0.75 * len(latencies)), dpi=110)
    axes = figure.subplots()
    positions = range(len(latencies))
    for offset, (label, values) in enumerate(
        (("p50", [s.p50 for s in latencies]), ("p95", [s.p95 for s in latencies]))
    ):
        milliseconds = [value * 1000 for value in values]
        bars = axes.barh(
            [p + (offset - 0.5) * _BAR for p in positions],
            milliseconds,
            height=_BAR,
            label=label,
            color=_COLOURS[label],
        )
        axes.bar_label(bars, labels=[f"{ms:.1f} ms" for ms in milliseconds], padding=3)
    axes.set_yticks(list(positions), [f"{s.name} (n={s.count})" for s in latencies])
    axes.invert_yaxis()
    axes.set_xscale("log")
    axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axes.xaxis.set_minor_formatter(NullFormatter())  # the bars carry their own values
    axes.set_xlabel("milliseconds (log scale)")
    axes.set_title("Latencies measured by the scenarios")
    axes.margins(x=0.25)
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()
