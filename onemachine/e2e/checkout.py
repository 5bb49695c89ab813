"""The maintainer's AgentCube checkout: what run_e2e.sh reads from it, rendered as run_e2e.sh
renders it. Nothing of it is copied into this repository; every file is read at run time.

Each rendering is the `sed` of run_e2e.sh (939abb5) written in Python, with the line it
stands for: apply_workload_fixture (run_e2e.sh:121-131), the short-TTL copy of echo-agent
(run_e2e.sh:424-428) and the MCP Deployment (run_e2e.sh:675-678).
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

RUN_E2E = "test/e2e/run_e2e.sh"
ECHO_AGENT = "test/e2e/echo_agent.yaml"
CODE_INTERPRETER = "test/e2e/e2e_code_interpreter.yaml"
MCP_DEPLOYMENT = "integrations/code-interpreter-mcp/deployment.yaml"
MCP_DOCKERFILE = "integrations/code-interpreter-mcp/Dockerfile"
# What run_e2e.sh installs into its virtual environment (run_e2e.sh:596-598).
PYTHON_PACKAGES = (
    "sdk-python",
    "integrations/code-interpreter-mcp",
    "integrations/langchain-agentcube",
)
REQUIRED = (RUN_E2E, ECHO_AGENT, CODE_INTERPRETER, MCP_DEPLOYMENT, MCP_DOCKERFILE, "go.mod")

# The Keycloak chart's client secrets as run_e2e.sh sets them (run_e2e.sh:449-451).
_CLIENT_SECRET = re.compile(r"clients\.(?P<client>app|router|admin)\.secret=(?P<secret>[^\s\"']+)")
_ENTRYPOINT = re.compile(r"^ENTRYPOINT\s+(?P<form>\[.*\])\s*$", re.MULTILINE)


class CheckoutError(Exception):
    """The checkout lacks what run_e2e.sh reads; the message names the file."""


@dataclass(frozen=True)
class Checkout:
    root: Path

    @classmethod
    def at(cls, root: Path) -> Checkout:
        """The checkout at `root`; CheckoutError naming every file it lacks."""
        missing = [name for name in REQUIRED if not (root / name).is_file()]
        missing += [name for name in PYTHON_PACKAGES if not (root / name).is_dir()]
        if missing:
            raise CheckoutError(
                f"{root} is not an AgentCube checkout run_e2e.sh can run from: "
                f"no {', '.join(missing)}"
            )
        return cls(root.resolve())

    @property
    def e2e_dir(self) -> Path:
        return self.root / "test" / "e2e"

    def read(self, name: str) -> str:
        return (self.root / name).read_text(encoding="utf-8")

    def client_secrets(self) -> dict[str, str]:
        """{"app": ..., "router": ..., "admin": ...}: the secrets run_e2e.sh gives Keycloak's
        chart, which its OIDC tests send back (test_oidc_auth.py asks with e2e-app-secret)."""
        found = {m["client"]: m["secret"] for m in _CLIENT_SECRET.finditer(self.read(RUN_E2E))}
        missing = sorted({"app", "router", "admin"} - found.keys())
        if missing:
            raise CheckoutError(
                f"{self.root / RUN_E2E} sets no Keycloak client secret for "
                f"{', '.join(missing)} (looked for --set clients.NAME.secret=...)"
            )
        return found

    def mcp_entrypoint(self) -> list[str]:
        """The MCP image's ENTRYPOINT (exec form) from its Dockerfile: what the pod runs."""
        match = _ENTRYPOINT.search(self.read(MCP_DOCKERFILE))
        if match is None:
            raise CheckoutError(f"{self.root / MCP_DOCKERFILE} has no ENTRYPOINT [...] line")
        return json.loads(match["form"])


def workload_fixture(text: str, namespace: str) -> str:
    """apply_workload_fixture: every `namespace:` line names `namespace` (run_e2e.sh:125)."""
    return re.sub(r"(?m)^([ \t]*)namespace:[ \t]*.*$", rf"\g<1>namespace: {namespace}", text)


def short_ttl_echo_agent(text: str) -> str:
    """The echo-agent-short-ttl copy (run_e2e.sh:426): each `s///` of the sed, first match on
    each line, in order."""
    substitutions = (
        ("name: echo-agent", "name: echo-agent-short-ttl"),
        ("app: echo-agent", "app: echo-agent-short-ttl"),
        ('sessionTimeout: "15m"', 'sessionTimeout: "30s"'),
    )
    lines = []
    for line in text.splitlines(keepends=True):
        for old, new in substitutions:
            line = line.replace(old, new, 1)
        lines.append(line)
    return "".join(lines)


def mcp_deployment(text: str, system_namespace: str, workload_namespace: str) -> str:
    """The MCP Service and Deployment in `system_namespace`, its AGENTCUBE_NAMESPACE naming
    `workload_namespace` (run_e2e.sh:675-678, each expression global)."""
    text = text.replace("namespace: agentcube", f"namespace: {system_namespace}")
    text = text.replace(".agentcube.svc.cluster.local", f".{system_namespace}.svc.cluster.local")
    return text.replace('value: "agentcube"', f'value: "{workload_namespace}"')


def mcp_image_mapping(image: str, entrypoint: list[str], python: Path) -> str:
    """The node's --image entry for the MCP image: its ENTRYPOINT with `python` the
    virtual environment's, so the pod runs the maintainer's installed server."""
    command = [str(python) if word == "python" else word for word in entrypoint]
    return f"{image}={shlex.join(command)}"
