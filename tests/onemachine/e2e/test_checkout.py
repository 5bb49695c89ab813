"""The maintainer's checkout is read and rendered as run_e2e.sh reads and renders it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from onemachine.e2e import checkout as rendering
from onemachine.e2e.checkout import Checkout, CheckoutError
from tests.onemachine.e2e import checkouts


def test_a_directory_without_what_run_e2e_reads_is_refused_naming_each_file(
    tmp_path: Path,
) -> None:
    (tmp_path / "go.mod").write_text("module x\n")
    with pytest.raises(CheckoutError) as refused:
        Checkout.at(tmp_path)
    message = str(refused.value)
    assert message.startswith(f"{tmp_path} is not an AgentCube checkout run_e2e.sh can run from")
    for name in ("test/e2e/run_e2e.sh", "test/e2e/echo_agent.yaml", "sdk-python"):
        assert name in message
    assert "go.mod" not in message


def test_the_client_secrets_are_those_run_e2e_gives_keycloak(tmp_path: Path) -> None:
    checkout = Checkout.at(checkouts.write(tmp_path))
    assert checkout.client_secrets() == {
        "app": "app-secret-1",
        "router": "router-secret-2",
        "admin": "admin-secret-3",
    }


def test_a_run_e2e_without_a_client_secret_is_named(tmp_path: Path) -> None:
    script = checkouts.RUN_E2E.replace("--set clients.admin.secret=admin-secret-3 \\\n", "")
    checkout = Checkout.at(checkouts.write(tmp_path, run_e2e=script))
    with pytest.raises(CheckoutError, match="sets no Keycloak client secret for admin"):
        checkout.client_secrets()


def test_the_mcp_pod_runs_the_dockerfile_s_entrypoint_with_the_venv_s_python(
    tmp_path: Path,
) -> None:
    checkout = Checkout.at(checkouts.write(tmp_path))
    entrypoint = checkout.mcp_entrypoint()
    mapping = rendering.mcp_image_mapping("mcp:latest", entrypoint, Path("/v env/bin/python"))
    assert mapping == (
        "mcp:latest='/v env/bin/python' -m mcp_server --transport streamable-http "
        "--host 0.0.0.0 --port 8000"
    )


def test_a_dockerfile_without_an_exec_form_entrypoint_is_named(tmp_path: Path) -> None:
    checkout = Checkout.at(checkouts.write(tmp_path, dockerfile="FROM python\nCMD python\n"))
    with pytest.raises(CheckoutError, match=r"Dockerfile has no ENTRYPOINT \[\.\.\.\] line"):
        checkout.mcp_entrypoint()


def test_every_namespace_line_of_a_workload_fixture_names_the_workload_namespace() -> None:
    text = "metadata:\n  namespace: default\n\tnamespace:   other # c\nnamespaces: kept\n"
    assert rendering.workload_fixture(text, "agentcube") == (
        "metadata:\n  namespace: agentcube\n\tnamespace: agentcube\nnamespaces: kept\n"
    )


def test_the_short_ttl_copy_renames_the_agent_and_shortens_its_session_timeout() -> None:
    copy = yaml.safe_load(rendering.short_ttl_echo_agent(checkouts.ECHO_AGENT))
    assert copy["metadata"]["name"] == "echo-agent-short-ttl"
    assert copy["spec"]["podTemplate"]["labels"] == {"app": "echo-agent-short-ttl"}
    assert copy["spec"]["sessionTimeout"] == "30s"
    assert copy["spec"]["maxSessionDuration"] == "8h"
    # sed's s/// without g: the first match on each line only.
    assert rendering.short_ttl_echo_agent("name: echo-agent name: echo-agent\n") == (
        "name: echo-agent-short-ttl name: echo-agent\n"
    )


def test_the_mcp_deployment_is_moved_to_the_system_namespace_and_points_at_the_workloads() -> None:
    rendered = rendering.mcp_deployment(checkouts.MCP_DEPLOYMENT, "agentcube-system", "work")
    service, deployment = yaml.safe_load_all(rendered)
    assert (
        service["metadata"]["namespace"]
        == deployment["metadata"]["namespace"]
        == ("agentcube-system")
    )
    env = {
        e["name"]: e["value"]
        for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    assert env == {
        "ROUTER_URL": "http://agentcube-router.agentcube-system.svc.cluster.local:8080",
        "AGENTCUBE_NAMESPACE": "work",
    }
