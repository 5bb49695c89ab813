"""run_e2e.sh's plan: the selection a maintainer asks for, and each step's variables."""

from __future__ import annotations

import pytest

from onemachine.e2e import plan

VALUES = {
    "API_TOKEN": "app-token",
    "ADMIN_TOKEN": "admin-token",
    "OIDC_ENABLED": "true",
    "KEYCLOAK_TOKEN_URL": "http://127.0.0.1:1/realms/agentcube/protocol/openid-connect/token",
    "WORKLOAD_MANAGER_URL": "http://127.0.0.1:2",
    "ROUTER_URL": "http://127.0.0.1:3",
    "MTLS_ENABLED": "false",
    "WORKLOAD_NAMESPACE": "workloads",
    "AGENTCUBE_NAMESPACE": "system",
}


def step(name: str) -> plan.Step:
    return next(s for s in plan.PYTHON_TESTS if s.name == name)


def test_every_python_file_runs_in_run_e2e_s_order_by_default() -> None:
    names = [s.name for s in plan.Selection().python_steps()]
    assert names == [
        "test_codeinterpreter.py",
        "test_oidc_auth.py",
        "test_langchain_agentcube_sandbox.py",
        "test_mcp_code_interpreter.py",
        "test_mcp_code_interpreter_stdio.py",
        "test_mcp_code_interpreter_k8s.py",
    ]


def test_patterns_select_files_with_or_without_their_suffix_in_plan_order() -> None:
    selection = plan.Selection(python_patterns=("test_mcp_*_k8s", "test_oidc_auth.py"))
    assert [s.name for s in selection.python_steps()] == [
        "test_oidc_auth.py",
        "test_mcp_code_interpreter_k8s.py",
    ]


def test_a_pattern_matching_no_file_is_refused_naming_the_plan_s_files() -> None:
    with pytest.raises(plan.SelectionError) as refused:
        plan.Selection(python_patterns=("test_codeinterpreter.py", "test_nothing")).python_steps()
    assert str(refused.value).startswith("--python test_nothing: no such file in run_e2e.sh's plan")
    assert "test_langchain_agentcube_sandbox.py" in str(refused.value)


def test_only_the_oidc_file_waits_for_keycloak() -> None:
    assert [s.name for s in plan.PYTHON_TESTS if s.keycloak_only] == ["test_oidc_auth.py"]


def test_no_python_selects_none() -> None:
    assert plan.Selection(python=False).python_steps() == []


def test_the_namespace_a_file_is_given_is_the_one_run_e2e_gives_it() -> None:
    assert (
        step("test_codeinterpreter.py").environment(VALUES, keycloak=True)["AGENTCUBE_NAMESPACE"]
        == "workloads"
    )
    assert (
        step("test_langchain_agentcube_sandbox.py").environment(VALUES, keycloak=True)[
            "AGENTCUBE_NAMESPACE"
        ]
        == "system"
    )
    for name in ("test_mcp_code_interpreter.py", "test_mcp_code_interpreter_stdio.py"):
        assert step(name).environment(VALUES, keycloak=True)["AGENTCUBE_NAMESPACE"] == "workloads"
    oidc = step("test_oidc_auth.py").environment(VALUES, keycloak=True)
    assert (oidc["AGENTCUBE_SYSTEM_NAMESPACE"], oidc["AGENTCUBE_NAMESPACE"]) == (
        "system",
        "workloads",
    )


def test_without_keycloak_only_the_mcp_url_is_exported() -> None:
    env = step("test_mcp_code_interpreter_k8s.py").environment(
        VALUES | {"MCP_K8S_MCP_URL": "http://127.0.0.1:4/mcp"}, keycloak=False
    )
    assert env == {"MCP_K8S_MCP_URL": "http://127.0.0.1:4/mcp", "MTLS_ENABLED": "false"}


def test_with_keycloak_the_tokens_reach_every_step_even_one_given_only_mtls() -> None:
    env = step("test_mcp_code_interpreter_k8s.py").environment(
        VALUES | {"MCP_K8S_MCP_URL": "http://127.0.0.1:4/mcp"}, keycloak=True
    )
    assert env == {
        "API_TOKEN": "app-token",
        "ADMIN_TOKEN": "admin-token",
        "OIDC_ENABLED": "true",
        "KEYCLOAK_TOKEN_URL": VALUES["KEYCLOAK_TOKEN_URL"],
        "MCP_K8S_MCP_URL": "http://127.0.0.1:4/mcp",
        "MTLS_ENABLED": "false",
    }


def test_the_go_tests_get_the_workload_namespace_and_both_tokens() -> None:
    env = plan.GO_TESTS.environment(VALUES, keycloak=True)
    assert {
        k: env[k] for k in ("WORKLOAD_NAMESPACE", "API_TOKEN", "ADMIN_TOKEN", "ROUTER_URL")
    } == {
        "WORKLOAD_NAMESPACE": "workloads",
        "API_TOKEN": "app-token",
        "ADMIN_TOKEN": "admin-token",
        "ROUTER_URL": "http://127.0.0.1:3",
    }
