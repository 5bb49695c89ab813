"""docs/own-picod.md's sequence in a namespace without network, run as the page gives it on
a fresh clone (tests/fresh_clone.py: its .venv out of date, which step 2 must bring up to
date before the namespace). One step needs upstream code and is replaced in plain sight:
step 1 (building PicoD) sets `PICOD` to localcube's own daemon behind a wrapper that records
each start. Step 3 runs as written, with the `@smoke` scenarios only."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.fresh_clone import entering, fresh_clone, namespaces_missing, shell_steps
from tests.localcube.picod_process import WRAPPER

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "own-picod.md"
HEADING = "The whole path, in a namespace without network"
BUILD, NAMESPACE, SUITE = 1, 2, 3


def test_the_page_runs_the_suite_with_your_picod_inside_the_namespace(tmp_path: Path) -> None:
    missing = namespaces_missing()
    if missing:
        pytest.skip(missing)
    steps = shell_steps(DOC, HEADING)
    assert sorted(steps) == [BUILD, NAMESPACE, SUITE], f"the page's steps are {sorted(steps)}"
    assert "\n./dev prepare\n" in steps[NAMESPACE], "the .venv is made while there is network"
    clone, work = fresh_clone(tmp_path / "clone"), tmp_path / "work"
    records = work / "records"
    records.mkdir(parents=True)
    picod = work / "picod"
    python = clone / ".venv" / "bin" / "python"
    picod.write_text("#!/bin/sh\n" + WRAPPER.format(records=records, root=clone, python=python))
    picod.chmod(0o755)
    look = f'ip -o link > "$WORK/links"\n{steps[SUITE].rstrip()} --tags=@smoke\n'
    script = "\n".join(
        ["set -eu", f"export WORK={work} PICOD={picod}", entering(steps[NAMESPACE], [look])]
    )
    run = subprocess.run(
        ["bash", "-c", script], cwd=clone, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, f"the sequence failed:\n{run.stdout[-4000:]}\n{run.stderr[-3000:]}"
    assert re.search(r"Run summary: \d+ scenarios: \d+ passed, 0 failed", run.stderr), run.stderr
    links = (work / "links").read_text().splitlines()
    assert [line.split(":")[1].strip() for line in links] == ["lo"], f"not private: {links}"
    started = list(records.iterdir())
    assert started, "the smoke run's code interpreter ran the PICOD of step 1"
    assert all(record.read_text().endswith("key=given\n") for record in started)
