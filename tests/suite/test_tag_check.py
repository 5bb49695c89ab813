"""A tag outside the vocabulary, in a feature file or in --tags, stops the run before any
scenario, naming the tag and where it is."""

from __future__ import annotations

import re

import pytest
from behave.parser import parse_feature
from behave.tag_expression import TagExpressionProtocol, make_tag_expression

from acceptance.run.tag_check import (
    UnknownTagError,
    check_tags,
    unknown_tags_in_expression,
    unknown_tags_in_features,
)
from acceptance.run.tags import TAGS, known_tags
from tests.suite.commands import run_module

FEATURE = """\
@smoke @agent-runtim
Feature: Tags everywhere

  @slwo
  Scenario: A plain scenario
    Given nothing

  @code-interpreter
  Scenario Outline: An outline
    Given <thing>

    @use.with_agentcube_release=sometimes
    Examples:
      | thing |
      | a     |
"""


@pytest.fixture(autouse=True)
def v2_expressions() -> None:
    TagExpressionProtocol.use(TagExpressionProtocol.from_name("v2"))


def expression(*texts: str):
    return make_tag_expression(list(texts))


def test_unknown_tags_in_a_feature_file_are_named_where_they_are_written() -> None:
    feature = parse_feature(FEATURE, filename="features/tags.feature")
    assert unknown_tags_in_features([feature]) == [
        "features/tags.feature:1: @agent-runtim",
        "features/tags.feature:4: @slwo",
        "features/tags.feature:12: @use.with_agentcube_release=sometimes",
    ]


def test_unknown_tags_in_an_expression_are_named_with_its_source() -> None:
    found = unknown_tags_in_expression(
        expression("@smok and not @slow", "@use.with_agentcube_release=mian"), "--tags"
    )
    assert found == ["--tags: @smok", "--tags: @use.with_agentcube_release=mian"]


def test_a_wildcard_must_match_a_known_tag() -> None:
    assert unknown_tags_in_expression(expression("@requires.*"), "--tags") == []
    assert unknown_tags_in_expression(expression("@needs.*"), "--tags") == ["--tags: @needs.*"]


def test_the_tags_behavex_adds_pass_in_expressions_only() -> None:
    assert unknown_tags_in_expression(expression("not @WIP and not @MANUAL"), "-t") == []
    feature = parse_feature("@WIP\nFeature: F\n  Scenario: S\n    Given x\n", filename="f")
    assert unknown_tags_in_features([feature]) == ["f:1: @WIP"]


def test_the_message_lists_every_unknown_tag_and_the_vocabulary() -> None:
    feature = parse_feature(FEATURE, filename="features/tags.feature")
    with pytest.raises(UnknownTagError) as error:
        check_tags([feature], expression("@smok"), "--tags")
    message = str(error.value)
    assert "--tags: @smok" in message
    assert "features/tags.feature:4: @slwo" in message
    assert all(f"@{tag}" in message for tag in TAGS)


def test_known_tags_cover_every_family() -> None:
    tags = known_tags()
    assert "smoke" in tags
    assert "use.with_agentcube_release=pre-460" in tags
    assert "requires.runtime-admin" in tags
    assert "fixture.limited-router" in tags


@pytest.mark.parametrize(
    "command",
    [("behave", "--tags=@smok", "--format=null"), ("acceptance.run.parallel_run", "--tags=@smok")],
    ids=["behave", "parallel"],
)
def test_a_typo_in_tags_stops_the_run_before_any_scenario(command: tuple[str, ...]) -> None:
    status, output = run_module(*command, timeout=60)
    assert status != 0, output
    assert "unknown tags" in output and "@smok" in output, output
    assert not re.search(r"[1-9]\d* scenarios? passed", output), output
