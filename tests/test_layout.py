"""The house's layout, read from the code's own imports (Python's ast): the suite stands on
the contract's neutral package, not on localcube; localcube and the one-machine cluster
(onemachine) share only that package, the shared plumbing (plumbing) and the test subjects'
OIDC issuer (oidc_issuer), which stay as neutral; its wings import only from their own or a
lower one (README's layout: run, domain, platforms, core); and no modules import each other
in a circle."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The suite's wings, from the top down, as README.md's layout table lists them.
WINGS = tuple(
    re.findall(r"^\| `acceptance/(\w+)/` \|", (ROOT / "README.md").read_text(), re.MULTILINE)
)
# The one module that starts localcube, and so imports it.
STARTS_LOCALCUBE = "acceptance.platforms.own_localcube"
PACKAGES = (
    "acceptance",
    "agentcube_contract",
    "docgen",
    "localcube",
    "onemachine",
    "oidc_issuer",
    "plumbing",
)


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking(node: ast.AST) -> bool:
    """An `if TYPE_CHECKING:` block, whose imports are for type checkers only."""
    return isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING")


def _nodes(node: ast.AST) -> Iterator[ast.AST]:
    yield node
    for child in ast.iter_child_nodes(node):
        if not _type_checking(child):
            yield from _nodes(child)


def imported_modules(path: Path) -> Iterator[str]:
    """Every module a file imports when it runs, wherever the import stands (a function's
    own too; not those for type checkers only)."""
    for node in _nodes(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def import_graph(packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    """The modules of these packages, each with the modules of the packages it imports."""
    files = {module_name(path): path for name in packages for path in (ROOT / name).rglob("*.py")}
    return {
        module: {name for name in imported_modules(path) if name in files and name != module}
        for module, path in files.items()
    }


def wing_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "acceptance" and len(parts) > 1 else None


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Each import from a lower wing to a higher one, as `importer -> imported`."""
    found = []
    for module, imported in sorted(graph.items()):
        wing = wing_of(module)
        for name in sorted(imported):
            other = wing_of(name)
            if wing in WINGS and other in WINGS and WINGS.index(other) < WINGS.index(wing):
                found.append(f"{module} ({wing}) -> {name} ({other})")
    return found


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    lowest: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = lowest[module] = len(index)
        stack.append(module)
        for name in sorted(graph.get(module, ())):
            if name not in index:
                visit(name)
                lowest[module] = min(lowest[module], lowest[name])
            elif name in stack:
                lowest[module] = min(lowest[module], index[name])
        if lowest[module] == index[module]:
            group = []
            while True:
                name = stack.pop()
                group.append(name)
                if name == module:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def imports_of(package: str, prefix: str) -> list[str]:
    """The modules of `package` that import `prefix` (or a module inside it)."""
    return sorted(
        module_name(path)
        for path in (ROOT / package).rglob("*.py")
        if any(name.split(".")[0] == prefix for name in imported_modules(path))
    )


def test_only_the_module_that_starts_localcube_imports_it() -> None:
    importers = imports_of("acceptance", "localcube")
    assert importers == [STARTS_LOCALCUBE], (
        f"only {STARTS_LOCALCUBE} may import localcube (the suite must run without it); "
        f"importers: {importers}"
    )


@pytest.mark.parametrize(
    ("package", "other"), [("localcube", "onemachine"), ("onemachine", "localcube")]
)
def test_localcube_and_the_one_machine_cluster_import_nothing_of_each_other(
    package: str, other: str
) -> None:
    importers = imports_of(package, other)
    assert importers == [], f"{package} must not import {other}; importers: {importers}"


@pytest.mark.parametrize("package", ["acceptance", "agentcube_contract", "localcube", "onemachine"])
def test_no_product_imports_the_document_generators(package: str) -> None:
    importers = imports_of(package, "docgen")
    assert importers == [], f"docgen writes documents only; {package} imports it: {importers}"


def test_the_one_machine_cluster_is_not_the_suite_s_either() -> None:
    importers = imports_of("acceptance", "onemachine")
    assert importers == [], f"the suite must not import onemachine; importers: {importers}"


@pytest.mark.parametrize("neutral", ["agentcube_contract", "plumbing"])
@pytest.mark.parametrize("side", ["acceptance", "localcube", "onemachine"])
def test_the_shared_packages_import_no_side(neutral: str, side: str) -> None:
    importers = imports_of(neutral, side)
    assert importers == [], f"{neutral} must stay neutral; importing {side}: {importers}"


@pytest.mark.parametrize("side", ["acceptance", "localcube", "onemachine"])
def test_the_oidc_issuer_imports_none_of_those_who_start_it(side: str) -> None:
    importers = imports_of("oidc_issuer", side)
    assert importers == [], f"oidc_issuer must stay neutral; importing {side}: {importers}"


def test_the_readme_names_the_four_wings_from_the_top_down() -> None:
    assert WINGS == ("run", "domain", "platforms", "core"), WINGS


def test_no_wing_imports_a_higher_one() -> None:
    upward = upward_imports(import_graph())
    assert upward == [], "imports from a lower wing to a higher one:\n" + "\n".join(upward)


def test_no_modules_import_each_other_in_a_circle() -> None:
    found = circles(import_graph())
    assert found == [], f"import circles: {found}"


def test_the_checks_catch_an_upward_import_and_a_circle() -> None:
    """They can fail: a core module importing run, and two modules importing each other."""
    graph = {
        "acceptance.core.a": {"acceptance.run.b"},
        "acceptance.run.b": {"acceptance.core.a"},
        "acceptance.core.c": set(),
    }
    assert upward_imports(graph) == ["acceptance.core.a (core) -> acceptance.run.b (run)"]
    assert circles(graph) == [["acceptance.core.a", "acceptance.run.b"]]


def test_an_import_for_type_checkers_only_is_no_arrow(tmp_path: Path) -> None:
    module = tmp_path / "typed.py"
    module.write_text(
        "from typing import TYPE_CHECKING\nimport os\n"
        "if TYPE_CHECKING:\n    from acceptance.run import suite\n"
        "def later():\n    import json\n"
    )
    assert set(imported_modules(module)) == {"typing", "typing.TYPE_CHECKING", "os", "json"}
