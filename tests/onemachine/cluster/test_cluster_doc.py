"""docs/one-machine-cluster.md's "One command" as written, on a fresh clone (tests/
fresh_clone.py): the launcher's command with the stand-in bin-dir and checkouts in place of
the page's `~/bin/agentcube`, `~/src/...` and a new directory in place of `/tmp/lc`, then
the page's lines that run the suite, with `./dev` a shell function that records what it was
given (the suite needs upstream's programs, which the stand-ins are not)."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.fresh_clone import fresh_clone
from tests.onemachine.cluster.conftest import namespaces_allowed
from tests.onemachine.cluster.running import READY_TIMEOUT, RunningCluster, stand_in_inputs
from tests.waiting import wait_until

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "one-machine-cluster.md"
RECORDING_DEV = 'function ./dev { printf "%s\\n" "$*" >> "$CALLS"; }'


def blocks() -> list[str]:
    """The shell blocks of the page's "One command" section."""
    section = DOC.read_text(encoding="utf-8").split("## One command\n", 1)[1].split("\n## ")[0]
    return [part.split("\n```", 1)[0] for part in section.split("```sh\n")[1:]]


def test_the_one_command_starts_the_cluster_and_its_lines_run_the_printed_suite_line(
    tmp_path: Path,
) -> None:
    if not namespaces_allowed():
        pytest.skip("this machine does not allow network namespaces")
    launch, suite_lines = blocks()[:2]
    inputs = stand_in_inputs(tmp_path / "inputs")
    state = tmp_path / "lc"
    places = {
        "~/bin/agentcube": inputs.bin_dir,
        "~/src/agentcube": inputs.agentcube_src,
        "~/src/agent-sandbox": inputs.agent_sandbox_src,
        "/tmp/lc": state,
    }
    for written, here in places.items():
        launch, suite_lines = (text.replace(written, str(here)) for text in (launch, suite_lines))
    clone = fresh_clone(tmp_path / "clone")
    errors, printed = tmp_path / "launcher.err", tmp_path / "launcher.out"
    with errors.open("w") as error, printed.open("w") as output:
        launcher = subprocess.Popen(  # ./dev execs the launcher: its pid is the launcher's
            shlex.split(launch.replace("\\\n", " ")),
            cwd=clone,
            env=inputs.env,
            stdout=output,
            stderr=error,
        )
    cluster = RunningCluster(state, {}, launcher, errors)
    try:
        wait_until(
            lambda: (state / "cluster.json").exists() or launcher.poll() is not None,
            "the launcher to write cluster.json",
            timeout=READY_TIMEOUT,
            poll=0.1,
        )
        assert (state / "cluster.json").exists(), errors.read_text()[-3000:]
        json.loads((state / "cluster.json").read_text())
        calls = tmp_path / "calls"
        run = subprocess.run(
            ["bash", "-c", f"set -eu\n{RECORDING_DEV}\n{suite_lines}"],
            cwd=clone,
            env={**inputs.env, "CALLS": str(calls)},
            capture_output=True,
            text=True,
            timeout=30,
        )
    finally:
        assert cluster.stop() == 0, errors.read_text()[-3000:]
    assert run.returncode == 0, run.stderr
    line = (state / "suite-command").read_text().strip()
    assert f"run the suite (also in {state}/suite-command):\n{line}\n" in printed.read_text()
    assert line.startswith("./dev suite "), line
    settings = line.removeprefix("./dev suite ")
    assert calls.read_text().splitlines() == [
        f"suite {settings}",
        f"suite {settings} --tags=@smoke",
        f"parallel {settings}",
    ]
