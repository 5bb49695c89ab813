"""The one-machine cluster started from the stand-in bin-dir, for tests that need one
running: the launcher's own tests and the e2e runner's.

`stand_in_inputs` gives what the launcher is started with (bin-dir, checkouts, PATH);
`running_cluster` is the fixture: the launcher started as a child (it enters a namespace of
its own, never the test process), waited for until STATE/cluster.json is written (every part
ready), yielded as a RunningCluster, and stopped at the end with every part it started.
Import the fixture into a conftest.py or test module to use it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.onemachine.cluster import stand_ins
from tests.onemachine.cluster.conftest import ROOT, namespaces_allowed, started_pids
from tests.waiting import wait_until

READY_TIMEOUT = 60.0  # for the whole start: generous, as a loaded machine needs
STOP_TIMEOUT = 60.0


@dataclass(frozen=True)
class StandInInputs:
    """What `python -m onemachine cluster` is started with, and the environment to start
    it in (PATH with a redis-server)."""

    bin_dir: Path
    agentcube_src: Path
    agent_sandbox_src: Path
    env: dict[str, str]

    def arguments(self) -> list[str]:
        return [
            "--bin-dir",
            str(self.bin_dir),
            "--agentcube-src",
            str(self.agentcube_src),
            "--agent-sandbox-src",
            str(self.agent_sandbox_src),
        ]


def stand_in_inputs(directory: Path) -> StandInInputs:
    agentcube, sandbox = stand_ins.checkouts(directory / "checkouts")
    return StandInInputs(
        stand_ins.cluster_bin_dir(directory / "bin"),
        agentcube,
        sandbox,
        {**os.environ, "PATH": stand_ins.redis_path(directory / "path")},
    )


@dataclass
class RunningCluster:
    """A started cluster: its state directory, cluster.json's fields (`info`), the
    launcher's process and the file of its stderr."""

    state_dir: Path
    info: dict[str, Any]
    launcher: subprocess.Popen
    stderr: Path

    @property
    def api_server(self) -> str:
        return self.info["api_server"]

    @property
    def admin_kubeconfig(self) -> Path:
        """The admin's kubeconfig for the host (the host URL of the API server)."""
        return Path(self.info["admin_kubeconfig"])

    def part_pids(self) -> dict[str, int]:
        return started_pids(self.stderr.read_text())

    def stop(self) -> int:
        """SIGTERM to the launcher, its exit code once it has stopped every part; SIGKILL
        to the launcher and every part still there if it does not in time."""
        if self.launcher.poll() is None:
            self.launcher.terminate()
            try:
                self.launcher.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.launcher.kill()
                self.launcher.wait()
        for pid in self.part_pids().values():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return self.launcher.returncode


def start_cluster(directory: Path, *extra: str) -> RunningCluster:
    """The launcher with the stand-ins, its state in directory/state, returned once ready;
    an AssertionError with its stderr if it exits first or is not ready in time."""
    inputs = stand_in_inputs(directory)
    state = directory / "state"
    errors = directory / "launcher.err"
    command = [sys.executable, "-m", "onemachine", "cluster", *inputs.arguments()]
    with errors.open("w") as output:
        launcher = subprocess.Popen(
            [*command, "--state-dir", str(state), *extra],
            stdout=subprocess.DEVNULL,
            stderr=output,
            env=inputs.env,
            cwd=ROOT,
        )
    info_file = state / "cluster.json"
    try:
        wait_until(
            lambda: info_file.exists() or launcher.poll() is not None,
            "the launcher to write cluster.json",
            timeout=READY_TIMEOUT,
            poll=0.1,
        )
    except AssertionError:
        RunningCluster(state, {}, launcher, errors).stop()
        raise AssertionError(f"not ready in {READY_TIMEOUT:g} s:\n{errors.read_text()}") from None
    if not info_file.exists():
        raise AssertionError(f"the launcher exited ({launcher.returncode}):\n{errors.read_text()}")
    return RunningCluster(state, json.loads(info_file.read_text()), launcher, errors)


@pytest.fixture
def running_cluster(tmp_path: Path) -> Iterator[RunningCluster]:
    if not namespaces_allowed():
        pytest.skip("this machine does not allow network namespaces")
    cluster = start_cluster(tmp_path / "cluster")
    try:
        yield cluster
    finally:
        cluster.stop()
