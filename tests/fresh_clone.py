"""What a test needs to follow a documented sequence as a newcomer would: the page's shell
block step by step, a fresh clone of this repository, and a shell in a network namespace
without network.

The clone holds the files a `git clone` of the work tree would hold once the change being
made is committed (tracked, and new files not ignored, as they are now), so that a test
sees an edit of a page before its commit. Its `.venv` stands in for pip's download: a .venv
left by an earlier checkout (hard links to this one's packages, no stamp), which the
sequence's own `./dev` must bring up to date where there is network, as on a fresh clone;
inside a namespace without network `./dev` refuses it at once.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The shell of docs/own-router.md's and docs/own-picod.md's step 2.
ENTER_WITHOUT_NETWORK = "unshare --user --map-root-user --net bash"
_VENV_MARKS = ("agentcube-acceptance.pth",)  # what ./dev writes into the site directory
_STEP = re.compile(r"^# (\d+)\. ", re.MULTILINE)


def shell_steps(page: Path, heading: str) -> dict[int, str]:
    """The first shell block under the page's `## heading`, by its `# N. ` steps."""
    section = page.read_text(encoding="utf-8").split(f"## {heading}\n", 1)[1]
    block = section.split("```sh\n", 1)[1].split("\n```", 1)[0]
    starts = [match.start() for match in _STEP.finditer(block)]
    return {
        int(_STEP.match(block, start).group(1)): block[start:end].strip() + "\n"
        for start, end in zip(starts, [*starts[1:], len(block)], strict=True)
    }


def entering(step: str, inside: list[str], end: str = "END_OF_THE_PASTE") -> str:
    """The step that enters the namespace, the lines after its `unshare` and then `inside`
    fed to that shell as a paste would be."""
    lines = step.splitlines()
    enter = lines.index(ENTER_WITHOUT_NETWORK)
    return "\n".join(
        [*lines[:enter], f"{lines[enter]} <<'{end}'", "set -eu", *lines[enter + 1 :], *inside, end]
    )


def fresh_clone(destination: Path) -> Path:
    """`destination` made a clone of the work tree, with an out-of-date .venv."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the work tree is not cloned
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name, follow_symlinks=False)
    _stale_venv(destination / ".venv")
    return destination


def _stale_venv(venv: Path) -> None:
    """This interpreter's .venv, linked file by file, without what ./dev writes (its stamp,
    the path file), so that nothing the clone's ./dev writes reaches the original."""
    source = Path(sys.prefix)
    if source == Path(sys.base_prefix):
        raise RuntimeError("the tests run outside a virtual environment: no .venv to clone")
    copy = ["cp", "-a", "--link", str(source), str(venv)]
    if subprocess.run(copy, capture_output=True).returncode != 0:  # another file system
        subprocess.run(["cp", "-a", str(source), str(venv)], check=True)
    (venv / ".requirements.sha256").unlink(missing_ok=True)
    for mark in _VENV_MARKS:
        for path in venv.glob(f"lib/python*/site-packages/{mark}"):
            path.unlink()


def namespaces_missing() -> str | None:
    """Why a network namespace without network cannot be made here, if it cannot."""
    for program in ("unshare", "ip"):
        if shutil.which(program) is None:
            return f"{program} is not installed (util-linux, iproute2)"
    probe = subprocess.run(
        [*ENTER_WITHOUT_NETWORK.split()[:-1], "true"], capture_output=True, text=True, timeout=10
    )
    if probe.returncode != 0:
        return f"user and network namespaces are not available here: {probe.stderr.strip()}"
    return None
