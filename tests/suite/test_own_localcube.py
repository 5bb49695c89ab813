"""The localcube the suite starts itself: its Router authenticating by OIDC against the
suite's own issuer, whose tokens never appear in its arguments, a restart that keeps
sessions and the issuer, its state removed at the end."""

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
    settings = load_settings({"reports_dir": str(tmp_path)}, {})
    cube = OwnLocalcube(settings)
    state = cube.state_dir
    try:
        tokens = cube.tokens
        first, second, admin = (
            tokens[name] for name in ("api_token", "second_api_token", "admin_api_token")
        )
        assert len(set(tokens.values())) == 7
        assert (
            "--jwt-issuer-url" in cube.process.arguments
            and "--token-file" not in cube.process.arguments
        )
        assert not any(token in " ".join(cube.process.arguments) for token in tokens.values())
        assert (
            requests.post(
                f"{cube.url}/v1/namespaces/default/agent-runtimes/echo-agent/invocations/echo",
                json={},
                timeout=10,
            ).status_code
            == 401
        )
        refused = Client(cube.url, tokens["no_role_api_token"]).agent("echo-agent", json={})
        assert refused.status_code == 403
        owner = Client(cube.url, first)
        session = owner.agent("echo-agent", json={"input": "x"}).headers[SESSION_HEADER]
        url, pid = cube.url, cube.process.pid
        cube.restart()
        assert cube.process.url == url and cube.process.pid != pid
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
        OwnLocalcube(settings)


def test_a_token_setting_given_for_the_localcube_the_suite_starts_is_refused(
    tmp_path: Path,
) -> None:
    """Its Router takes its own issuer's tokens only: a given one would never be accepted."""
    settings = load_settings(
        {"reports_dir": str(tmp_path)}, {"AGENTCUBE_SECOND_API_TOKEN": "given"}
    )
    with pytest.raises(
        TargetStartError, match="setting second_api_token is set, but the localcube"
    ):
        OwnLocalcube(settings)
