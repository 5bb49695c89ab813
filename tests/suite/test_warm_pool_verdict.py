"""The warm-pool scenario's verdict does not flip: against a target whose claims wait on a
one-second poll (upstream's WorkloadManager, pkg/workloadmanager/handlers.go:331-340) while
its cold starts take no time and a second in turn, it fails every run; against localcube it
passes every run. The scenario compares a first call from the pool with a call in a session
of the same run, never with that run's cold starts."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

import pytest

from localcube import embedded
from tests.localcube.support import FIXTURES
from tests.suite.commands import BehaveRun, run_behave
from tests.suite.fault_proxy import FaultProxy

pytestmark = pytest.mark.slow

SCENARIO = "A first call served from the warm pool waits for no sandbox to start"
RUNS = 5
VERDICT = "more than the 0.5 s a claim of a waiting sandbox may take"


def behave(url: str, reports: Path) -> BehaveRun:
    userdata = {"router_url": url, "platform": "localcube", "reports_dir": str(reports)}
    return run_behave("-f", "plain", "-n", SCENARIO, userdata=userdata, timeout=120)


def test_the_verdict_is_the_same_in_every_run(tmp_path: Path) -> None:
    with ExitStack() as stack:
        cube = embedded.start([FIXTURES], tmp_path / "localcube.log", gc_interval="100ms")
        stack.callback(cube.stop)
        # One proxy for all the runs: its cold starts go on alternating from run to run.
        broken = stack.enter_context(FaultProxy(cube.url, "claim-polled-once-a-second"))
        for run in range(RUNS):
            failed = behave(broken.url, tmp_path / f"broken-{run}")
            output = failed.output
            assert failed.status == 1 and VERDICT in output, f"run {run}:\n{output[-4000:]}"
            assert ": 0 passed, 1 failed" in output, output[-4000:]
            passed = behave(cube.url, tmp_path / f"healthy-{run}")
            output = passed.output
            assert passed.status == 0, f"run {run}:\n{output[-4000:]}"
            assert ": 1 passed, 0 failed" in output, output[-4000:]
