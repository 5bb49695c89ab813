"""The cluster documentation and the example workflow stay in step with the code."""

from __future__ import annotations

from pathlib import Path

import yaml

from acceptance.kubernetes.settings import cluster_default_rows, settings_rows

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_the_docs_list_every_setting_and_cluster_default() -> None:
    docs = (DOCS / "kubernetes.md").read_text(encoding="utf-8")
    missing = [row for row in settings_rows() + cluster_default_rows() if row not in docs]
    assert not missing, "docs/kubernetes.md lacks these rows:\n" + "\n".join(missing)


def test_the_docs_say_plainly_that_ci_has_no_cluster() -> None:
    docs = (DOCS / "kubernetes.md").read_text(encoding="utf-8")
    assert "## This project's CI has no cluster" in docs
    assert "## What is not claimed" in docs


def test_the_example_workflow_installs_agentcube_and_runs_the_suite_on_it() -> None:
    workflow = yaml.safe_load((DOCS / "examples" / "e2e-kind.yml").read_text(encoding="utf-8"))
    steps = workflow["jobs"]["acceptance"]["steps"]
    commands = "\n".join(step.get("run", "") for step in steps)
    assert "helm upgrade --install agentcube manifests/charts/base" in commands
    assert "--set spire.enabled=false" in commands
    assert "./dev suite -D platform=kubernetes" in commands
    assert "-D port_forward=true" in commands
    assert all("uses" in step or "run" in step for step in steps)
