"""When a step before or between the tests fails, `python -m onemachine e2e` names the step
and why, exits 1, keeps what there is to read, and leaves nothing running."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.onemachine.cluster.conftest import needs_namespaces
from tests.onemachine.e2e import checkouts
from tests.onemachine.e2e.test_e2e_command import (
    alive,
    inputs_with_checkout,
    launcher_pids,
    run_e2e,
)

pytestmark = needs_namespaces


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("e2e-venv") / "venv"


def test_a_cluster_that_cannot_start_is_named_with_the_end_of_its_log(
    tmp_path: Path, venv: Path
) -> None:
    inputs = inputs_with_checkout(tmp_path)
    (inputs.bin_dir / "workloadmanager").unlink()
    answer = run_e2e(inputs, tmp_path / "state", venv, "--no-go")
    assert answer.returncode == 1, answer.stdout + answer.stderr
    assert "onemachine e2e: the one-machine cluster exited with code 2" in answer.stderr
    assert "workloadmanager" in answer.stderr  # the launcher's own words, from its log
    assert "upstream e2e on the one-machine cluster: 0 passed, 0 failed, 0 skipped" in (
        answer.stdout
    )


@pytest.mark.slow
def test_an_mcp_deployment_that_never_rolls_out_fails_the_run_naming_it(
    tmp_path: Path, venv: Path
) -> None:
    inputs = inputs_with_checkout(tmp_path)
    wrong_port = [*checkouts.MCP_ENTRYPOINT[:-1], "8001"]  # its readiness probe asks 8000
    (inputs.agentcube_src / "integrations/code-interpreter-mcp/Dockerfile").write_text(
        f"FROM python:3.12-slim\nENTRYPOINT {json.dumps(wrong_port)}\n", encoding="utf-8"
    )
    state = tmp_path / "state"
    answer = run_e2e(
        inputs,
        state,
        venv,
        "--no-go",
        "--python",
        "test_mcp_code_interpreter_k8s",
        "--rollout-timeout",
        "3s",
    )
    assert answer.returncode == 1, answer.stdout + answer.stderr
    assert (
        "onemachine e2e: deployment agentcube/agentcube-code-interpreter-mcp did not roll out "
        "within 3 s: replicas 1, updated 1, available 0"
    ) in answer.stderr
    logs = state / "e2e-logs" / "without-keycloak"
    assert list(logs.glob("pod-agentcube-agentcube-code-interpreter-mcp-*.json")), answer.stderr
    assert launcher_pids(state) and not any(alive(pid) for pid in launcher_pids(state))


@pytest.mark.slow
def test_a_virtual_environment_pip_cannot_fill_is_named_with_pip_s_words(
    tmp_path: Path,
) -> None:
    inputs = inputs_with_checkout(tmp_path)
    (inputs.agentcube_src / "sdk-python" / "pyproject.toml").write_text("[project\n")
    state = tmp_path / "state"
    answer = run_e2e(inputs, state, tmp_path / "venv", "--no-go")
    assert answer.returncode == 1, answer.stdout + answer.stderr
    assert (
        f"onemachine e2e: {tmp_path / 'venv'}/bin/python -m pip install ... exited 2 "
        f"(log: {state / 'logs' / 'venv.log'}):"
    ) in answer.stderr, answer.stderr
    assert "Expected ']' at the end of a table declaration" in answer.stderr  # pip's words
    assert launcher_pids(state) and not any(alive(pid) for pid in launcher_pids(state))
