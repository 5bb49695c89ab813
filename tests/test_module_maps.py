"""Each package's README module map names every module and subpackage of that package, and
nothing that is gone."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("package", ["localcube", "onemachine"])
def test_the_module_map_names_every_module_and_subpackage_and_nothing_else(package: str) -> None:
    directory = ROOT / package
    readme = (directory / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Module map", 1)[1].split("\n## ", 1)[0]
    named = {
        name
        for first_cell in re.findall(r"^\| ([^|]+) \|", section, re.MULTILINE)
        for name in re.findall(r"`([\w./]+)`", first_cell)
    }
    present = {path.name for path in directory.glob("*.py") if path.name != "__init__.py"} | {
        f"{path.parent.name}/" for path in directory.glob("*/__init__.py")
    }
    assert named == present, (
        f"module map of {package}/README.md: missing {sorted(present - named)}, "
        f"naming what is gone {sorted(named - present)}"
    )
