from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from localcube import embedded
from tests.localcube import redis_process
from tests.localcube.support import Client


@pytest.fixture
def client(shared_cube: embedded.RunningLocalCube) -> Client:
    return Client(shared_cube.url)


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[redis_process.RedisServer]:
    """A real redis-server for one test, stopped at its end."""
    server = redis_process.start(tmp_path / "redis")
    yield server
    server.stop()
