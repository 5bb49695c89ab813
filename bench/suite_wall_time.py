"""Wall time of the default suite against localcube: sequential (`./dev suite`), parallel
(`./dev parallel`) and `@smoke` alone, back to back on the same machine, alternating
`--rounds` times so that all see the same load; min / median / max of each and the ratio of
the medians of parallel and sequential.

Each run starts its own localcube, as the commands do, and writes into a temporary reports
directory. A run that fails is reported, that directory (its output included) kept in
reports/suite-bench/<start time>/, and makes the script exit non-zero. `--tree` runs another
checkout's suite (say, a commit before a change) in the same rounds, for a before and after
measured side by side.

Run: .venv/bin/python bench/suite_wall_time.py [--processes N] [--rounds 3] [--tree DIR]
(--processes: as `./dev parallel`, four per CPU and at most 16 unless given)
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from acceptance.run.parallel_run import default_processes

ROOT = Path(__file__).resolve().parent.parent
FAILURES = ROOT / "reports" / "suite-bench"  # the reports of each run that failed


def timed_run(command: list[str], tree: Path, kept_if_failed: Path) -> tuple[float, int]:
    """Seconds the command took in `tree` and its exit status. A failed run's whole reports
    directory (its output, ./dev parallel's behavex logs, the reports) is copied to
    `kept_if_failed`, to tell why."""
    with tempfile.TemporaryDirectory(prefix="suite-bench-") as reports:
        started = time.perf_counter()
        with (Path(reports) / "output.txt").open("w") as sink:
            status = subprocess.run(
                [*command, f"--define=reports_dir={reports}"],
                cwd=tree,
                stdout=sink,
                stderr=subprocess.STDOUT,
                check=False,
            ).returncode
        seconds = time.perf_counter() - started
        if status != 0:
            shutil.copytree(reports, kept_if_failed)
        return seconds, status


def commands(processes: int) -> dict[str, list[str]]:
    return {
        "sequential": [sys.executable, "-m", "acceptance.run.main", "--format=null"],
        f"parallel, {processes} processes": [
            sys.executable,
            "-m",
            "acceptance.run.parallel_run",
            f"--processes={processes}",
        ],
        "@smoke": [sys.executable, "-m", "acceptance.run.main", "--format=null", "--tags=@smoke"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=default_processes())
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tree", type=Path, help="another checkout, measured alongside")
    options = parser.parse_args()
    trees = {"": ROOT} if options.tree is None else {"this tree: ": ROOT, "--tree: ": options.tree}
    runs = {
        (label + name, tree): command
        for label, tree in trees.items()
        for name, command in commands(options.processes).items()
    }
    times: dict[str, list[float]] = {name: [] for name, _ in runs}
    failed = False
    failures = FAILURES / time.strftime("%Y%m%dT%H%M%S")
    for round_number in range(1, options.rounds + 1):
        for (name, tree), command in runs.items():
            kept = failures / re.sub(r"[^\w@]+", "-", f"round {round_number} {name}")
            seconds, status = timed_run(command, tree, kept)
            times[name].append(seconds)
            failed |= status != 0
            outcome = "passed" if status == 0 else f"FAILED (exit {status}), its reports in {kept}"
            print(f"round {round_number}: {name}: {seconds:.1f} s, {outcome}", flush=True)
    print(f"\nmachine: {os.cpu_count()} CPUs; {options.rounds} rounds")
    print("| run | min | median | max |")
    print("|---|---|---|---|")
    for name, samples in times.items():
        figures = (min(samples), statistics.median(samples), max(samples))
        print(f"| {name} | " + " | ".join(f"{figure:.1f} s" for figure in figures) + " |")
    for label in trees:
        sequential = statistics.median(times[f"{label}sequential"])
        parallel = statistics.median(times[f"{label}parallel, {options.processes} processes"])
        print(f"{label}parallel / sequential = {parallel / sequential:.2f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
