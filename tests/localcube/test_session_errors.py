"""A session that cannot be opened: the WorkloadManager's and the Router's answers, as upstream."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.localcube.support import Client, processes_under

SILENT = '["sleep", "60"]'  # runs, never serves
CRASHING = '["sh", "-c", "exit 3"]'  # exits before it serves


def agent_manifest(directory: Path, name: str, command: str) -> Path:
    manifest = directory / f"{name}.yaml"
    manifest.write_text(
        "apiVersion: runtime.agentcube.volcano.sh/v1alpha1\nkind: AgentRuntime\n"
        f"metadata: {{name: {name}}}\n"
        "spec: {targetPort: [{port: 8080}], podTemplate: {spec: {containers: "
        f"[{{name: c, image: i, command: {command}}}]}}}}}}\n"
    )
    return manifest


@pytest.fixture
def broken_cube(tmp_path: Path, start_localcube) -> tuple[Client, Path]:
    """A localcube serving a silent and a crashing agent, with a 1 s creation timeout."""
    state = tmp_path / "state"
    manifests = [
        agent_manifest(tmp_path, "silent", SILENT),
        agent_manifest(tmp_path, "crashing", CRASHING),
    ]
    cube = start_localcube(
        manifests, state_dir=state, extra_arguments=["--sandbox-ready-timeout", "1s"]
    )
    return Client(cube.url), state


def test_the_workload_manager_answers_a_creation_timeout_with_504(broken_cube) -> None:
    """Upstream: pkg/workloadmanager/handlers.go:254-256"""
    client, state = broken_cube
    created = client.create_session("agent-runtime", "silent")
    assert created.status_code == 504
    assert created.json() == {"message": "sandbox creation timed out"}
    assert client.sandboxes() == []
    assert processes_under(state) == [], "the sandbox that never served was ended"


def test_the_workload_manager_answers_a_failed_start_with_500(broken_cube) -> None:
    """Upstream: pkg/workloadmanager/handlers.go:260-265"""
    client, state = broken_cube
    created = client.create_session("agent-runtime", "crashing")
    assert created.status_code == 500
    assert created.json() == {"message": "internal server error"}
    assert client.sandboxes() == []
    assert processes_under(state) == []


@pytest.mark.parametrize("runtime", ["silent", "crashing"])
def test_the_router_answers_500_when_the_workload_manager_could_not_open_it(
    broken_cube, runtime: str
) -> None:
    """Upstream: pkg/router/session_manager.go:206-214"""
    client, state = broken_cube
    routed = client.agent(runtime, json={})
    assert routed.status_code == 500
    assert routed.json() == {"error": "internal server error"}
    assert client.sandboxes() == []
    assert processes_under(state) == []
