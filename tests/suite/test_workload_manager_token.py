"""A WorkloadManager with its auth on, as upstream PR #433 would have the chart run it,
admits service-account tokens only (localcube's --pr-433-workload-manager-auth). The
scenario that opens its session there then fails naming the setting that gives one, not
with a bare 401, and passes once workload_manager_token is that service-account token."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from tests.conftest import StartLocalCube
from tests.suite.commands import run_behave

SCENARIO = "A busy session ends when the lifetime it asked for is up"


@pytest.mark.parametrize("with_service_account_token", [False, True], ids=["unset", "set"])
def test_a_workload_manager_taking_service_accounts_only_is_named(
    start_localcube: StartLocalCube, tmp_path: Path, with_service_account_token: bool
) -> None:
    api, admin, service_account = (secrets.token_urlsafe(24) for _ in range(3))
    token_file = tmp_path / "tokens"
    token_file.write_text(
        f"platform-team={api}\nroot={admin} admin\n"
        f"system:serviceaccount:agentcube:agentcube-router={service_account}\n"
    )
    cube = start_localcube(
        gc_interval="200ms",
        extra_arguments=["--token-file", str(token_file), "--pr-433-workload-manager-auth"],
    )
    tokens = {"AGENTCUBE_API_TOKEN": api, "AGENTCUBE_ADMIN_API_TOKEN": admin}
    if with_service_account_token:
        tokens["AGENTCUBE_WORKLOAD_MANAGER_TOKEN"] = service_account
    status, output = run_behave(
        "features/session_lifetime.feature",
        "-n",
        SCENARIO,
        f"--define=router_url={cube.url}",
        "--define=platform=localcube",
        f"--define=reports_dir={tmp_path / 'reports'}",
        timeout=300,
        **tokens,
    )
    for token in (api, admin, service_account):
        assert token not in output, "no token reaches the output"
    if with_service_account_token:
        assert status == 0, output[-6000:]
        assert "1 passed" in output, output[-6000:]
        return
    assert status != 0, output[-6000:]
    assert "the WorkloadManager refused with 401 the token the Router accepts" in output, output
    assert "Set workload_manager_token (AGENTCUBE_WORKLOAD_MANAGER_TOKEN)" in output, output
    assert "Invalid service account format" in output, output[-6000:]
