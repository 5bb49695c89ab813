"""The example CI workflow installs AgentCube on Kind and runs the suite against it."""

from __future__ import annotations

from pathlib import Path

import yaml

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_the_example_workflow_installs_agentcube_and_runs_the_suite_on_it() -> None:
    workflow = yaml.safe_load((DOCS / "examples" / "e2e-kind.yml").read_text(encoding="utf-8"))
    steps = workflow["jobs"]["acceptance"]["steps"]
    commands = "\n".join(step.get("run", "") for step in steps)
    assert "helm upgrade --install agentcube manifests/charts/base" in commands
    assert "--set spire.enabled=false" in commands
    assert "./dev suite -D platform=kubernetes" in commands
    assert "-D port_forward=true" in commands
    assert all("uses" in step or "run" in step for step in steps)
