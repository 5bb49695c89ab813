"""docs/upstream-e2e.md's command as written, on a fresh clone (tests/fresh_clone.py), with
the stand-ins of test_e2e_command.py in place of the page's `~/src/...` and `~/bin/agentcube`
and a stand-in `go` on PATH, as the page asks for `go`. Two options are added, where a test
must not share what a user's defaults share: `--venv` and `--state-dir` in the test's own
directory. The page's example says how a run ends; this one must end so too."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from tests.fresh_clone import fresh_clone
from tests.onemachine.cluster.conftest import needs_namespaces
from tests.onemachine.e2e import stand_ins
from tests.onemachine.e2e.test_e2e_command import TIMEOUT, inputs_with_checkout

pytestmark = [pytest.mark.slow, needs_namespaces]

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "upstream-e2e.md"


def the_command() -> str:
    section = DOC.read_text(encoding="utf-8").split("## The command\n", 1)[1]
    return section.split("```sh\n", 1)[1].split("\n```", 1)[0]


def test_the_page_s_command_runs_the_plan_on_a_fresh_clone(tmp_path: Path) -> None:
    inputs = inputs_with_checkout(tmp_path / "inputs")
    path = tmp_path / "path"
    path.mkdir()
    stand_ins.write_go(path / "go")
    command = the_command()
    for written, here in {
        "~/src/agentcube": inputs.agentcube_src,
        "~/bin/agentcube": inputs.bin_dir,
        "~/src/agent-sandbox": inputs.agent_sandbox_src,
    }.items():
        assert written in command, f"the page's command no longer names {written}"
        command = command.replace(written, str(here))
    state = tmp_path / "state"
    arguments = shlex.split(command.replace("\\\n", " "))
    arguments += ["--venv", str(tmp_path / "venv"), "--state-dir", str(state)]
    env = inputs.env | {"PATH": f"{path}:{inputs.env['PATH']}"}
    answer = subprocess.run(
        arguments,
        cwd=fresh_clone(tmp_path / "clone"),
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert answer.returncode == 0, answer.stdout[-4000:] + answer.stderr[-3000:]
    lines = answer.stdout.strip().splitlines()
    assert lines[-1].startswith("upstream e2e on the one-machine cluster: "), lines[-3:]
    assert any(line.startswith("stages: cluster start ") for line in lines), lines[-5:]
    assert f"JUnit: {state}/junit.xml" in lines, lines[-5:]
