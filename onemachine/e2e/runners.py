"""The two runners of the plan: the maintainer's `go test` and their Python e2e files in
the virtual environment, each from the directory run_e2e.sh runs it in, its output shown
as it comes and kept in a log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from onemachine.e2e.outcomes import Outcome, from_go_events, from_recorded


def run_go_tests(
    go: str, checkout: Path, run: str | None, env: Mapping[str, str], log: Path, suite: str
) -> list[Outcome]:
    """`go test -v ./test/e2e/...` as run_e2e.sh runs it (run_e2e.sh:608-615), with -json
    for the report and -count=1 so that a result is never go's cached one."""
    command = [go, "test", "-v", "-json", "-count=1"]
    if run:
        command += ["-run", run]
    command.append("./test/e2e/...")
    _, lines = _run_streamed(command, checkout, env, log, shown=_go_output)
    return from_go_events(lines, suite)


RECORDER = Path(__file__).with_name("unittest_recorder.py")


def run_python_test(
    python: Path, e2e_dir: Path, file: str, env: Mapping[str, str], log: Path
) -> list[Outcome]:
    """`$E2E_VENV_DIR/bin/python FILE` from test/e2e (run_e2e.sh:620), through the recorder
    (unittest_recorder.py) that keeps each test's result beside the log."""
    recorded = log.with_suffix(".results.json")
    command = [str(python), str(RECORDER), str(recorded), file]
    code, lines = _run_streamed(command, e2e_dir, env, log)
    return from_recorded(file, recorded, "".join(lines), code)


def activated(venv: Path, base: Mapping[str, str]) -> dict[str, str]:
    """`source $E2E_VENV_DIR/bin/activate` (run_e2e.sh:591): the venv's bin first on PATH."""
    env = dict(base)
    env.pop("PYTHONHOME", None)
    env["VIRTUAL_ENV"] = str(venv)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def _go_output(line: str) -> str | None:
    """What a person reads of a `go test -json` line: the test's own output."""
    try:
        event = json.loads(line)
    except json.JSONDecodeError:
        return line
    return event.get("Output") if event.get("Action") == "output" else None


def _run_streamed(
    command: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    log: Path,
    shown: Callable[[str], str | None] = lambda line: line,
) -> tuple[int, list[str]]:
    """Run `command`, its output (stderr too) kept in `log` and shown as `shown` words it;
    its exit code and lines."""
    lines: list[str] = []
    with (
        log.open("w", encoding="utf-8") as kept,
        subprocess.Popen(
            command,
            cwd=cwd,
            env=dict(env),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        ) as process,
    ):
        assert process.stdout is not None
        try:
            for line in process.stdout:
                kept.write(line)
                lines.append(line)
                if text := shown(line):
                    sys.stdout.write(text)
                    sys.stdout.flush()
        except BaseException:  # an interrupt: the test run goes with the clusters
            process.kill()
            raise
    return process.returncode, lines
