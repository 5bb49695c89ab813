"""onemachine/cluster/chart-rbac.yaml is AgentCube's chart's RBAC for the WorkloadManager and
the Router, rendered for namespace `agentcube`: held to the chart's templates when the
upstream mirror is at hand."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from onemachine.cluster.bootstrap import CHART_RBAC

UPSTREAM = Path("/work/.mirror/volcano-sh+agentcube/repo")
REVISION = "939abb5"
TEMPLATES = (
    "manifests/charts/base/templates/rbac/workloadmanager.yaml",
    "manifests/charts/base/templates/rbac-router.yaml",
)
VALUES = {
    "{{ .Release.Namespace }}": "agentcube",
    '{{ .Values.router.serviceAccountName | default "agentcube-router" }}': "agentcube-router",
}


def rendered(template: str) -> list[dict]:
    text = subprocess.run(
        ["git", f"--git-dir={UPSTREAM}", "show", f"{REVISION}:{template}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for placeholder, value in VALUES.items():
        text = text.replace(placeholder, value)
    assert "{{" not in text, f"{template} has a template value this test does not render"
    return [document for document in yaml.safe_load_all(text) if document]


@pytest.mark.skipif(not UPSTREAM.is_dir(), reason=f"no upstream mirror at {UPSTREAM}")
def test_the_rules_are_the_chart_s_rendered_for_agentcube() -> None:
    ours = [document for document in yaml.safe_load_all(CHART_RBAC.read_text()) if document]
    assert ours == [document for template in TEMPLATES for document in rendered(template)]


def test_every_object_lives_in_agentcube_or_is_cluster_wide() -> None:
    for document in yaml.safe_load_all(CHART_RBAC.read_text()):
        namespace = document["metadata"].get("namespace")
        assert namespace == "agentcube" or document["kind"].startswith("Cluster")
