"""A PNG chart of the latencies a run measured: the distribution of each measurement (cold
starts, warm-pool claims, calls in a session) as every sample with its box, p50 and p95
marked, on a logarithmic axis (a cold start and an invocation differ by orders of
magnitude)."""

from __future__ import annotations

import io

from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullFormatter

from acceptance.core.measurements import Summary

_SPREAD = 0.28  # how far the samples of one row spread up and down
_COLOURS = {"samples": "#4c78a8", "p50": "#000000", "p95": "#f58518"}


def latency_chart_png(latencies: list[Summary]) -> bytes:
    """The chart as PNG bytes; latencies must not be empty."""
    # A bare Figure, not pyplot: no global state, no display, and nothing to close.
    figure = Figure(figsize=(9, 1.0 + 0.8 * len(latencies)), dpi=110)
    axes = figure.subplots()
    rows = range(len(latencies))
    milliseconds = [[value * 1000 for value in s.samples] for s in latencies]
    axes.boxplot(
        milliseconds,
        positions=list(rows),
        orientation="horizontal",
        whis=(0, 100),  # whiskers from min to max: every sample is drawn anyway
        widths=2 * _SPREAD,
        showfliers=False,
        medianprops={"color": _COLOURS["p50"]},
    )
    for row, (summary, samples) in enumerate(zip(latencies, milliseconds, strict=True)):
        axes.scatter(
            samples,
            # Spread evenly by arrival, so that equal values stay visible side by side.
            [row + _SPREAD * (2 * (i % 7) / 6 - 1) * 0.8 for i in range(len(samples))],
            s=9,
            alpha=0.45,
            color=_COLOURS["samples"],
            label="each sample" if row == 0 else None,
            zorder=3,
        )
        p95 = summary.p95 * 1000
        axes.plot(
            [p95, p95],
            [row - _SPREAD, row + _SPREAD],
            color=_COLOURS["p95"],
            linewidth=2,
            label="p95" if row == 0 else None,
        )
        axes.annotate(
            f"p50 {summary.p50 * 1000:.1f} ms, p95 {p95:.1f} ms",
            (1.01, row),
            xycoords=("axes fraction", "data"),
            va="center",
            fontsize=8,
        )
    axes.plot([], [], color=_COLOURS["p50"], label="p50 (box: p25 to p75)")
    axes.set_yticks(list(rows), [f"{s.name} (n={len(s.samples)})" for s in latencies])
    axes.set_ylim(len(latencies) - 0.5, -0.5)
    axes.set_xscale("log")
    axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axes.xaxis.set_minor_formatter(NullFormatter())
    axes.set_xlabel("milliseconds (log scale)")
    axes.set_title("Latencies measured by the scenarios: cold starts, warm claims, calls")
    axes.legend(loc="upper left", bbox_to_anchor=(0.0, -0.18), ncols=3, frameon=False)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()
