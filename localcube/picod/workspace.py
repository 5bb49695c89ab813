"""The workspace jail of the PicoD-compatible daemon: every client path lands inside one root.

Where upstream PicoD (pkg/picod/files.go, sanitizePath and mkdirSafe) refuses a path, the
refusal is worded as upstream words it. Upstream resolves symlinks only when the whole path
already exists, so with `link -> /elsewhere` inside the workspace, writing `link/newfile`
passes its check and creates `/elsewhere/newfile`. Here the deepest existing ancestor (found
with lstat, so a dangling symlink counts as existing) is resolved too and must stay inside, and
the path handed back contains no symlink at all.
"""

import errno
import os
import stat
from pathlib import Path

from localcube.picod.gocompat import go_quote, path_error

_MAX_LINKS = 255  # filepath.EvalSymlinks gives up after this many


class WorkspaceEscape(ValueError):
    """A client path that resolves, lexically or through a symlink, outside the workspace."""


def _jail_refusal(path: str) -> WorkspaceEscape:
    """localcube's refusal where upstream has none (a symlink on the way to a new path)."""
    return WorkspaceEscape(f"access denied: path '{path}' escapes workspace jail")


def _deepest_existing(path: Path) -> tuple[Path, list[str]]:
    """The deepest ancestor of `path` (or `path` itself) that exists, even as a dangling
    symlink, and the names below it that do not, outermost first."""
    existing, missing = path, []
    while not os.path.lexists(existing):
        missing.append(existing.name)
        existing = existing.parent
    return existing, missing[::-1]


def go_eval_symlinks(path: str) -> str:
    """Go's filepath.EvalSymlinks of an absolute path; OSError carries Go's error text."""
    pending = [part for part in path.split("/") if part]
    dest, links = "/", 0
    while pending:
        part = pending.pop(0)
        if part in (".", ".."):
            dest = os.path.dirname(dest) if part == ".." else dest
            continue
        dest = os.path.join(dest, part)
        try:
            info = os.lstat(dest)
        except OSError as error:
            raise OSError(error.errno, path_error("lstat", dest, error)) from None
        if not stat.S_ISLNK(info.st_mode):
            if pending and not stat.S_ISDIR(info.st_mode):
                raise OSError(errno.ENOTDIR, "not a directory")
            continue
        links += 1
        if links > _MAX_LINKS:
            raise OSError(errno.ELOOP, "EvalSymlinks: too many links")
        target = os.readlink(dest)
        pending[:0] = [part for part in target.split("/") if part]
        dest = "/" if target.startswith("/") else os.path.dirname(dest)
    return dest


class Workspace:
    """A directory that client paths are confined to (created if missing)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        os.makedirs(root, 0o755, exist_ok=True)
        self.root = Path(os.path.realpath(root))

    def contains(self, path: Path) -> bool:
        """Whether the absolute, normalised `path` is the root or below it (lexically)."""
        return path == self.root or path.is_relative_to(self.root)

    def candidate(self, path: str) -> Path:
        """The lexical place of a client path, refused as upstream does when it climbs out.

        An absolute path is taken relative to the root ("/a/b" -> root/a/b), as upstream does.
        Raises WorkspaceEscape for `..` leading outside, ValueError for a NUL byte.
        """
        if "\0" in path:
            raise ValueError(f"invalid path {path!r}: contains a NUL byte")
        relative = os.path.normpath(path).lstrip("/")
        candidate = Path(os.path.normpath(os.path.join(self.root, relative)))
        if not self.contains(candidate):
            traversal = os.path.relpath(candidate, self.root)
            raise WorkspaceEscape(
                f"access denied: path '{path}' escapes workspace jail "
                f"(relative path traversal: {traversal})"
            )
        return candidate

    def resolve(self, path: str) -> Path:
        """Map a client path to an absolute path inside the workspace, symlinks resolved.

        A path that exists is resolved as upstream's sanitizePath does, with its refusal.
        For one that does not exist yet, its deepest existing ancestor is resolved and must
        be inside (upstream does not check: see the module's docstring); the missing
        components are appended as given. Raises WorkspaceEscape or ValueError.
        """
        candidate = self.candidate(path)
        try:
            real = Path(os.path.realpath(candidate, strict=True))
        except OSError:
            return self._resolve_new(path, candidate)
        if not self.contains(real):
            raise WorkspaceEscape(
                f"access denied: resolved path '{real}' (from '{path}') escapes workspace "
                "jail via symlink"
            )
        return real

    def resolve_to_read(self, path: str) -> Path | None:
        """resolve() for a download or a listing, or None where nothing is found at the path
        even through symlinks (a missing file, a dangling link, a missing name behind a link
        outside): upstream's sanitizePath hands such a path back as given and its stat
        finds nothing, a 404 (pkg/picod/files.go:498-501). Nothing outside is read."""
        candidate = self.candidate(path)
        try:
            candidate.stat()
        except FileNotFoundError:
            return None
        except OSError:  # not a directory, a loop, ...: resolve() and the stat tell
            pass
        return self.resolve(path)

    def upstream_name(self, path: str) -> Path:
        """The path upstream's sanitizePath returns, which its upload answer names: an
        existing one resolved, a new one lexically, symlinks on the way kept as given
        (pkg/picod/files.go:488-501). For naming only: resolve() says where to write."""
        candidate = self.candidate(path)
        return Path(os.path.realpath(candidate)) if candidate.exists() else candidate

    def _resolve_new(self, path: str, candidate: Path) -> Path:
        existing, missing = _deepest_existing(candidate)
        real = Path(os.path.realpath(existing))
        if not self.contains(real):
            raise _jail_refusal(path)
        return real.joinpath(*missing)

    def check_new_directory(self, directory: Path) -> None:
        """Upstream's mkdirSafe check before it creates a working directory, with its texts.

        `directory` is a candidate() that does not exist: its deepest existing ancestor must
        resolve, and inside the root. Raises WorkspaceEscape.
        """
        existing, _ = _deepest_existing(directory)
        try:
            real = Path(go_eval_symlinks(str(existing)))
        except OSError as error:
            raise WorkspaceEscape(
                f"failed to resolve path {go_quote(str(existing))}: {error.strerror}"
            ) from None
        if not self.contains(real):
            raise WorkspaceEscape(
                f"access denied: path {go_quote(str(directory))} escapes workspace jail via symlink"
            )

    def mkdirs(self, directory: Path) -> None:
        """Create `directory` (a path inside the root, e.g. from resolve()) and its parents.

        Like os.makedirs(directory, 0o755, exist_ok=True), but each component that already
        exists is resolved and must still be inside the root, so a symlink planted after
        resolve() cannot redirect the creation outside. Raises NotADirectoryError when the
        path exists and is not a directory.
        """
        directory = Path(os.path.normpath(directory))
        if not self.contains(directory):
            raise _jail_refusal(str(directory))
        current = self.root
        for part in directory.relative_to(self.root).parts:
            current = current / part
            try:
                os.mkdir(current, 0o755)
            except FileExistsError:
                current = Path(os.path.realpath(current))
                if not self.contains(current):
                    raise _jail_refusal(str(directory)) from None
        if not current.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(directory))
