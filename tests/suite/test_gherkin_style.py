"""The features read as a product specification a reviewer reads without a developer: no
HTTP statuses, JSON, byte sizes, encodings, raw error strings, setting names or PR numbers
(those belong in the step layer), no program source in steps, and no Then before a When."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

import pytest
from behave.model import Feature, ScenarioOutline
from behave.parser import parse_file

from acceptance.core.settings import SETTINGS
from acceptance.platforms.kubernetes.settings import KUBERNETES_SETTINGS

ROOT = Path(__file__).resolve().parents[2]
FEATURES = sorted((ROOT / "features").glob("*.feature"))
# What belongs in the step layer, wherever it stands in a feature file.
IMPLEMENTATION_WORDS = {
    "an HTTP status": re.compile(r"\b[1-5]\d\d\b(?! ?(?:sessions|callers|calls))"),
    "JSON": re.compile(r"\{\s*\"|\"\w+\"\s*:"),
    "a byte size": re.compile(r"\b\d+ ?(?:[KMG]i?B|bytes)\b"),
    "an encoding": re.compile(r"\bbase64\b", re.IGNORECASE),
    "a PR number": re.compile(r"\bPR ?#\d+"),
    "program source": re.compile(r"print\(|import |os\._exit|sh -c|python3 "),
}
SETTING_NAMES = sorted(s.name for s in (*SETTINGS, *KUBERNETES_SETTINGS) if "_" in s.name)


def text_of(path: Path) -> str:
    """The feature file without its tag lines (tags are the suite's own vocabulary)."""
    return "\n".join(
        line
        for line in path.read_text(encoding="utf-8").splitlines()
        if not line.strip().startswith("@")
    )


@pytest.mark.parametrize("path", FEATURES, ids=lambda path: path.name)
def test_no_implementation_detail_in_a_feature(path: Path) -> None:
    text = text_of(path)
    found = {what: pattern.findall(text) for what, pattern in IMPLEMENTATION_WORDS.items()}
    found["a setting name"] = [name for name in SETTING_NAMES if name in text]
    found = {what: hits for what, hits in found.items() if hits}
    assert not found, f"{path.name} names what belongs in the step layer: {found}"


@pytest.mark.parametrize("path", FEATURES, ids=lambda path: path.name)
def test_no_then_before_a_when(path: Path) -> None:
    feature = parse_file(str(path))
    for scenario in feature.walk_scenarios(with_outlines=True):
        kinds = [step.step_type for step in scenario.steps]
        if "then" in kinds:
            assert "when" in kinds[: kinds.index("then")], (
                f"{path.name}: {scenario.name!r} checks something before it does anything"
            )


# What a title (a feature's, a scenario's, an outline row's as reports show it) must not
# carry: a placeholder left as written, or a field of the API (camelCase, snake_case, `ttl`).
TITLE_WORDS = {
    "a placeholder": re.compile(r"\{[^}]*\}|<[^>]*>"),
    "a field name": re.compile(r"\b[a-z]+[A-Z]\w*\b|\b[a-z]+_[a-z_]+\b|\bttl\b"),
}


def as_run(path: Path) -> Feature:
    """The feature as behave runs it: its outlines' rows named as behave.ini says."""
    ini = configparser.ConfigParser(interpolation=None)
    ini.read(ROOT / "behave.ini")
    feature = parse_file(str(path))
    for outline in feature.scenarios:
        if isinstance(outline, ScenarioOutline):
            outline.annotation_schema = ini["behave"]["scenario_outline_annotation_schema"]
    return feature


@pytest.mark.parametrize("path", FEATURES, ids=lambda path: path.name)
def test_titles_carry_no_placeholder_or_field_name(path: Path) -> None:
    feature = as_run(path)
    titles = [feature.name, *(scenario.name for scenario in feature.walk_scenarios())]
    found = {
        what: [title for title in titles if pattern.search(title)]
        for what, pattern in TITLE_WORDS.items()
    }
    found = {what: hits for what, hits in found.items() if hits}
    assert not found, f"{path.name}: titles a product reviewer cannot read as written: {found}"


@pytest.mark.parametrize("path", FEATURES, ids=lambda path: path.name)
def test_each_row_of_an_outline_has_a_title_of_its_own(path: Path) -> None:
    """Reports name an outline's row by its title alone (behave.ini), so the title must
    name what the row varies."""
    outlines = [each for each in as_run(path).scenarios if isinstance(each, ScenarioOutline)]
    for outline in outlines:
        names = [scenario.name for scenario in outline.scenarios]
        assert len(set(names)) == len(names), f"{path.name}: rows share a title: {names}"
