"""The World against a real localcube: sessions are registered for deletion the moment they
exist, deletions that fail are reported rather than lost, and a Router restart that loses
its sessions is noticed. Broken behaviour comes from the fault proxy or from a localcube
restarted without its state, never from fakes of the product."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from acceptance.core.evidence import ExchangeLog
from acceptance.core.runtimes import FIXTURE_RUNTIMES, Role, RuntimeKind
from acceptance.core.settings import load_settings
from acceptance.core.transport import Transport
from acceptance.domain.resilience import Resilience
from acceptance.domain.sessions import open_session
from acceptance.domain.world import RunLedger, World
from acceptance.platforms.base import Platform
from acceptance.platforms.localcube import LocalcubeTarget, capabilities_of
from acceptance.platforms.own_localcube import OwnLocalcube
from localcube import embedded
from tests.localcube.support import Client
from tests.suite.fault_proxy import FaultProxy


@dataclass
class Scenario:
    """A World and what its scenario registered for cleanup, run as behave would (LIFO)."""

    world: World
    platform: Platform
    cleanups: list[tuple[Callable[..., None], tuple[Any, ...]]]
    leaks: list[str]

    def end(self) -> None:
        while self.cleanups:
            cleanup, args = self.cleanups.pop()
            cleanup(*args)

    @property
    def registered(self) -> list[Callable[..., None]]:
        return [cleanup for cleanup, _ in self.cleanups]


MakeScenario = Callable[..., Scenario]


@pytest.fixture
def scenario() -> Iterator[MakeScenario]:
    started: list[Scenario] = []

    def make(
        url: str,
        own: OwnLocalcube | None = None,
        tokens: tuple[str | None, str | None] = (None, None),
        **userdata: str,
    ) -> Scenario:
        """`tokens`: the api_token and the admin_api_token the target is given."""
        settings = load_settings({"platform": "localcube", **userdata}, {})
        api_token, admin_api_token = tokens
        capabilities = capabilities_of(url, own=own is not None)
        target = LocalcubeTarget(url, url, api_token, None, admin_api_token, capabilities, own=own)
        cleanups: list[tuple[Callable[..., None], tuple[Any, ...]]] = []
        ledger = RunLedger()
        transport = Transport(timeout=30, log=ExchangeLog())
        world = World(
            settings,
            target,
            transport,
            lambda cleanup, *args: cleanups.append((cleanup, args)),
            ledger,
        )
        cleanups.append((transport.close, ()))
        started.append(Scenario(world, world.platform, cleanups, ledger.leaks))
        return started[-1]

    yield make
    for each in started:
        each.end()


def test_a_session_the_router_opens_is_deleted_at_the_end(shared_cube, scenario) -> None:
    run = scenario(shared_cube.url)
    run.world.calls(run.world.runtime(Role.ECHO_AGENT)).echo("hi")
    session = run.world.session
    assert Client(shared_cube.url).sandbox_of(session.session_id) is not None
    run.end()
    assert Client(shared_cube.url).sandbox_of(session.session_id) is None
    assert run.leaks == []


def test_the_platform_finds_the_sandboxes_of_several_sessions_in_one_listing(
    shared_cube, scenario
) -> None:
    run = scenario(shared_cube.url)
    first = open_session(run.world, Role.ECHO_AGENT)
    second = open_session(run.world, Role.ECHO_AGENT)
    exchanges = run.world.transport.log.exchanges
    calls = len(exchanges)
    found = run.platform.sandboxes_of([first.session_id, second.session_id, "unknown"])
    assert set(found) == {first.session_id, second.session_id}
    assert found[first.session_id] == run.platform.sandbox_of(first.session_id)
    assert found[first.session_id] != found[second.session_id]
    assert len(exchanges) == calls + 2  # one listing each, not one per session


def test_a_session_opened_through_the_router_is_deleted(shared_cube, scenario) -> None:
    run = scenario(shared_cube.url)
    session = open_session(run.world, Role.PYTHON_INTERPRETER)
    assert session.runtime.kind is RuntimeKind.CODE_INTERPRETER
    assert run.world.ledger.sessions == [session]
    run.end()
    assert Client(shared_cube.url).sandbox_of(session.session_id) is None
    assert run.leaks == []


def test_a_session_the_scenario_closed_is_not_deleted_again(shared_cube, scenario) -> None:
    run = scenario(shared_cube.url)
    session = open_session(run.world, Role.ECHO_AGENT)
    assert run.world.close_session(session).status_code == 200
    run.end()
    assert run.leaks == []
    evidence = run.world.transport.log.format()
    assert evidence.count(" DELETE ") == 1, evidence


def test_a_failed_deletion_is_reported_with_the_answer(shared_cube, scenario) -> None:
    with FaultProxy(shared_cube.url, "deletion-fails") as broken:
        run = scenario(broken.url)
        session = open_session(run.world, Role.ECHO_AGENT)
        run.end()
    assert len(run.leaks) == 1
    assert session.session_id in run.leaks[0] and "500 Internal Server Error" in run.leaks[0]
    assert (
        Client(shared_cube.url).delete_session("agent-runtime", session.session_id).status_code
        == 200
    )


def test_a_refused_session_creation_fails_with_the_answer(shared_cube, scenario) -> None:
    run = scenario(shared_cube.url, python_interpreter="no-such-interpreter")
    registered = list(run.registered)
    with pytest.raises(AssertionError, match="the Router to open a session") as error:
        open_session(run.world, Role.PYTHON_INTERPRETER)
    assert "the status was 404" in str(error.value)
    with pytest.raises(AssertionError, match="the WorkloadManager to create a session") as error:
        run.world.open_session_at_workload_manager(Role.PYTHON_INTERPRETER)
    assert "404 Not Found" in str(error.value)
    assert run.registered == registered, "nothing was registered for a session never opened"


def test_a_session_opened_at_the_workload_manager_alone_is_called_as_the_admin(
    shared_cube, scenario
) -> None:
    """Its caller is the admin subject, as a value the session carries: the scenario's own
    calls, and the sessions they open, stay the api_token's (no switch of the World's)."""
    run = scenario(shared_cube.url, tokens=("first-token", "admin-token"))
    at_the_workload_manager = run.world.open_session_at_workload_manager(Role.ECHO_AGENT)
    through_the_router = open_session(run.world, Role.ECHO_AGENT)
    assert at_the_workload_manager.caller is not None
    assert at_the_workload_manager.caller.token_variable == "AGENTCUBE_ADMIN_API_TOKEN"
    assert through_the_router.caller is run.world.caller
    kept: list[str] = []
    run.world.keep_for_inspection(kept)
    run.end()
    how_to_reach = {line.split()[1]: line for line in kept if line.startswith("session ")}
    admins = how_to_reach[at_the_workload_manager.session_id]
    assert "$AGENTCUBE_ADMIN_API_TOKEN" in admins and "$AGENTCUBE_API_TOKEN" not in admins
    assert "ADMIN" not in how_to_reach[through_the_router.session_id]
    for session in (at_the_workload_manager, through_the_router):
        Client(shared_cube.url).delete_session("agent-runtime", session.session_id)


class HelperAskingTooMuch:
    def __init__(self, world: World, router_url: str) -> None:
        self.router_url = router_url


def test_a_helper_asking_for_what_a_world_does_not_give_is_named(shared_cube, scenario) -> None:
    run = scenario(shared_cube.url)
    with pytest.raises(TypeError, match=r"HelperAskingTooMuch asks for \['router_url'\]"):
        run.world.part(HelperAskingTooMuch)


class RestartLosingSessions:
    """A localcube whose Router restart loses its sessions: it is stopped and started anew
    on the same port without its state, where a real restart keeps the store."""

    def __init__(self, log: Path) -> None:
        self._log = log
        self.shared_cube = embedded.start([FIXTURE_RUNTIMES], log, gc_interval="100ms")

    def restart(self) -> None:
        port = urlsplit(self.shared_cube.url).port
        self.shared_cube.stop()
        self.shared_cube = embedded.start([FIXTURE_RUNTIMES], self._log, port=port)

    def limited(self, limit: int) -> AbstractContextManager[str]:
        raise AssertionError("not needed here")


@pytest.mark.slow
def test_a_router_restart_that_loses_sessions_is_noticed(tmp_path: Path, scenario) -> None:
    target = RestartLosingSessions(tmp_path / "localcube.log")
    try:
        run = scenario(target.shared_cube.url, own=target)
        resilience = run.world.part(Resilience)
        resilience.open_answered_session(Role.ECHO_AGENT)
        run.world.platform.restart_router()
        with pytest.raises(AssertionError) as error:
            resilience.expect_agent_session_survived(Role.ECHO_AGENT)
        message = str(error.value)
        assert "the echo agent to answer 200" in message
        assert "the status was 404" in message
        run.end()
    finally:
        target.shared_cube.stop()
