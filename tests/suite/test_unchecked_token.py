"""A token the target never checks proves nothing: the preflight finds that the target
answers without any token, says the token was ignored, and the credentials feature is
skipped with that reason; where the target must authenticate, the run stops at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from acceptance.platforms.base import TOKENS_IGNORED
from tests.conftest import StartLocalCube
from tests.suite.commands import run_behave
from tests.suite.fault_proxy import FaultProxy


@pytest.mark.slow
@pytest.mark.parametrize("must_authenticate", ["false", "true"])
def test_the_credentials_feature_is_skipped_or_stops_the_run_on_a_target_that_checks_no_token(
    start_localcube: StartLocalCube, tmp_path: Path, must_authenticate: str
) -> None:
    cube = start_localcube()  # no token file: authentication is off
    status, output = run_behave(
        "features/credentials.feature",
        f"--define=router_url={cube.url}",
        f"--define=reports_dir={tmp_path}",
        f"--define=must_authenticate={must_authenticate}",
        timeout=120,
        AGENTCUBE_API_TOKEN="a-token-nobody-checks",
    )
    if must_authenticate == "true":
        assert status == 1, output
        assert "it authenticates no caller, though must_authenticate" in output, output
        return
    assert status == 0, output
    assert "token ignored" in output and "token accepted" not in output, output
    assert "0 passed, 0 failed" in output, output
    assert output.count(TOKENS_IGNORED) >= 8, "each credential scenario skipped with the reason"


def test_a_target_that_checks_tokens_for_the_preflight_only_fails_the_credential_scenarios(
    start_localcube: StartLocalCube, tmp_path: Path
) -> None:
    """The preflight's call names a runtime that does not exist; the credentials feature
    still shows first that a call to the echo agent without a token is refused."""
    cube = start_localcube()  # no token file: authentication is off
    with FaultProxy(cube.url, "tokens-checked-for-unknown-runtimes-only") as proxy:
        status, output = run_behave(
            "features/credentials.feature",
            f"--define=router_url={proxy.url}",
            f"--define=reports_dir={tmp_path}",
            timeout=120,
            AGENTCUBE_API_TOKEN="a-token-nobody-checks",
        )
    assert status == 1, output
    assert "token accepted" in output and "token ignored" not in output, output
    assert "the target was given a token, but it does not require one" in output, output
    assert " 0 passed" in output, "every credentials scenario it runs fails"
