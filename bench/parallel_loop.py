"""`./dev parallel` N times in a row: how many runs pass, and what the first failure said.

Issue 11 asks for 20 passing runs in a row on the 2-core machine; this is the loop that
shows it (not part of CI: a run takes about 10 s). Each run starts its own localcube, as the
command does, and writes its reports into a temporary directory; the whole output of the
first failing run is kept in reports/parallel-loop/first-failure.txt.

Run: .venv/bin/python bench/parallel_loop.py [--runs 20] [--processes N] [behave args...]
(--processes: as `./dev parallel`, four per CPU and at most 16 unless given)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from acceptance.run.parallel_run import default_processes

ROOT = Path(__file__).resolve().parent.parent
FIRST_FAILURE = ROOT / "reports" / "parallel-loop" / "first-failure.txt"
SUMMARY_LINES = 40


def run_once(processes: int, behave_arguments: list[str]) -> tuple[int, float, str]:
    """Exit status, seconds and output (stdout and stderr) of one `./dev parallel`."""
    with tempfile.TemporaryDirectory(prefix="parallel-loop-") as reports:
        started = time.perf_counter()
        finished = subprocess.run(
            [
                sys.executable,
                "-m",
                "acceptance.run.parallel_run",
                f"--processes={processes}",
                f"--define=reports_dir={reports}",
                *behave_arguments,
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            check=False,
        )
        return finished.returncode, time.perf_counter() - started, finished.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--processes", type=int, default=default_processes())
    options, behave_arguments = parser.parse_known_args()
    passed = failed = 0
    first_failure: str | None = None
    for number in range(1, options.runs + 1):
        status, seconds, output = run_once(options.processes, behave_arguments)
        if status == 0:
            passed += 1
        else:
            failed += 1
            if first_failure is None:
                first_failure = output
                FIRST_FAILURE.parent.mkdir(parents=True, exist_ok=True)
                FIRST_FAILURE.write_text(output)
        outcome = "passed" if status == 0 else f"FAILED (exit {status})"
        print(f"run {number}/{options.runs}: {outcome} in {seconds:.1f} s", flush=True)
    print(f"\n{passed} passed, {failed} failed of {options.runs} runs")
    if first_failure is not None:
        print(f"\nfirst failure (whole output in {FIRST_FAILURE.relative_to(ROOT)}):")
        print("\n".join(first_failure.rstrip().splitlines()[-SUMMARY_LINES:]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
