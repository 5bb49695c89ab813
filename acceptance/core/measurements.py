"""Latencies the scenarios measure (session creation cold and warm, invocations), kept
for the whole run so its summary can report them."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Summary:
    """One measurement's distribution: its percentiles, and every sample for the chart."""

    name: str
    p50: float
    p95: float
    samples: tuple[float, ...] = field(repr=False)


def percentile(samples: list[float], fraction: float) -> float:
    """Nearest-rank percentile of non-empty samples."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


@dataclass
class Measurements:
    _samples: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))

    def record(self, name: str, seconds: float) -> None:
        self._samples[name].append(seconds)

    def samples(self) -> dict[str, list[float]]:
        """Every sample by name, to carry them to another process."""
        return {name: list(samples) for name, samples in self._samples.items()}


def summaries(samples: Mapping[str, list[float]]) -> list[Summary]:
    """The distribution of each measurement's samples, by name."""
    return [
        Summary(name, percentile(seen, 0.5), percentile(seen, 0.95), tuple(seen))
        for name, seen in sorted(samples.items())
    ]
