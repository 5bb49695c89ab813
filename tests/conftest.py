"""Fixtures every kind of test uses."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from acceptance.core import evidence
from localcube import embedded
from tests.localcube.support import FIXTURES

StartLocalCube = Callable[..., embedded.RunningLocalCube]


@pytest.fixture(autouse=True)
def no_registered_secrets(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Secrets to redact are process-wide; each test starts without any."""
    monkeypatch.setattr(evidence, "_secrets", set())
    yield


@pytest.fixture(autouse=True, scope="session")
def reports_of_this_test_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Suite runs a test starts write their reports and their localcube's log here, not in
    the repository's reports/: the tests run in several processes at once (pytest-xdist)."""
    before = os.environ.get("AGENTCUBE_REPORTS_DIR")
    os.environ["AGENTCUBE_REPORTS_DIR"] = str(tmp_path_factory.mktemp("reports"))
    yield
    if before is None:
        del os.environ["AGENTCUBE_REPORTS_DIR"]
    else:
        os.environ["AGENTCUBE_REPORTS_DIR"] = before


@pytest.fixture(scope="module")
def shared_cube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[embedded.RunningLocalCube]:
    """One localcube serving the fixture runtimes, for tests that only use their own sessions."""
    log = tmp_path_factory.mktemp("cube") / "localcube.log"
    cube = embedded.start([FIXTURES], log, gc_interval="100ms")
    yield cube
    cube.stop()


@pytest.fixture
def start_localcube(tmp_path: Path) -> Iterator[StartLocalCube]:
    """Start localcube servers for one test; each is stopped gracefully at its end."""
    running: list[embedded.RunningLocalCube] = []

    def start(manifests: list[Path] | None = None, **options) -> embedded.RunningLocalCube:
        options.setdefault("gc_interval", "100ms")
        log = tmp_path / f"localcube-{len(running)}.log"
        cube = embedded.start(manifests or [FIXTURES], log, **options)
        running.append(cube)
        return cube

    yield start
    for cube in running:
        cube.stop()
