"""The behave fixtures of acceptance/run/fixtures.py: each is asked for by a scenario, and
the set-up it gives is what that scenario's steps use, or they fail naming the tag."""

from __future__ import annotations

from pathlib import Path

import pytest
from behave.parser import parse_file

from acceptance.domain.resilience import Resilience
from acceptance.run.fixtures import FIXTURES
from tests.suite.test_world import scenario  # noqa: F401 (the World harness, a fixture)

ROOT = Path(__file__).resolve().parents[2]


def test_every_fixture_is_asked_for_by_a_scenario() -> None:
    asked = {
        tag
        for path in (ROOT / "features").glob("*.feature")
        for each in parse_file(str(path)).scenarios
        for tag in each.effective_tags
    }
    assert [tag for tag in FIXTURES if tag not in asked] == []


def test_without_its_fixture_the_limited_router_step_fails_naming_the_tag(
    shared_cube,
    scenario,  # noqa: F811
) -> None:
    run = scenario(shared_cube.url)
    with pytest.raises(AssertionError, match=r"tag it @fixture\.limited-router"):
        run.world.part(Resilience).open_session_on_limited_router()


def test_a_declared_limit_is_the_targets_router(shared_cube, scenario) -> None:  # noqa: F811
    run = scenario(shared_cube.url, max_concurrent_requests="1000")
    resilience = run.world.part(Resilience)
    with resilience.limited_router():
        resilience.open_session_on_limited_router()
    assert run.world.session.runtime.name == "echo-agent"
