"""`./dev`, as a newcomer meets it: a usage text, the scenarios listed with their tags, a
first install that says what it does and shows pip's own progress, and in a shell without
network a .venv to make refused at once, in one line, until `./dev prepare` made it."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.fresh_clone import ENTER_WITHOUT_NETWORK, fresh_clone, namespaces_missing

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
    assert any(line.endswith("  @agent-runtime @id.first-call @smoke") for line in lines)
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


@pytest.mark.slow
def test_without_network_a_stale_or_missing_venv_stops_at_once_and_prepare_fixes_it(
    tmp_path: Path,
) -> None:
    missing = namespaces_missing()
    if missing:
        pytest.skip(missing)
    clone = fresh_clone(tmp_path / "clone")
    without_network = [*ENTER_WITHOUT_NETWORK.split()[:-1], "./dev", "list", "--tags=@smoke"]
    refused = (
        "dev: .venv is missing or out of date and this shell has no network (a namespace "
        "without one?): run ./dev prepare where there is network first"
    )
    for state in ("out of date", "missing"):
        if state == "missing":
            shutil.rmtree(clone / ".venv")
        started = time.monotonic()
        result = subprocess.run(without_network, cwd=clone, capture_output=True, text=True)
        took = time.monotonic() - started
        assert (result.returncode, result.stderr.splitlines()) == (1, [refused]), result.stderr
        assert took < 5, f"with .venv {state}, ./dev took {took:.1f} s to refuse"
    assert not (clone / ".venv").exists(), "./dev made a .venv it could not fill"
    shutil.rmtree(clone)
    clone = fresh_clone(tmp_path / "clone")
    prepared = dev("prepare", cwd=clone)
    assert prepared.returncode == 0 and "dev: .venv is ready" in prepared.stderr, prepared.stderr
    listed = subprocess.run(without_network, cwd=clone, capture_output=True, text=True)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[-1].startswith("7 of "), listed.stdout
