from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from localcube import embedded
from tests.localcube import redis_process
from tests.localcube.support import FIXTURES, Client

StartLocalCube = Callable[..., embedded.RunningLocalCube]


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


@pytest.fixture
def client(shared_cube: embedded.RunningLocalCube) -> Client:
    return Client(shared_cube.url)


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[redis_process.RedisServer]:
    """A real redis-server for one test, stopped at its end."""
    server = redis_process.start(tmp_path / "redis")
    yield server
    server.stop()
