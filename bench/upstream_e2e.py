"""Wall time of upstream's own e2e on the one-machine cluster (`python -m onemachine e2e`,
docs/upstream-e2e.md), run `--runs` times one after the other, each from a new state
directory: min / median / max of the whole run and of each stage the command reports on
its `stages:` line, and each run's summary line.

It builds nothing: give it a maintainer's checkout, builds and agent-sandbox checkout, as
the command takes them. The virtual environment is the command's default one, kept between
runs (the first run of a new one fills it: pass --venv to measure that).

Run: .venv/bin/python bench/upstream_e2e.py --checkout DIR --bin-dir DIR
     --agent-sandbox-src DIR [--runs 3] [--venv DIR]
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_STAGE = re.compile(r"([^,]+?) (\d+(?:\.\d+)?) s(?:,|$)")


def one_run(arguments: argparse.Namespace) -> tuple[float, dict[str, float], str]:
    """The run's wall seconds, its stages and its summary line."""
    with tempfile.TemporaryDirectory(prefix="upstream-e2e-bench-") as state:
        command = [
            sys.executable,
            "-m",
            "onemachine",
            "e2e",
            "--checkout",
            str(arguments.checkout),
            "--bin-dir",
            str(arguments.bin_dir),
            "--agent-sandbox-src",
            str(arguments.agent_sandbox_src),
            "--state-dir",
            f"{state}/run",
        ]
        if arguments.venv:
            command += ["--venv", str(arguments.venv)]
        started = time.perf_counter()
        answer = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - started
    lines = answer.stdout.splitlines()
    stages_line = next((line for line in lines if line.startswith("stages: ")), "")
    stages = {name.strip(): float(value) for name, value in _STAGE.findall(stages_line[8:])}
    summary = next((line for line in lines if line.startswith("upstream e2e on")), "no summary")
    return wall, stages, summary


def spread(values: list[float]) -> str:
    return f"{min(values):.1f} / {statistics.median(values):.1f} / {max(values):.1f} s"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, required=True)
    parser.add_argument("--bin-dir", type=Path, required=True)
    parser.add_argument("--agent-sandbox-src", type=Path, required=True)
    parser.add_argument("--venv", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    arguments = parser.parse_args()
    walls: list[float] = []
    stages: dict[str, list[float]] = defaultdict(list)
    for number in range(1, arguments.runs + 1):
        wall, seen, summary = one_run(arguments)
        walls.append(wall)
        for name, value in seen.items():
            stages[name].append(value)
        print(f"run {number}: {wall:.1f} s; {summary[:160]}", flush=True)
    print("\n| what | runs | min / median / max |\n|---|---|---|")
    print(f"| the whole command | {len(walls)} | {spread(walls)} |")
    for name, values in stages.items():
        print(f"| {name} | {len(values)} | {spread(values)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
