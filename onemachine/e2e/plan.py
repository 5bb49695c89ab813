"""run_e2e.sh's test plan (939abb5): which tests run, in which order, from which directory,
with which variables. Each entry cites the lines it stands for.

run_e2e.sh runs in two configurations, and so does this plan: without Keycloak (the
Router without external authentication; upstream's CI runs it so, with and without mTLS,
.github/workflows/e2e.yml) and with it (KEYCLOAK_ENABLED=true: the Router reconfigured
with OIDC, run_e2e.sh:441-475). With Keycloak, run_e2e.sh exports API_TOKEN, ADMIN_TOKEN,
OIDC_ENABLED and KEYCLOAK_TOKEN_URL (run_e2e.sh:527-530); in both it exports
MCP_K8S_MCP_URL before the in-cluster test (run_e2e.sh:696); every later command inherits
what is exported. The rest each command gets on its own line, as below.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

EXPORTED_WITH_KEYCLOAK = ("API_TOKEN", "ADMIN_TOKEN", "OIDC_ENABLED", "KEYCLOAK_TOKEN_URL")
EXPORTED = ("MCP_K8S_MCP_URL",)
# Upstream's Go tests skip themselves without Keycloak with these words (e2e_test.go:1671):
# the tests the configuration with Keycloak runs.
OIDC_SKIP = "OIDC_ENABLED not set"

_ROUTER_AND_WM = (
    ("WORKLOAD_MANAGER_URL", "WORKLOAD_MANAGER_URL"),
    ("ROUTER_URL", "ROUTER_URL"),
    ("MTLS_ENABLED", "MTLS_ENABLED"),
)


@dataclass(frozen=True)
class Step:
    """One command of the plan: `variables` pairs each variable it is given with the
    run_e2e.sh value it takes (AGENTCUBE_NAMESPACE is the workload namespace for some
    files and the system one for others)."""

    name: str
    variables: tuple[tuple[str, str], ...]
    cites: str
    keycloak_only: bool = False  # run only in the configuration with Keycloak

    def environment(self, values: Mapping[str, str], keycloak: bool) -> dict[str, str]:
        names = (*EXPORTED, *(EXPORTED_WITH_KEYCLOAK if keycloak else ()))
        exported = {name: values[name] for name in names if name in values}
        return exported | {name: values[source] for name, source in self.variables}


GO_TESTS = Step(
    "go test ./test/e2e/...",
    (
        *_ROUTER_AND_WM,
        ("WORKLOAD_NAMESPACE", "WORKLOAD_NAMESPACE"),
        ("OIDC_ENABLED", "OIDC_ENABLED"),
        ("ADMIN_TOKEN", "ADMIN_TOKEN"),
        ("API_TOKEN", "API_TOKEN"),
    ),
    "run_e2e.sh:608-615",
)

IN_CLUSTER_MCP = "test_mcp_code_interpreter_k8s.py"

PYTHON_TESTS = (
    Step(
        "test_codeinterpreter.py",
        (
            *_ROUTER_AND_WM,
            ("OIDC_ENABLED", "OIDC_ENABLED"),
            ("KEYCLOAK_TOKEN_URL", "KEYCLOAK_TOKEN_URL"),
            ("API_TOKEN", "API_TOKEN"),
            ("AGENTCUBE_NAMESPACE", "WORKLOAD_NAMESPACE"),
        ),
        "run_e2e.sh:621-629",
    ),
    Step(
        "test_oidc_auth.py",
        (
            ("WORKLOAD_MANAGER_URL", "WORKLOAD_MANAGER_URL"),
            ("ROUTER_URL", "ROUTER_URL"),
            ("OIDC_ENABLED", "OIDC_ENABLED"),
            ("KEYCLOAK_TOKEN_URL", "KEYCLOAK_TOKEN_URL"),
            ("AGENTCUBE_SYSTEM_NAMESPACE", "AGENTCUBE_NAMESPACE"),
            ("API_TOKEN", "API_TOKEN"),
            ("AGENTCUBE_NAMESPACE", "WORKLOAD_NAMESPACE"),
        ),
        "run_e2e.sh:634-642",
        keycloak_only=True,
    ),
    Step(
        "test_langchain_agentcube_sandbox.py",
        (
            *_ROUTER_AND_WM,
            ("API_TOKEN", "API_TOKEN"),
            ("AGENTCUBE_NAMESPACE", "AGENTCUBE_NAMESPACE"),
        ),
        "run_e2e.sh:648",
    ),
    Step(
        "test_mcp_code_interpreter.py",
        (
            *_ROUTER_AND_WM,
            ("API_TOKEN", "API_TOKEN"),
            ("AGENTCUBE_NAMESPACE", "WORKLOAD_NAMESPACE"),
        ),
        "run_e2e.sh:653",
    ),
    Step(
        "test_mcp_code_interpreter_stdio.py",
        (
            *_ROUTER_AND_WM,
            ("API_TOKEN", "API_TOKEN"),
            ("AGENTCUBE_NAMESPACE", "WORKLOAD_NAMESPACE"),
        ),
        "run_e2e.sh:658",
    ),
    Step(IN_CLUSTER_MCP, (("MTLS_ENABLED", "MTLS_ENABLED"),), "run_e2e.sh:661-699"),
)


class SelectionError(ValueError):
    """A --python pattern that names no file of the plan."""


@dataclass(frozen=True)
class Selection:
    """What a maintainer asked to run: a `go test -run` expression (None: every Go test)
    or no Go tests at all, and fnmatch patterns over the Python files (empty: all)."""

    go: bool = True
    go_run: str | None = None
    python_patterns: Sequence[str] = ()
    python: bool = True

    def python_steps(self) -> list[Step]:
        if not self.python:
            return []
        if not self.python_patterns:
            return list(PYTHON_TESTS)
        unmatched = [
            pattern
            for pattern in self.python_patterns
            if not any(_matches(step.name, pattern) for step in PYTHON_TESTS)
        ]
        if unmatched:
            names = ", ".join(step.name for step in PYTHON_TESTS)
            raise SelectionError(
                f"--python {' '.join(unmatched)}: no such file in run_e2e.sh's plan ({names})"
            )
        return [
            step
            for step in PYTHON_TESTS
            if any(_matches(step.name, pattern) for pattern in self.python_patterns)
        ]


def _matches(name: str, pattern: str) -> bool:
    return fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(name, f"{pattern}.py")
