"""Session lifecycle: idle timeout, activity, hard lifetime, restart and graceful stop."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

import pytest

from tests.localcube.support import (
    SESSION_HEADER,
    Client,
    derived_manifest,
    process_gone,
    processes_under,
)
from tests.waiting import wait_until


def test_an_idle_session_expires_and_its_process_is_gone(tmp_path: Path, start_localcube) -> None:
    # 2 s: activity is kept in whole seconds, so a 1 s timeout may end a session at once.
    manifest = derived_manifest(tmp_path, "echo-agent", "short-idle", sessionTimeout="2s")
    client = Client(start_localcube([manifest]).url)
    session = client.agent("short-idle", json={}).headers[SESSION_HEADER]
    sandbox = client.sandbox_of(session)
    # Watch through the admin API: a call through the Router would count as activity.
    wait_until(
        lambda: client.sandbox_of(session) is None, "the idle session to be collected", timeout=5
    )
    wait_until(
        lambda: process_gone(sandbox["pid"]) and not Path(sandbox["workspace"]).exists(),
        "the sandbox's process and workspace to go",
        timeout=5,
    )
    assert client.agent("short-idle", json={}, session=session).status_code == 404


@pytest.mark.slow
def test_activity_keeps_a_session_alive_past_its_timeout(tmp_path: Path, start_localcube) -> None:
    manifest = derived_manifest(tmp_path, "echo-agent", "kept-alive", sessionTimeout="2s")
    client = Client(start_localcube([manifest]).url)
    session = client.agent("kept-alive", json={}).headers[SESSION_HEADER]
    deadline = time.monotonic() + 4
    while time.monotonic() < deadline:
        assert client.agent("kept-alive", json={}, session=session).status_code == 200
        time.sleep(0.3)


@pytest.mark.slow
def test_a_request_longer_than_the_timeout_and_lookback_keeps_its_session(
    tmp_path: Path, start_localcube
) -> None:
    """Upstream records activity only before and after a forwarded call, and its GC has no
    in-flight check: there the call below loses its session. localcube keeps it.

    Upstream: pkg/router/handlers.go:78-89, pkg/workloadmanager/garbage_collection.go:81-106"""
    manifest = derived_manifest(tmp_path, "echo-agent", "long-task", sessionTimeout="2s")
    cube = start_localcube([manifest], extra_arguments=["--gc-min-idle-lookback", "1s"])
    client = Client(cube.url)
    session = client.agent("long-task", json={}).headers[SESSION_HEADER]
    slow = client.agent("long-task", "/echo/sleep", json={"seconds": 4}, session=session)
    assert slow.status_code == 200
    assert client.agent("long-task", json={}, session=session).status_code == 200


def test_activity_is_recorded_in_whole_seconds(client: Client) -> None:
    """Upstream: pkg/store/store_redis.go:314-330"""
    session = client.agent("echo-agent", json={}).headers[SESSION_HEADER]
    sandbox = client.sandbox_of(session)
    assert datetime.fromisoformat(sandbox["lastActivityAt"]).microsecond == 0
    assert datetime.fromisoformat(sandbox["createdAt"]).microsecond != 0


def test_an_idle_session_ends_no_sooner_than_the_lookback(tmp_path: Path, start_localcube) -> None:
    """With upstream's minimum idle lookback, a 1 s sessionTimeout ends a session only once
    it has been idle for the lookback (3 s here, less the second activity is rounded to).

    Upstream: pkg/workloadmanager/garbage_collection.go:81-85"""
    manifest = derived_manifest(tmp_path, "echo-agent", "looked-back", sessionTimeout="1s")
    cube = start_localcube([manifest], extra_arguments=["--gc-min-idle-lookback", "3s"])
    client = Client(cube.url)
    session = client.agent("looked-back", json={}).headers[SESSION_HEADER]
    idle_since = time.monotonic()
    wait_until(lambda: client.sandbox_of(session) is None, "the idle session to end", timeout=10)
    assert time.monotonic() - idle_since >= 1.9  # 2 s, less a GC pass's own time


def test_the_hard_lifetime_ends_an_active_session(tmp_path: Path, start_localcube) -> None:
    """Expiry is compared in whole seconds: a 2 s lifetime ends after 1 to 2 s.

    Upstream: pkg/store/store_redis.go:230-248, pkg/workloadmanager/garbage_collection.go:108"""
    manifest = derived_manifest(tmp_path, "echo-agent", "short-life", maxSessionDuration="2s")
    client = Client(start_localcube([manifest]).url)
    started = time.monotonic()
    session = client.agent("short-life", json={}).headers[SESSION_HEADER]
    wait_until(
        lambda: client.agent("short-life", json={}, session=session).status_code == 404 or None,
        "the session to reach its maximum duration",
        timeout=5,
        poll=0.2,
    )
    assert time.monotonic() - started >= 1.0


@pytest.mark.slow
def test_sessions_survive_a_crash_and_restart_with_the_same_state_dir(
    tmp_path: Path, start_localcube
) -> None:
    state = tmp_path / "state"
    cube = start_localcube(state_dir=state)
    client = Client(cube.url)
    session = client.agent("echo-agent", json={}).headers[SESSION_HEADER]
    pid = client.sandbox_of(session)["pid"]
    cube.crash()  # the warm pool may be half started: nothing of it may be orphaned
    assert not process_gone(pid), "sandboxes outlive a crashed server"
    restarted = start_localcube(state_dir=state)
    answer = Client(restarted.url).agent("echo-agent", json={"input": "after"}, session=session)
    assert answer.status_code == 200
    assert answer.json()["sandbox"]["pid"] == pid
    assert answer.json()["sandbox"]["calls"] == 2
    assert restarted.stop() == 0
    assert processes_under(state) == []


def test_a_graceful_stop_ends_every_sandbox_and_what_it_started(start_localcube) -> None:
    cube = start_localcube()
    client = Client(cube.url)
    client.agent("echo-agent", json={})
    spawned = client.execute(
        "python-interpreter", ["sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!"]
    )
    orphan_candidate = int(spawned.json()["stdout"])
    wait_until(
        lambda: len(client.sandboxes()) >= 4, "the warm pool and two session sandboxes", timeout=20
    )
    pids = [box["pid"] for box in client.sandboxes()] + [orphan_candidate]
    assert cube.stop() == 0
    for pid in pids:
        assert process_gone(pid), f"process {pid} outlived the graceful stop"


def test_a_call_in_flight_when_the_lifetime_ends_learns_that_the_session_ended(
    client: Client,
) -> None:
    """The sandbox was ended on purpose: the call is answered as the next call would be.
    Upstream's GC deletes the pod, and the proxied call, cut off, answers 503 `sandbox
    unreachable` (the ErrorHandler's last case).

    Upstream: pkg/router/handlers.go:246-257, pkg/router/handlers.go:368-373"""
    session = client.create_session("agent-runtime", "echo-agent", ttl=2).json()["sessionId"]
    answer = client.agent("echo-agent", "/echo/sleep", json={"seconds": 4}, session=session)
    assert answer.status_code == 404, answer.text
    assert answer.json() == {
        "error": f'sessions.agentcube.volcano.sh "{session}" not found',
        "code": "SESSION_NOT_FOUND",
    }
