"""The node's image map, `--image PATTERN=COMMAND`: which local command stands for an image.

PATTERN is an fnmatch pattern over the whole image reference (`picod:*`, `python:3.12-*`,
`ghcr.io/volcano-sh/picod:*`); the first entry that matches wins. COMMAND (split as a
shell would, with shlex) is the image's ENTRYPOINT. As in Kubernetes, a container's
`command` replaces the entrypoint and its `args` follow; and since an image such as
`python:3.12-slim` is mapped to a local interpreter, a `command` whose first word names
what the image provides (COMMAND's own name, e.g. `picod`, or `python`/`python3` for a
python COMMAND) runs COMMAND in its place.
"""

from __future__ import annotations

import fnmatch
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

_FORM = "--image PATTERN=COMMAND (e.g. --image 'python:*=python3')"


class ImageMapError(ValueError):
    """A malformed `--image` entry."""


class ImageNotMapped(LookupError):
    """An image that no `--image` pattern matches."""

    def __init__(self, image: str, patterns: Sequence[str]) -> None:
        known = ", ".join(patterns) or "none given"
        super().__init__(f'image "{image}" matches no --image PATTERN=COMMAND (patterns: {known})')
        self.image = image


@dataclass(frozen=True)
class _Entry:
    pattern: str
    entrypoint: tuple[str, ...]

    def provides(self, word: str) -> bool:
        """Whether a container command's first word names this image's program."""
        own = PurePosixPath(self.entrypoint[0]).name
        name = PurePosixPath(word).name
        return name == own or (own.startswith("python") and name in ("python", "python3"))


@dataclass(frozen=True)
class ImageMap:
    entries: tuple[_Entry, ...]

    @classmethod
    def parse(cls, entries: Iterable[str]) -> ImageMap:
        """The map from `--image` values, in order; ImageMapError names a malformed one."""
        parsed = []
        for entry in entries:
            pattern, equals, command = entry.partition("=")
            if not equals or not pattern.strip():
                raise ImageMapError(f"--image {entry!r}: expected {_FORM}")
            try:
                entrypoint = tuple(shlex.split(command))
            except ValueError as error:
                raise ImageMapError(f"--image {entry!r}: COMMAND: {error}") from None
            if not entrypoint:
                raise ImageMapError(f"--image {entry!r}: COMMAND is empty; expected {_FORM}")
            parsed.append(_Entry(pattern.strip(), entrypoint))
        return cls(tuple(parsed))

    def resolve(
        self, image: str, command: Sequence[str] | None, args: Sequence[str] | None
    ) -> list[str]:
        """The argv a container of `image` runs with the pod's `command` and `args`."""
        entry = next((e for e in self.entries if fnmatch.fnmatchcase(image, e.pattern)), None)
        if entry is None:
            raise ImageNotMapped(image, [e.pattern for e in self.entries])
        if not command:
            return [*entry.entrypoint, *(args or ())]
        if entry.provides(command[0]):
            return [*entry.entrypoint, *command[1:], *(args or ())]
        return [*command, *(args or ())]
