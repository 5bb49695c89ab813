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


# A newcomer's path through the README: what is needed, the two commands, a target of one's
# own, where things live, what is covered, and where to read on.
README_SECTIONS = (
    "Prerequisites",
    "Two commands",
    "Against your own deployment",
    "Layout",
    "What it covers, and what it does not",
    "More",
)
COVERAGE_SECTION = "What it covers, and what it does not"
# The pages the coverage section sends a reader to for each claim it makes in brief.
COVERAGE_PAGES = (
    "docs/scenarios.md",
    "docs/one-machine-cluster.md",
    "docs/own-router.md",
    "docs/fidelity.md",
    "docs/not-covered.md",
)


def readme_section(title: str) -> str:
    """The README's text under `## title`, up to the next heading of its level."""
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end >= 0 else None]


def test_the_readme_leads_a_newcomer_through_its_sections_in_order() -> None:
    assert re.findall(r"^## (.+)$", README, re.MULTILINE) == list(README_SECTIONS)


def test_the_coverage_section_says_what_never_ran_and_links_where_each_claim_is_told() -> None:
    section = readme_section(COVERAGE_SECTION)
    assert "No real cluster has run this suite." in " ".join(section.split())
    linked = set(_LINK.findall(section))
    missing = [page for page in COVERAGE_PAGES if page not in linked]
    assert not missing, f"the coverage section links no {missing}"


def test_every_run_by_hand_the_readme_reports_says_when_or_under_which_issue() -> None:
    """A run no test can repeat is dated, or named by the issue that tells it."""
    text = " ".join(readme_section(COVERAGE_SECTION).split())
    by_hand = [sentence for sentence in re.split(r"(?<=\.) ", text) if "by hand" in sentence]
    assert by_hand, "the coverage section reports the runs made by hand"
    undated = [
        sentence
        for sentence in by_hand
        if not re.search(r"\d{4}-\d\d-\d\d|\(issue \d+|issue \d+\)", sentence)
    ]
    assert not undated, f"runs by hand with no date or issue: {undated}"


def test_the_kubernetes_page_says_what_ci_cannot_prove() -> None:
    page = doc("kubernetes.md")
    for heading in (
        "## This project's CI has no cluster",
        "## What a first real run will and will not prove",
        "## What is not claimed",
    ):
        assert heading in page, f"docs/kubernetes.md lacks {heading!r}"


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
