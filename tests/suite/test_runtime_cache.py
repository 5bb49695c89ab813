"""A WorkloadManager finds runtimes through a cached watch, so the first calls to a runtime
applied a moment ago may be answered as if it did not exist: the suite waits, within
ready_timeout, until such a runtime is served. One that is never served fails the scenario
naming the runtime and the wait, rather than as a missing runtime at the first try."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.suite.commands import run_behave
from tests.suite.fault_proxy import FaultProxy

IDLE_EXPIRY = "A session left idle past its timeout ends"


def run_idle_expiry(url: str, tmp_path: Path) -> tuple[int, str]:
    return run_behave(
        "features/session_expiry.feature",
        "-n",
        IDLE_EXPIRY,
        f"--define=router_url={url}",
        "--define=platform=localcube",
        "--define=ready_timeout=5s",
        f"--define=reports_dir={tmp_path}",
        timeout=120,
    )


def test_a_runtime_the_cache_finds_late_is_waited_for(shared_cube, tmp_path: Path) -> None:
    with FaultProxy(shared_cube.url, "stale-runtime-cache") as proxy:
        status, output = run_idle_expiry(proxy.url, tmp_path)
    assert status == 0, output[-6000:]
    assert "1 passed" in output, output[-6000:]


@pytest.mark.slow
def test_a_runtime_never_served_fails_naming_it(shared_cube, tmp_path: Path) -> None:
    with FaultProxy(shared_cube.url, "runtime-never-served") as proxy:
        status, output = run_idle_expiry(proxy.url, tmp_path)
    assert status != 0, output[-6000:]
    assert "Gave up after" in output, output[-6000:]
    assert "just applied, to be served (a WorkloadManager finds runtimes" in output, output
    assert "agentruntimes.agentcube.volcano.sh" in output, output[-6000:]
