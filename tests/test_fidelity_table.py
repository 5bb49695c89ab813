"""docs/fidelity.md stays in step with the tests that pin its rows: every test a row names
exists, and every test whose docstring cites upstream ("Upstream: pkg/...") is named by a
row, so no comparison with upstream goes undocumented."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIDELITY = ROOT / "docs" / "fidelity.md"
_PINNED = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")
_CITES_UPSTREAM = re.compile(r"\bUpstream: pkg/")


def pinned_tests() -> set[tuple[str, str]]:
    return set(_PINNED.findall(FIDELITY.read_text(encoding="utf-8")))


def _test_functions(path: Path) -> dict[str, str]:
    """The test functions of a file, with their docstrings."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.name: ast.get_docstring(node) or ""
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test_")
    }


def test_every_test_the_table_names_exists() -> None:
    pinned = pinned_tests()
    assert pinned, "docs/fidelity.md names no test"
    missing = sorted(
        f"{path}::{name}"
        for path, name in pinned
        if not (ROOT / path).is_file() or name not in _test_functions(ROOT / path)
    )
    assert not missing, "docs/fidelity.md names tests that do not exist:\n" + "\n".join(missing)


def test_every_test_that_cites_upstream_has_its_row() -> None:
    pinned = pinned_tests()
    unlisted = sorted(
        f"{path.relative_to(ROOT)}::{name}"
        for path in sorted((ROOT / "tests").rglob("test_*.py"))
        for name, docstring in _test_functions(path).items()
        if _CITES_UPSTREAM.search(docstring) and (str(path.relative_to(ROOT)), name) not in pinned
    )
    assert not unlisted, (
        "these tests cite upstream but docs/fidelity.md has no row for them:\n"
        + "\n".join(unlisted)
    )
