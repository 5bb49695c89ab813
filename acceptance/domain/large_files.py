"""A file of several megabytes through a session's workspace: up, listed, and back down.
The content is generated (seeded, so every run moves the same bytes) and judged by its
length and SHA-256 digest, never shown."""

from __future__ import annotations

import hashlib
import random

import requests
from hamcrest import assert_that, has_entries, has_entry, has_item
from hamcrest.core.matcher import Matcher

from acceptance.core import matchers
from acceptance.core.evidence import describe_response
from acceptance.core.matchers import Answer
from acceptance.domain.workspace import store
from acceptance.domain.world import World, required

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
        sha256 = required(self._sha256, "the scenario has not uploaded the large file")
        assert_that(
            self._world.in_session().download_file(LARGE_FILE),
            holds_checksum(f"{LARGE_FILE} to come back byte for byte", LARGE_FILE_SIZE, sha256),
        )

    def expect_listed_with_its_size(self) -> None:
        assert_that(
            self._world.in_session().list_files("."),
            lists_file_of_size(LARGE_FILE, LARGE_FILE_SIZE),
        )


# What its answers are expected to be.


def holds_checksum(expectation: str, size: int, sha256: str) -> Matcher[requests.Response]:
    """A 200 answer whose body has this length and SHA-256 digest: a large download, which
    a failure shows by its length and digest, never by its bytes."""

    def digest(response: requests.Response) -> tuple[int, str]:
        return len(response.content), hashlib.sha256(response.content).hexdigest()

    return matchers.meets(
        f"{expectation} ({size} bytes, SHA-256 {sha256})",
        lambda response: response.status_code == 200 and digest(response) == (size, sha256),
        lambda response: "the body was {} bytes, SHA-256 {}; the answer was {}".format(
            *digest(response), describe_response(response)
        ),
    )


def lists_file_of_size(name: str, size: int) -> Answer:
    return Answer(
        f"the workspace listing to show {name} with its size of {size} bytes",
        status=200,
        body=has_entry("files", has_item(has_entries(name=name, size=size))),
    )
