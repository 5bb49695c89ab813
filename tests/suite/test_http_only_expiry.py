"""Idle expiry on an HTTP-only target (platform none): with short_timeout_agent naming an
AgentRuntime already deployed with a short sessionTimeout, as upstream's own e2e does, the
idle-timeout scenarios run judged by the Router's refusal alone, and the end of the run says
that the sandbox's removal was not observed. A target whose garbage collector never runs
still fails them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import StartLocalCube
from tests.localcube.support import FIXTURES, derived_manifest
from tests.suite.commands import run_behave

AGENT = "echo-agent-short-ttl"


def run_expiry(url: str, tmp_path: Path) -> tuple[int, str]:
    return run_behave(
        "features/session_expiry.feature",
        f"--define=router_url={url}",
        f"--define=short_timeout_agent={AGENT}",
        "--define=short_session_timeout=2s",
        "--define=ttl_grace=3s",
        f"--define=reports_dir={tmp_path}",
        timeout=120,
    )


@pytest.fixture
def manifests(tmp_path: Path) -> list[Path]:
    derived = tmp_path / "manifests"
    derived.mkdir()
    derived_manifest(derived, "echo-agent", AGENT, sessionTimeout="2s")
    return [FIXTURES, derived]


@pytest.mark.slow
def test_idle_expiry_runs_without_a_platform_and_says_what_it_did_not_see(
    start_localcube: StartLocalCube, manifests: list[Path], tmp_path: Path
) -> None:
    cube = start_localcube(manifests)
    status, output = run_expiry(cube.url, tmp_path)
    assert status == 0, output
    assert ": 2 passed, 0 failed" in output, output
    assert "Not observed on this target (1):" in output, output
    assert "the removal of its sandbox was not observed (platform 'none')" in output


@pytest.mark.slow
def test_a_target_that_never_ends_idle_sessions_fails_it(
    start_localcube: StartLocalCube, manifests: list[Path], tmp_path: Path
) -> None:
    cube = start_localcube(manifests, gc_interval="1h")
    status, output = run_expiry(cube.url, tmp_path)
    assert status == 1, output
    assert "because session" in output and "was not found" in output, output
