"""The `python3` a sandbox finds first on its PATH: a bare Python of localcube's own version.

A fixture's container runs `python3` from a slim image: the standard library and nothing
else. Locally, `python3` on PATH may be a version manager's shim (pyenv's costs a shell
script and a second Python start, 100 ms or more per call) or an interpreter whose site
directory loads packages. A virtual environment without packages, made once per state
directory from the interpreter localcube runs on, is the same bare Python and starts at once.
"""

from __future__ import annotations

import venv
from pathlib import Path


def bare_python_bin(directory: Path) -> Path:
    """The `bin` directory of a package-free virtual environment at `directory`, made
    unless it is there already (a restarted localcube reuses its state directory)."""
    if not (directory / "bin" / "python3").exists():
        venv.EnvBuilder(symlinks=True, with_pip=False, clear=True).create(directory)
    return directory / "bin"
