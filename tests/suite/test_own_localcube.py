"""The localcube the suite starts itself: authentication on for two subjects whose tokens
never appear in its arguments, a restart that keeps sessions, its state removed at the end."""

from __future__ import annotations

from pathlib import Path

import pytest
import requests

from acceptance.core.settings import load_settings
from acceptance.platforms.base import TargetStartError
from acceptance.platforms.own_localcube import OwnLocalcube
from tests.localcube.support import SESSION_HEADER, Client


@pytest.mark.slow
def test_it_requires_either_token_restarts_with_its_sessions_and_cleans_up(
    tmp_path: Path,
) -> None:
    settings = load_settings(
        {"reports_dir": str(tmp_path)}, {"AGENTCUBE_SECOND_API_TOKEN": "given"}
    )
    cube = OwnLocalcube.start(settings)
    state = cube.state_dir
    try:
        first, second, admin = cube.tokens
        assert second == "given" and len({first, second, admin}) == 3
        assert not any(token in " ".join(cube.arguments) for token in cube.tokens)
        assert requests.post(f"{cube.url}/v1/agent-runtime", json={}, timeout=10).status_code == 401
        owner = Client(cube.url, first)
        session = owner.agent("echo-agent", json={"input": "x"}).headers[SESSION_HEADER]
        url, pid = cube.url, cube.pid
        cube.restart()
        assert cube.url == url and cube.pid != pid
        assert owner.agent("echo-agent", json={"input": "y"}, session=session).status_code == 200
        assert Client(cube.url, second).agent("echo-agent", json={}).status_code == 200
        # Only the admin may use a session opened at the WorkloadManager (it has no owner).
        opened = (
            Client(cube.url, admin)
            .create_session("agent-runtime", "echo-agent")
            .json()["sessionId"]
        )
        for caller, status in ((first, 403), (admin, 200)):
            answer = Client(cube.url, caller).agent("echo-agent", json={}, session=opened)
            assert answer.status_code == status, answer.text
    finally:
        assert cube.stop() == 0
    assert not state.exists()


def test_a_localcube_that_does_not_come_up_is_the_suites_own_start_error_naming_why(
    tmp_path: Path,
) -> None:
    """The run wing knows TargetStartError, never localcube's own error."""
    settings = load_settings({"reports_dir": str(tmp_path), "ready_timeout": "1ms"}, {})
    with pytest.raises(TargetStartError, match="localcube did not start"):
        OwnLocalcube.start(settings)
