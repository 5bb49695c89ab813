"""localcube/README.md's module map names every module and subpackage of localcube, and
nothing that is gone."""

from __future__ import annotations

import re
from pathlib import Path

LOCALCUBE = Path(__file__).resolve().parents[2] / "localcube"


def test_the_module_map_names_every_module_and_subpackage_and_nothing_else() -> None:
    readme = (LOCALCUBE / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Module map", 1)[1].split("\n## ", 1)[0]
    named = {
        name
        for first_cell in re.findall(r"^\| ([^|]+) \|", section, re.MULTILINE)
        for name in re.findall(r"`([\w./]+)`", first_cell)
    }
    present = {path.name for path in LOCALCUBE.glob("*.py") if path.name != "__init__.py"} | {
        f"{path.parent.name}/" for path in LOCALCUBE.glob("*/__init__.py")
    }
    assert named == present, (
        f"module map of localcube/README.md: missing {sorted(present - named)}, "
        f"naming what is gone {sorted(named - present)}"
    )
