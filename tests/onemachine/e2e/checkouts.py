"""A stand-in AgentCube checkout: the files run_e2e.sh reads, written for the tests (small
manifests of the same shape as upstream's, not copies of them)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

ECHO_AGENT = textwrap.dedent(
    """\
    apiVersion: runtime.agentcube.volcano.sh/v1alpha1
    kind: AgentRuntime
    metadata:
      name: echo-agent
      namespace: default
    spec:
      podTemplate:
        labels:
          app: echo-agent
        spec:
          containers:
            - name: echo-agent
              image: python:3.9-slim
      sessionTimeout: "15m"
      maxSessionDuration: "8h"
    """
)

CODE_INTERPRETER = textwrap.dedent(
    """\
    apiVersion: runtime.agentcube.volcano.sh/v1alpha1
    kind: CodeInterpreter
    metadata:
      name: e2e-code-interpreter
      namespace: agentcube
    spec:
      template:
        image: picod:latest
    """
)

MCP_DEPLOYMENT = textwrap.dedent(
    """\
    apiVersion: v1
    kind: Service
    metadata:
      name: agentcube-code-interpreter-mcp
      namespace: agentcube
    spec:
      selector:
        app: agentcube-code-interpreter-mcp
      ports:
        - port: 8000
          targetPort: 8000
    ---
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: agentcube-code-interpreter-mcp
      namespace: agentcube
    spec:
      replicas: 1
      selector:
        matchLabels:
          app: agentcube-code-interpreter-mcp
      template:
        metadata:
          labels:
            app: agentcube-code-interpreter-mcp
        spec:
          containers:
            - name: mcp
              image: agentcube-code-interpreter-mcp:latest
              readinessProbe:
                tcpSocket:
                  port: 8000
                periodSeconds: 1
              env:
                - name: ROUTER_URL
                  value: "http://agentcube-router.agentcube.svc.cluster.local:8080"
                - name: AGENTCUBE_NAMESPACE
                  value: "agentcube"
    """
)

MCP_ENTRYPOINT = [
    "python",
    "-m",
    "mcp_server",
    "--transport",
    "streamable-http",
    "--host",
    "0.0.0.0",
    "--port",
    "8000",
]
MCP_DOCKERFILE = f"FROM python:3.12-slim\nEXPOSE 8000\nENTRYPOINT {json.dumps(MCP_ENTRYPOINT)}\n"

RUN_E2E = textwrap.dedent(
    """\
    #!/bin/bash
    helm upgrade --install keycloak manifests/charts/addons/keycloak \\
        --set clients.app.secret=app-secret-1 \\
        --set clients.router.secret=router-secret-2 \\
        --set clients.admin.secret=admin-secret-3 \\
        --wait
    """
)


def write(root: Path, **replacing: str) -> Path:
    """The checkout at `root`; `replacing` gives a file other content (its path with `_`
    for `/` and `.`, e.g. run_e2e=...)."""
    files = {
        "test/e2e/run_e2e.sh": RUN_E2E,
        "test/e2e/echo_agent.yaml": ECHO_AGENT,
        "test/e2e/e2e_code_interpreter.yaml": CODE_INTERPRETER,
        "integrations/code-interpreter-mcp/deployment.yaml": MCP_DEPLOYMENT,
        "integrations/code-interpreter-mcp/Dockerfile": MCP_DOCKERFILE,
        "go.mod": "module github.com/volcano-sh/agentcube\n\ngo 1.24\n",
    }
    keys = {
        "run_e2e": "test/e2e/run_e2e.sh",
        "dockerfile": "integrations/code-interpreter-mcp/Dockerfile",
    }
    for key, text in replacing.items():
        files[keys[key]] = text
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    for package in (
        "sdk-python",
        "integrations/code-interpreter-mcp",
        "integrations/langchain-agentcube",
    ):
        (root / package).mkdir(parents=True, exist_ok=True)
    return root
