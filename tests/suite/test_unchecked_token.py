"""A token the target never checks proves nothing: given a token, the credentials feature
first shows that a call without one is refused, and fails on a target that serves it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import StartLocalCube
from tests.suite.commands import run_behave


@pytest.mark.slow
def test_the_credentials_feature_fails_on_a_target_that_checks_no_token(
    start_localcube: StartLocalCube, tmp_path: Path
) -> None:
    cube = start_localcube()  # no token file: authentication is off
    status, output = run_behave(
        "features/credentials.feature",
        f"--define=router_url={cube.url}",
        f"--define=reports_dir={tmp_path}",
        timeout=120,
        AGENTCUBE_API_TOKEN="a-token-nobody-checks",
    )
    assert status == 1, output
    assert "the target was given a token, but it does not require one" in output, output
    assert "0 scenarios passed" in output, "every credentials scenario fails on such a target"
