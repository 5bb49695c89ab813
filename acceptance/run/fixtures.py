"""behave fixtures: set-up a scenario asks for with a `@fixture.<name>` tag, so that a
reader finds it named in the feature file; each ends with its scenario. FIXTURES maps each
tag to its fixture, whose docstring says what it sets up."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from behave import fixture
from behave.runner import Context

from acceptance.domain.resilience import Resilience


@fixture
def limited_router(context: Context) -> Iterator[None]:
    """a Router whose concurrency limit is known: the target's, when max_concurrent_requests
    declares it, else a second localcube with a low limit, started for the scenario"""
    with context.world.part(Resilience).limited_router():
        yield


FIXTURES: dict[str, Callable[[Context], Iterator[None]]] = {
    "fixture.limited-router": limited_router,
}
