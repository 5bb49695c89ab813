"""The README stays in step with the code it documents."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from acceptance.platforms.kubernetes.settings import cluster_default_rows, settings_rows
from acceptance.run.tags import TAGS

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_configuration_table_is_the_generated_one() -> None:
    table = subprocess.run(
        [sys.executable, "-m", "acceptance.core.settings"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert table in README, "regenerate the README's table with: python -m acceptance.core.settings"


def test_the_cluster_section_lists_every_setting_and_cluster_default() -> None:
    missing = [row for row in settings_rows() + cluster_default_rows() if row not in README]
    assert not missing, "the README lacks these rows:\n" + "\n".join(missing)


def test_the_readme_says_plainly_what_was_never_run_here() -> None:
    assert "### This project's CI has no cluster" in README
    assert "### What is not claimed" in README
    assert "## What is not covered, and what was never run here" in README


def test_every_tag_is_explained() -> None:
    missing = [tag for tag in TAGS if f"| `@{tag}` |" not in README]
    assert not missing, f"the README's tag table lacks {missing}"


def test_the_two_commands_are_the_ones_ci_runs() -> None:
    assert "./dev suite" in README
    assert "./dev test" in README
    assert "exec ./dev test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
