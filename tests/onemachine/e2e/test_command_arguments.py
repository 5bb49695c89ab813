"""What `python -m onemachine e2e` refuses before it starts anything: each says why, exits 2
and leaves no state directory behind it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from onemachine.cli import build_parser
from tests.onemachine.e2e import checkouts

ROOT = Path(__file__).resolve().parents[3]


def e2e(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "onemachine", "e2e", *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def required(tmp_path: Path, checkout: Path) -> list[str]:
    return [
        "--checkout",
        str(checkout),
        "--bin-dir",
        str(tmp_path / "bin"),
        "--agent-sandbox-src",
        str(tmp_path / "sandbox"),
    ]


def test_a_directory_that_is_no_checkout_is_refused(tmp_path: Path) -> None:
    answer = e2e(*required(tmp_path, tmp_path), "--state-dir", str(tmp_path / "state"))
    assert answer.returncode == 2
    assert "is not an AgentCube checkout run_e2e.sh can run from: no test/e2e/run_e2e.sh" in (
        answer.stderr
    )
    assert not (tmp_path / "state").exists()


def test_a_python_pattern_naming_no_file_is_refused(tmp_path: Path) -> None:
    checkout = checkouts.write(tmp_path / "agentcube")
    answer = e2e(*required(tmp_path, checkout), "--python", "test_typo")
    assert answer.returncode == 2
    assert "onemachine e2e: --python test_typo: no such file in run_e2e.sh's plan" in answer.stderr


def test_a_state_dir_in_use_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    checkout = checkouts.write(tmp_path / "agentcube")
    state = tmp_path / "state"
    state.mkdir()
    (state / "kept").write_text("a previous run")
    answer = e2e(*required(tmp_path, checkout), "--state-dir", str(state))
    assert answer.returncode == 2
    assert f"--state-dir {state} is not empty: give a new or empty directory" in answer.stderr
    assert [p.name for p in state.iterdir()] == ["kept"]


def test_a_rollout_timeout_that_is_no_duration_is_refused(tmp_path: Path) -> None:
    checkout = checkouts.write(tmp_path / "agentcube")
    answer = e2e(*required(tmp_path, checkout), "--rollout-timeout", "soon")
    assert answer.returncode == 2
    assert "argument --rollout-timeout:" in answer.stderr


def test_a_node_kind_the_cluster_does_not_know_is_refused(tmp_path: Path) -> None:
    checkout = checkouts.write(tmp_path / "agentcube")
    answer = e2e(*required(tmp_path, checkout), "--node", "vm")
    assert answer.returncode == 2
    assert "argument --node: invalid choice: 'vm'" in answer.stderr


def test_the_node_is_chosen_as_the_clusters_auto_unless_given(tmp_path: Path) -> None:
    given = required(tmp_path, tmp_path)
    assert build_parser().parse_args(["e2e", *given]).node == "auto"
    assert build_parser().parse_args(["e2e", *given, "--node", "process"]).node == "process"
