"""Built images (and layers) kept by the content of what they are made from.

Each file is named by what it is and a digest of its inputs (a program's source, a
compiler's version, a package list, a user's binary's digest), so a second start finds it
and builds nothing; a change of input makes another. Builds take a lock per file (several
test processes may want the same one) and land by rename, so a reader never sees half a
file. The cache is `$XDG_CACHE_HOME/onemachine/images` (~/.cache/onemachine/images): kept
on purpose between runs; remove it to build everything again.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "onemachine" / "images"


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


class ImageCache:
    """`get(what, inputs, build)`: the cached file for `inputs`, built by `build(path)`
    into a temporary path the first time."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory if directory is not None else default_cache_dir()

    def path(self, what: str, inputs: object) -> Path:
        key = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:20]
        return self.directory / f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', what)}-{key}.tar"

    def get(self, what: str, inputs: object, build: Callable[[Path], object]) -> Path:
        target = self.path(what, inputs)
        if target.exists():
            return target
        self.directory.mkdir(parents=True, exist_ok=True)
        with open(f"{target}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not target.exists():
                with tempfile.TemporaryDirectory(dir=self.directory) as scratch:
                    made = Path(scratch) / target.name
                    build(made)
                    made.rename(target)
        return target
