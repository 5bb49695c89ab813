"""The README and docs/ stay in step with the code they document, and the README fits a
newcomer's first screens."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from acceptance.platforms.registry import Adapter, adapters
from docgen.configuration_table import adapter_default_rows, adapter_settings_rows
from docgen.tag_table import tag_table

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = ROOT / "docs"
_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def doc(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def test_the_readme_fits_a_newcomers_first_screens() -> None:
    assert len(README.splitlines()) <= 150


def generated_table() -> str:
    """What `python -m docgen.configuration_table` prints, the command docs name."""
    return subprocess.run(
        [sys.executable, "-m", "docgen.configuration_table"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def test_the_configuration_table_is_the_generated_one() -> None:
    assert generated_table() in doc("configuration.md"), (
        "regenerate the table in docs/configuration.md with: python -m docgen.configuration_table"
    )


def test_the_readme_shows_a_few_settings_each_as_the_generated_table_has_it() -> None:
    generated = set(generated_table().splitlines())
    settings = [
        line for line in README.splitlines() if line.startswith("| `") and "| `AGENTCUBE_" in line
    ]
    assert 0 < len(settings) <= 6, "the README shows the settings most runs need, no more"
    stale = [row for row in settings if row not in generated]
    assert not stale, "copy these rows from python -m docgen.configuration_table:\n" + (
        "\n".join(stale)
    )


@pytest.mark.parametrize("adapter", adapters().values(), ids=lambda adapter: adapter.name)
def test_each_platforms_page_lists_its_settings_and_defaults(adapter: Adapter) -> None:
    rows = adapter_settings_rows(adapter) + adapter_default_rows(adapter)
    assert adapter.docs or not rows, f"the {adapter.name} adapter has settings but no page"
    page = (ROOT / adapter.docs).read_text(encoding="utf-8") if rows else ""
    missing = [row for row in rows if row not in page]
    assert not missing, f"{adapter.docs} lacks these rows:\n" + "\n".join(missing)


def test_the_docs_say_plainly_what_was_never_run_here() -> None:
    readme, own_router = (" ".join(text.split()) for text in (README, doc("own-router.md")))
    assert "No real cluster has run this suite." in readme
    # The one run on a real control plane, by hand and with a kubelet stand-in (issue 22).
    assert "by hand and outside this repository (issue 22)" in readme
    assert "before that issue's fixes" in readme
    # The run behind upstream's Router with OIDC, as docs/own-router.md tells it (issue 34).
    assert "as written, issue 34): 78 passed, 6 failed, 7 skipped" in readme
    assert "each time **78 passed, 6 failed, 7 skipped**" in own_router
    # The one run of the suite on the one-machine cluster with its Router checking tokens.
    assert "ran the whole suite by hand: 77 passed, 7 failed" in readme
    page = doc("kubernetes.md")
    assert "## This project's CI has no cluster" in page
    assert "## What a first real run will and will not prove" in page
    assert "## What is not claimed" in page


def test_the_tag_table_is_the_generated_one() -> None:
    assert tag_table() in doc("configuration.md"), (
        "regenerate the tag table in docs/configuration.md with: python -m docgen.tag_table"
    )


def test_the_two_commands_are_the_ones_ci_runs() -> None:
    assert "./dev suite" in README
    assert "./dev test" in README
    assert "exec ./dev test --all" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "page",
    [
        ROOT / "README.md",
        ROOT / "localcube" / "README.md",
        ROOT / "onemachine" / "README.md",
        *sorted(DOCS.glob("*.md")),
    ],
    ids=lambda path: str(path.relative_to(ROOT)),
)
def test_every_relative_link_leads_somewhere(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    links = [link for link in _LINK.findall(text) if "://" not in link]
    broken = [link for link in links if not (page.parent / link).exists()]
    assert not broken, f"{page.relative_to(ROOT)} links to what does not exist: {broken}"
