"""The files of a code-interpreter session's workspace, through the Router: uploaded,
listed and downloaded."""

from __future__ import annotations

import requests
from hamcrest import assert_that, has_entries

from acceptance.core import matchers
from acceptance.core.runtimes import FIXTURE_SCRIPTS
from acceptance.domain.world import World


class Workspace:
    def __init__(self, world: World) -> None:
        self._world = world

    def upload_script(self, name: str) -> None:
        store(self._world, name, (FIXTURE_SCRIPTS / name).read_bytes())

    def expect_lists(self, names: list[str]) -> None:
        assert_that(listing(self._world), matchers.lists_files(names))

    def expect_holds_fibonacci(self, path: str, numbers: list[int]) -> None:
        assert_that(download(self._world, path), matchers.holds_fibonacci(numbers))


def store(world: World, path: str, content: bytes) -> None:
    """Upload a file into the session's workspace; PicoD must store all of it."""
    session = world.session
    response = world.call(
        session.runtime,
        session.session_id,
        lambda sid: world.router.upload_file(session.runtime, path, content, session_id=sid),
    )
    assert_that(
        response,
        matchers.holds_json(
            f"PicoD to store {path} ({len(content)} bytes) in the workspace",
            has_entries(size=len(content)),
        ),
    )


def listing(world: World) -> requests.Response:
    """The listing of the session's workspace."""
    session = world.session
    return world.call(
        session.runtime,
        session.session_id,
        lambda sid: world.router.list_files(session.runtime, ".", session_id=sid),
    )


def download(world: World, path: str) -> requests.Response:
    session = world.session
    return world.call(
        session.runtime,
        session.session_id,
        lambda sid: world.router.download_file(session.runtime, path, session_id=sid),
    )
