"""The workspace jail of the PicoD-compatible daemon: every client path lands inside one root.

Upstream PicoD (pkg/picod/files.go, sanitizePath) resolves symlinks only when the whole path
already exists, so with `link -> /elsewhere` inside the workspace, writing `link/newfile` passes
its check and creates `/elsewhere/newfile`. Here the deepest existing ancestor (found with
lstat, so a dangling symlink counts as existing) is resolved with realpath and must stay inside,
and the path handed back contains no symlink at all.
"""

import errno
import os
from pathlib import Path


class WorkspaceEscape(ValueError):
    """A client path that resolves, lexically or through a symlink, outside the workspace."""

    def __init__(self, path: str) -> None:
        super().__init__(f"access denied: path '{path}' escapes workspace jail")
        self.path = path


class Workspace:
    """A directory that client paths are confined to (created if missing)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        os.makedirs(root, 0o755, exist_ok=True)
        self.root = Path(os.path.realpath(root))

    def contains(self, path: Path) -> bool:
        """Whether the absolute, normalised `path` is the root or below it (lexically)."""
        return path == self.root or path.is_relative_to(self.root)

    def resolve(self, path: str) -> Path:
        """Map a client path to an absolute path inside the workspace.

        An absolute path is taken relative to the root ("/a/b" -> root/a/b), as upstream does.
        Existing components come back with their symlinks resolved; components that do not
        exist yet are appended as given. Raises WorkspaceEscape when the result would be
        outside the root, ValueError for a path with a NUL byte.
        """
        if "\0" in path:
            raise ValueError(f"invalid path {path!r}: contains a NUL byte")
        relative = os.path.normpath(path).lstrip("/")
        candidate = Path(os.path.normpath(os.path.join(self.root, relative)))
        if not self.contains(candidate):
            raise WorkspaceEscape(path)
        existing, missing = candidate, []
        while not os.path.lexists(existing):
            missing.append(existing.name)
            existing = existing.parent
        real = Path(os.path.realpath(existing))
        if not self.contains(real):
            raise WorkspaceEscape(path)
        return real.joinpath(*reversed(missing))

    def mkdirs(self, directory: Path) -> None:
        """Create `directory` (a path inside the root, e.g. from resolve()) and its parents.

        Like os.makedirs(directory, 0o755, exist_ok=True), but each component that already
        exists is resolved and must still be inside the root, so a symlink planted after
        resolve() cannot redirect the creation outside. Raises NotADirectoryError when the
        path exists and is not a directory.
        """
        directory = Path(os.path.normpath(directory))
        if not self.contains(directory):
            raise WorkspaceEscape(str(directory))
        current = self.root
        for part in directory.relative_to(self.root).parts:
            current = current / part
            try:
                os.mkdir(current, 0o755)
            except FileExistsError:
                current = Path(os.path.realpath(current))
                if not self.contains(current):
                    raise WorkspaceEscape(str(directory)) from None
        if not current.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(directory))
