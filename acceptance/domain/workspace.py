"""The files of a code-interpreter session's workspace, through the Router: uploaded,
listed and downloaded."""

from __future__ import annotations

from collections.abc import Sequence

from hamcrest import assert_that, has_entries, has_entry, has_items

from acceptance.core import matchers
from acceptance.core.matchers import Answer, holds_json
from acceptance.core.runtimes import FIXTURE_SCRIPTS
from acceptance.domain.world import World


class Workspace:
    def __init__(self, world: World) -> None:
        self._world = world

    def upload_script(self, name: str) -> None:
        store(self._world, name, (FIXTURE_SCRIPTS / name).read_bytes())

    def expect_lists(self, names: list[str]) -> None:
        assert_that(self._world.in_session().list_files("."), lists_files(names))

    def expect_holds_fibonacci(self, path: str, numbers: list[int]) -> None:
        assert_that(self._world.in_session().download_file(path), holds_fibonacci(numbers))


def store(world: World, path: str, content: bytes) -> None:
    """Upload a file into the session's workspace; PicoD must store all of it."""
    response = world.in_session(world.session).upload_file(path, content)
    assert_that(
        response,
        matchers.holds_json(
            f"PicoD to store {path} ({len(content)} bytes) in the workspace",
            has_entries(size=len(content)),
        ),
    )


# What its answers are expected to be.


def lists_files(names: Sequence[str]) -> Answer:
    return Answer(
        f"the workspace listing to include {', '.join(names)}",
        status=200,
        body=has_entry("files", has_items(*(has_entry("name", name) for name in names))),
    )


def holds_fibonacci(numbers: Sequence[int]) -> Answer:
    """The file fixtures/scripts/fibonacci.py writes: {"count": N, "fibonacci": [...]}."""
    return holds_json(
        f"the file to hold the first {len(numbers)} Fibonacci numbers",
        has_entries(count=len(numbers), fibonacci=list(numbers)),
    )
