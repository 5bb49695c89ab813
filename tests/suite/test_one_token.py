"""A target run with one ordinary token: localcube started with a single non-admin subject,
the suite given only AGENTCUBE_API_TOKEN. Upstream's Router refuses sessions opened at the
WorkloadManager to such a caller (they have no owner), so the default run must open its
sessions through the Router and pass, skipping with their reasons only the scenarios that
need a second subject or the admin role."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from tests.conftest import StartLocalCube
from tests.suite.commands import run_behave


@pytest.mark.slow
def test_the_default_run_passes_with_one_ordinary_token(
    start_localcube: StartLocalCube, tmp_path: Path
) -> None:
    token = secrets.token_urlsafe(24)
    token_file = tmp_path / "tokens"
    token_file.write_text(f"platform-team={token}\n")
    cube = start_localcube(gc_interval="200ms", extra_arguments=["--token-file", str(token_file)])
    status, output = run_behave(
        f"--define=router_url={cube.url}",
        "--define=platform=localcube",
        f"--define=reports_dir={tmp_path / 'reports'}",
        timeout=600,
        AGENTCUBE_API_TOKEN=token,
    )
    assert status == 0, output[-6000:]
    assert "0 failed" in output, output[-6000:]
    skipped = output[output.index("Skipped for this target") :]
    assert "A session belongs to the subject that opened it" in skipped, skipped
    assert "set api_token and second_api_token" in skipped, skipped
    assert "A busy session ends when the lifetime it asked for is up" in skipped, skipped
    assert "set admin_api_token" in skipped, skipped
    # An opaque token is no JWT: nothing to forge from it, and no issuer's bad tokens given.
    assert "with a token that is not signed" in skipped, skipped
    assert "set api_token to an OIDC access token (a JWT)" in skipped, skipped
    assert "set expired_api_token" in skipped, skipped
    assert "set no_role_api_token" in skipped, skipped
    assert token not in output, "the token never reaches the output"
