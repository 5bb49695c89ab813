"""Sessions are registered for deletion the moment they exist, and deletions that fail
are reported rather than lost."""

from __future__ import annotations

from typing import Any

import pytest

from acceptance.evidence import ExchangeLog
from acceptance.measurements import Measurements
from acceptance.platforms import NoPlatform
from acceptance.runtimes import Role, RuntimeKind
from acceptance.settings import load_settings
from acceptance.world import World

SESSION = "0b9a8f4e-3c1d-4e6f-9a2b-1c3d5e7f9a0b"


class FakeRouter:
    def __init__(self, reply) -> None:
        self.reply = reply

    def invoke(self, runtime, path, *, session_id, **kwargs: Any):
        return self.reply


class FakeWorkloadManager:
    def __init__(self, created, deleted) -> None:
        self.created, self.deleted = created, deleted
        self.deletions: list[tuple[RuntimeKind, str]] = []

    def create_session(self, runtime):
        return self.created

    def delete_session(self, kind, session_id):
        self.deletions.append((kind, session_id))
        return self.deleted


@pytest.fixture
def make_world(answer):
    def make(*, router_reply=None, created=None, deleted=None):
        cleanups: list = []
        leaks: list[str] = []
        if deleted is None:  # not `or`: a Response with an error status is falsy
            deleted = answer(200, {"message": "Sandbox deleted successfully"})
        wm = FakeWorkloadManager(created, deleted)
        world = World(
            load_settings({}, {}).for_target("http://router.test", started_localcube=False),
            router=FakeRouter(router_reply),
            workload_manager=wm,
            platform=NoPlatform(None, "http://router.test"),
            register_cleanup=lambda func, *args: cleanups.append((func, args)),
            log=ExchangeLog(),
            leaks=leaks,
            measurements=Measurements(),
        )
        return world, wm, cleanups, leaks

    return make


def run(cleanups: list) -> None:
    for func, args in reversed(cleanups):
        func(*args)


def test_a_session_the_router_opens_is_deleted_at_the_end(make_world, answer) -> None:
    reply = answer(200, {"output": "echo: hi"}, headers={"x-agentcube-session-id": SESSION})
    world, wm, cleanups, leaks = make_world(router_reply=reply)
    world.send_to_agent(Role.ECHO_AGENT, "hi", in_session=False)
    assert world.session.session_id == SESSION
    run(cleanups)
    assert wm.deletions == [(RuntimeKind.AGENT_RUNTIME, SESSION)]
    assert leaks == []


def test_a_session_opened_through_the_workload_manager_is_deleted(make_world, answer) -> None:
    created = answer(200, {"sessionId": SESSION, "sandboxId": "s"})
    world, wm, cleanups, leaks = make_world(created=created)
    world.open_session(Role.PYTHON_INTERPRETER)
    run(cleanups)
    assert wm.deletions == [(RuntimeKind.CODE_INTERPRETER, SESSION)]
    assert leaks == []


def test_a_session_that_is_already_gone_is_no_leak(make_world, answer) -> None:
    created = answer(200, {"sessionId": SESSION})
    world, _, cleanups, leaks = make_world(created=created, deleted=answer(404, {"message": "x"}))
    world.open_session(Role.ECHO_AGENT)
    run(cleanups)
    assert leaks == []


def test_a_failed_deletion_is_reported_with_the_answer(make_world, answer) -> None:
    created = answer(200, {"sessionId": SESSION})
    failed = answer(500, {"error": "internal server error"})
    world, _, cleanups, leaks = make_world(created=created, deleted=failed)
    world.open_session(Role.ECHO_AGENT)
    run(cleanups)
    assert len(leaks) == 1
    assert SESSION in leaks[0] and "500 Internal Server Error" in leaks[0]


def test_a_refused_session_creation_fails_with_the_answer(make_world, answer) -> None:
    world, _, cleanups, _ = make_world(created=answer(404, {"message": "not found"}))
    with pytest.raises(AssertionError, match="the WorkloadManager to create a session"):
        world.open_session(Role.ECHO_AGENT)
    assert cleanups == []
