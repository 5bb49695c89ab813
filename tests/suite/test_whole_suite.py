"""The whole default suite passes against the localcube it starts itself (README command one)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.suite.commands import run_behave

# runs the whole default suite: left to CI (./dev test --all) by the quick run
pytestmark = pytest.mark.slow


def test_the_default_run_passes_against_localcube(tmp_path: Path) -> None:
    result = run_behave(
        *("--format", "progress", "--junit", "--junit-directory", str(tmp_path / "junit")),
        timeout=600,
    )
    assert result.status == 0, result.stdout[-6000:] + result.stderr[-3000:]
    assert re.search(r"Run summary: \d+ scenarios: \d+ passed, 0 failed", result.stderr), (
        result.stderr
    )
    assert list((tmp_path / "junit").glob("TESTS-*.xml")), "JUnit reports are written"
