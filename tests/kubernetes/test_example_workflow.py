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
    assert "./dev report -D platform=kubernetes" in commands
    assert "-D port_forward=true" in commands
    assert all("uses" in step or "run" in step for step in steps)


def test_the_example_workflow_pins_the_revision_it_builds_and_says_what_it_supports() -> None:
    """A moving ref would change what the run proves; 939abb5 predates PR #460."""
    workflow = yaml.safe_load((DOCS / "examples" / "e2e-kind.yml").read_text(encoding="utf-8"))
    inputs = workflow[True]["workflow_dispatch"]["inputs"]  # YAML 1.1 reads `on` as True
    assert len(inputs["agentcube_ref"]["default"]) == 40, "a full commit, not a branch"
    assert inputs["agentcube_release"]["default"] == "pre-460"
    assert "939abb5b1f52a2d8f841ac1dbdc03fc96269bb5e" in workflow["env"]["AGENTCUBE_REF"]
    commands = "\n".join(step.get("run", "") for step in workflow["jobs"]["acceptance"]["steps"])
    assert '-D agentcube_release="$AGENTCUBE_RELEASE"' in commands


def test_the_example_workflow_preloads_images_and_keeps_reports_of_an_early_stop() -> None:
    workflow = yaml.safe_load((DOCS / "examples" / "e2e-kind.yml").read_text(encoding="utf-8"))
    steps = workflow["jobs"]["acceptance"]["steps"]
    preload = next(step["run"] for step in steps if step["name"].startswith("Preload"))
    for image in ("agent-sandbox-controller:${AGENT_SANDBOX_VERSION}", "$REDIS_IMAGE"):
        assert image in preload
    assert "kind load docker-image" in preload
    upload = next(step for step in steps if step["name"] == "Upload reports")
    assert upload["if"] == "always()"
    run = next(step["run"] for step in steps if step["name"] == "Run the acceptance suite")
    assert "tee reports/console.log" in run and "mkdir -p reports" in run
