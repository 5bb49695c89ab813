"""The Python e2e's virtual environment, as run_e2e.sh makes it (run_e2e.sh:584-598): made
when missing, then the checkout's SDK and integrations installed into it, editable. It is
kept between runs (run_e2e.sh removes its own), so a second run only checks them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import TextIO

from onemachine.e2e.checkout import PYTHON_PACKAGES, Checkout


class VenvError(Exception):
    """The environment could not be made or filled; the message ends with pip's own words."""


def python_of(venv: Path) -> Path:
    return venv / "bin" / "python"


def prepare(venv: Path, checkout: Checkout, log: Path) -> None:
    """`venv` made when missing and filled with the checkout's packages; output to `log`."""
    with log.open("w", encoding="utf-8") as output:
        if not python_of(venv).exists():
            base = shutil.which("python3")
            if base is None:
                raise VenvError("no python3 on PATH to make the e2e virtual environment with")
            _run([base, "-m", "venv", str(venv)], checkout.root, output, log)
        editable = [argument for package in PYTHON_PACKAGES for argument in ("-e", package)]
        _run(
            [
                str(python_of(venv)),
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                *editable,
            ],
            checkout.root,
            output,
            log,
        )


def _run(command: list[str], cwd: Path, output: TextIO, log: Path) -> None:
    output.write(f"$ {' '.join(command)}\n")
    output.flush()
    code = subprocess.run(command, cwd=cwd, stdout=output, stderr=subprocess.STDOUT).returncode
    if code != 0:
        tail = "\n".join(log.read_text(encoding="utf-8").splitlines()[-15:])
        raise VenvError(f"{' '.join(command[:4])} ... exited {code} (log: {log}):\n{tail}")
