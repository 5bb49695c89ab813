from __future__ import annotations

import pytest

from localcube import embedded
from tests.localcube.support import Client


@pytest.fixture
def client(shared_cube: embedded.RunningLocalCube) -> Client:
    return Client(shared_cube.url)
