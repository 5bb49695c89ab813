"""The files of a code-interpreter session's workspace, through the Router: uploaded,
listed and downloaded, a script's and one of several megabytes. The large one is generated
(seeded, so every run moves the same bytes) and judged by its length and SHA-256 digest,
never shown."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence

import requests
from hamcrest import assert_that, has_entries, has_entry, has_item, has_items
from hamcrest.core.matcher import Matcher

from acceptance.core import matchers
from acceptance.core.evidence import describe_response
from acceptance.core.matchers import Answer, holds_json
from acceptance.core.runtimes import FIXTURE_SCRIPTS
from acceptance.domain.world import World

LARGE_FILE = "large.bin"
# Several MiB, across many 64 KiB buffers and not a whole number of them, so that a cut at
# any buffer boundary changes the length; well under PicoD's 32 MiB body limit once the
# upload's base64 has grown it by a third.
LARGE_FILE_SIZE = 5 * 2**20 + 4321
_LARGE_CONTENT_SEED = 20


class Workspace:
    def __init__(self, world: World) -> None:
        self._world = world

    def upload_script(self, name: str) -> None:
        self._store(name, (FIXTURE_SCRIPTS / name).read_bytes())

    def upload_large_file(self) -> None:
        self._store(LARGE_FILE, random.Random(_LARGE_CONTENT_SEED).randbytes(LARGE_FILE_SIZE))

    def _store(self, path: str, content: bytes) -> None:
        assert_that(self._world.in_session().upload_file(path, content), stored(path, content))

    def expect_lists(self, names: list[str]) -> None:
        assert_that(self._world.in_session().list_files("."), lists_files(names))

    def expect_holds_fibonacci(self, path: str, numbers: list[int]) -> None:
        assert_that(self._world.in_session().download_file(path), holds_fibonacci(numbers))

    def expect_large_file_unchanged(self) -> None:
        content = random.Random(_LARGE_CONTENT_SEED).randbytes(LARGE_FILE_SIZE)
        assert_that(
            self._world.in_session().download_file(LARGE_FILE),
            holds_checksum(f"{LARGE_FILE} to come back byte for byte", content),
        )

    def expect_large_file_listed_with_its_size(self) -> None:
        assert_that(
            self._world.in_session().list_files("."),
            lists_file_of_size(LARGE_FILE, LARGE_FILE_SIZE),
        )


# What its answers are expected to be.


def stored(what: str, content: bytes) -> Answer:
    """PicoD's answer to an upload it stored whole."""
    return matchers.holds_json(
        f"PicoD to store {what} ({len(content)} bytes) in the workspace",
        has_entries(size=len(content)),
    )


def lists_files(names: Sequence[str]) -> Answer:
    return Answer(
        f"the workspace listing to include {', '.join(names)}",
        status=200,
        body=has_entry("files", has_items(*(has_entry("name", name) for name in names))),
    )


def lists_file_of_size(name: str, size: int) -> Answer:
    return Answer(
        f"the workspace listing to show {name} with its size of {size} bytes",
        status=200,
        body=has_entry("files", has_item(has_entries(name=name, size=size))),
    )


def holds_fibonacci(numbers: Sequence[int]) -> Answer:
    """The file fixtures/scripts/fibonacci.py writes: {"count": N, "fibonacci": [...]}."""
    return holds_json(
        f"the file to hold the first {len(numbers)} Fibonacci numbers",
        has_entries(count=len(numbers), fibonacci=list(numbers)),
    )


def holds_checksum(expectation: str, content: bytes) -> Matcher[requests.Response]:
    """A 200 answer whose body has the length and SHA-256 digest of `content`: a large
    download, which a failure shows by its length and digest, never by its bytes."""

    def digest(body: bytes) -> tuple[int, str]:
        return len(body), hashlib.sha256(body).hexdigest()

    size, sha256 = digest(content)

    return matchers.meets(
        f"{expectation} ({size} bytes, SHA-256 {sha256})",
        lambda answer: answer.status_code == 200 and digest(answer.content) == (size, sha256),
        lambda answer: "the body was {} bytes, SHA-256 {}; the answer was {}".format(
            *digest(answer.content), describe_response(answer)
        ),
    )
