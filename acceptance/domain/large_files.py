"""A file of several megabytes through a session's workspace: up, listed, and back down.
The content is generated (seeded, so every run moves the same bytes) and judged by its
length and SHA-256 digest, never shown."""

from __future__ import annotations

import hashlib
import random

from hamcrest import assert_that

from acceptance.core import matchers
from acceptance.domain.workspace import store
from acceptance.domain.world import World

LARGE_FILE = "large.bin"
# Several MiB, across many 64 KiB buffers and not a whole number of them, so that a cut at
# any buffer boundary changes the length; well under PicoD's 32 MiB body limit once the
# upload's base64 has grown it by a third.
LARGE_FILE_SIZE = 5 * 2**20 + 4321
_SEED = 20


class LargeFiles:
    def __init__(self, world: World) -> None:
        self._world = world
        self._sha256: str | None = None

    def upload(self) -> None:
        content = random.Random(_SEED).randbytes(LARGE_FILE_SIZE)
        self._sha256 = hashlib.sha256(content).hexdigest()
        store(self._world, LARGE_FILE, content)

    def expect_downloaded_unchanged(self) -> None:
        if self._sha256 is None:
            raise AssertionError("the scenario has not uploaded the large file")
        assert_that(
            self._world.in_session(self._world.session).download_file(LARGE_FILE),
            matchers.holds_checksum(
                f"{LARGE_FILE} to come back byte for byte", LARGE_FILE_SIZE, self._sha256
            ),
        )

    def expect_listed_with_its_size(self) -> None:
        assert_that(
            self._world.in_session(self._world.session).list_files("."),
            matchers.lists_file_of_size(LARGE_FILE, LARGE_FILE_SIZE),
        )
