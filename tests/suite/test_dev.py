"""`./dev`, as a newcomer meets it: a usage text, the scenarios listed with their tags, and
a first install that says what it does and shows pip's own progress."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def dev(*arguments: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(cwd / "dev"), *arguments], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_dev_alone_prints_its_commands_and_succeeds() -> None:
    result = dev()
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: ./dev COMMAND [arguments...]\n")
    assert "#" not in result.stdout and "set -e" not in result.stdout
    assert "  list [behave args...]" in result.stdout
    assert "  prepare " in result.stdout


def test_an_unknown_command_is_named_before_the_usage_and_fails() -> None:
    result = dev("bogus")
    assert result.returncode == 2
    first, second = result.stderr.splitlines()[:2]
    assert first == "dev: unknown command 'bogus'", result.stderr
    assert second == "usage: ./dev COMMAND [arguments...]", result.stderr


def test_dev_list_shows_the_selected_scenarios_with_their_tags() -> None:
    result = dev("list", "--tags=@smoke")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "features/agent_invocation.feature: Invoking an agent through the Router" in lines
    assert any(line.endswith("  @agent-runtime @smoke") for line in lines)
    assert lines[-1].startswith("7 of ") and lines[-1].endswith("(tags: (@smoke))")


def test_dev_list_keeps_to_the_scenario_a_path_names_by_its_line() -> None:
    result = dev("list", "features/code_execution.feature:26")
    assert result.returncode == 0, result.stderr
    listed = [line for line in result.stdout.splitlines() if line.startswith("  :")]
    assert len(listed) == 1 and listed[0].startswith("  :26 "), result.stdout


@pytest.mark.slow
def test_the_first_install_says_so_and_shows_pip_at_work(tmp_path: Path) -> None:
    shutil.copy(ROOT / "dev", tmp_path / "dev")
    (tmp_path / "requirements.txt").write_text("")
    (tmp_path / "requirements-dev.txt").write_text("pip\n")  # in every new venv: no download
    (tmp_path / "constraints.txt").write_text("")
    result = dev("list", cwd=tmp_path)
    announced = result.stderr.index("dev: installing the pinned requirements into .venv")
    assert result.stderr.index("Requirement already satisfied: pip") > announced, result.stderr
    # The .venv's own commands (behave, pytest) find the support package from anywhere.
    site = subprocess.run(
        [str(tmp_path / ".venv" / "bin" / "python"), "-c", "import sys; print(sys.path)"],
        cwd="/",
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert str(tmp_path) in site, site
