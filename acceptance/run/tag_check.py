"""The tags of the feature files and of the run's tag expression checked against the
vocabulary (acceptance/run/tags.py) before any scenario runs: a typo stops the run.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from fnmatch import fnmatchcase
from typing import Any

from behave.model import Feature
from behave.tag_expression.model import Matcher
from cucumber_tag_expressions.model import Expression, Literal

from acceptance.run.tags import is_known_tag, known_tags

# behavex adds `not @WIP and not @MANUAL` to the tags of each behave it starts.
BEHAVEX_TAGS = frozenset({"WIP", "MANUAL"})


class UnknownTagError(Exception):
    """A feature file or a tag expression uses a tag outside the vocabulary."""


def unknown_tags_in_features(features: Iterable[Feature]) -> list[str]:
    """`file:line: @tag` for each tag outside the vocabulary, where it is written."""
    return [
        f"{element.filename}:{getattr(tag, 'line', element.line)}: @{tag}"
        for feature in features
        for element in _tagged_elements(feature)
        for tag in element.tags
        if not is_known_tag(tag)
    ]


def _tagged_elements(element: Any) -> Iterator[Any]:
    """The element and what it contains as written: rules, scenarios, outlines, examples
    (not the scenarios an outline generates, which repeat its tags)."""
    yield element
    for item in (*getattr(element, "run_items", ()), *getattr(element, "examples", ())):
        yield from _tagged_elements(item)


def unknown_tags_in_expression(expression: Expression, source: str) -> list[str]:
    """`source: @tag` for each tag (or wildcard matching no tag) the expression names."""
    known = known_tags()
    return [
        f"{source}: @{name}"
        for name, wildcard in _names(expression)
        if not (
            any(fnmatchcase(tag, name) for tag in known)
            if wildcard
            else is_known_tag(name) or name in BEHAVEX_TAGS
        )
    ]


def _names(expression: Expression) -> Iterator[tuple[str, bool]]:
    """The tag names of an expression, each with whether it is a wildcard pattern."""
    if isinstance(expression, Matcher):
        yield expression.pattern, True
    elif isinstance(expression, Literal):
        yield expression.name, False
    for term in (
        *getattr(expression, "terms", ()),
        *filter(None, [getattr(expression, "term", None)]),
    ):
        yield from _names(term)


def check_tags(
    features: Iterable[Feature],
    expression: Expression,
    source: str = "the tag expression (--tags, or default_tags in behave.ini)",
) -> None:
    """Raise UnknownTagError listing every unknown tag, or return when there is none."""
    unknown = unknown_tags_in_expression(expression, source) + unknown_tags_in_features(features)
    if unknown:
        listed = "\n".join(f"  {entry}" for entry in unknown)
        raise UnknownTagError(
            f"unknown tags; a tag must be in the vocabulary of acceptance/run/tags.py:\n{listed}\n"
            f"known tags: {' '.join(f'@{tag}' for tag in known_tags())}"
        )
