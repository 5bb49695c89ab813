"""Wall time of the whole default suite against localcube: sequential (`./dev suite`) versus
parallel (`./dev parallel --processes N`), back to back on the same machine, alternating
`--rounds` times so that both see the same load, and the ratio of their medians.

Each run starts its own localcube, as the commands do, and writes into a temporary reports
directory. A run that fails is reported and makes the script exit non-zero.

Run: .venv/bin/python bench/suite_wall_time.py [--processes 4] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed_run(command: list[str]) -> tuple[float, int]:
    """Seconds the command took and its exit status; its output is dropped."""
    with tempfile.TemporaryDirectory(prefix="suite-bench-") as reports:
        started = time.perf_counter()
        status = subprocess.run(
            [*command, f"--define=reports_dir={reports}"],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        ).returncode
        return time.perf_counter() - started, status


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--rounds", type=int, default=2)
    options = parser.parse_args()
    commands = {
        "sequential": [sys.executable, "-m", "behave", "--format=null"],
        f"parallel, {options.processes} processes": [
            sys.executable,
            "-m",
            "acceptance.run.parallel_run",
            f"--processes={options.processes}",
        ],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    failed = False
    for round_number in range(1, options.rounds + 1):
        for name, command in commands.items():
            seconds, status = timed_run(command)
            times[name].append(seconds)
            failed |= status != 0
            outcome = "passed" if status == 0 else f"FAILED (exit {status})"
            print(f"round {round_number}: {name}: {seconds:.1f} s, {outcome}", flush=True)
    sequential, parallel = (statistics.median(samples) for samples in times.values())
    print(f"\nmachine: {os.cpu_count()} CPUs; {options.rounds} rounds, medians:")
    print("| run | wall time (median) | runs |")
    print("|---|---|---|")
    for name, samples in times.items():
        runs = ", ".join(f"{s:.1f}" for s in samples)
        print(f"| {name} | {statistics.median(samples):.1f} s | {runs} |")
    print(f"\nparallel / sequential = {parallel / sequential:.2f} ({sequential / parallel:.2f}x)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
