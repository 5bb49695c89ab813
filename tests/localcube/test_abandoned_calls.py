"""A client that gives up during a cold first call (issue 11 item 7). While its sandbox
starts, the start is rolled back at once, as upstream's WorkloadManager rolls back a creation
whose request was cancelled. Once the session exists, during the forwarded call, the session
is nobody's to reach (its id comes only with the answer), as upstream: its idle timeout
ends it, with everything its sandbox runs."""

from __future__ import annotations

from pathlib import Path

import pytest
import requests

from tests.localcube.support import (
    Client,
    agent_running,
    derived_manifest,
    process_gone,
    processes_under,
)
from tests.waiting import wait_until

# Serves nothing for its first 3 s: a sandbox that starts slowly.
SLOW_TO_START = (
    "import os, socket, time\n"
    "time.sleep(3)\n"
    "server = socket.create_server((os.environ['HOST'], int(os.environ['PORT'])))\n"
    "while True:\n"
    "    server.accept()[0].close()\n"
)


def sandboxes_of(client: Client, runtime: str) -> list[dict]:
    return [box for box in client.sandboxes() if box["runtime"] == runtime]


def test_a_client_that_gives_up_while_its_sandbox_starts_leaves_nothing(
    tmp_path: Path, start_localcube
) -> None:
    """Upstream: pkg/workloadmanager/handlers.go:218-247, pkg/workloadmanager/handlers.go:402-410"""
    state = tmp_path / "state"
    manifest = agent_running(tmp_path, "slow-start", SLOW_TO_START)
    client = Client(start_localcube([manifest], state_dir=state).url)
    with pytest.raises(requests.ReadTimeout):
        client.agent("slow-start", json={}, timeout=1)
    wait_until(
        lambda: not processes_under(state), "the starting sandbox to be rolled back", timeout=2
    )
    assert sandboxes_of(client, "slow-start") == []


@pytest.mark.slow
def test_a_session_whose_first_caller_gave_up_ends_at_its_idle_timeout(
    tmp_path: Path, start_localcube
) -> None:
    """Upstream: pkg/router/handlers.go:354-357, pkg/workloadmanager/garbage_collection.go:92-104"""
    manifest = derived_manifest(tmp_path, "echo-agent", "abandoned", sessionTimeout="2s")
    client = Client(start_localcube([manifest]).url)
    with pytest.raises(requests.ReadTimeout):
        client.agent("abandoned", "/echo/sleep", json={"seconds": 30}, timeout=3)
    (sandbox,) = wait_until(
        lambda: [box for box in sandboxes_of(client, "abandoned") if box["callsInFlight"] == 0],
        "the abandoned session's sandbox, its call cancelled",
        timeout=5,
    )
    assert sandbox["sessionId"] is not None
    wait_until(
        lambda: not sandboxes_of(client, "abandoned"), "the idle timeout to end it", timeout=8
    )
    wait_until(lambda: process_gone(sandbox["pid"]), "its process to end", timeout=5)
