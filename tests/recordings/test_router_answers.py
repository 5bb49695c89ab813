"""Upstream's Router's recorded answers (router-answers.jsonl), replayed against localcube's
Router in the recorded situation; status, Content-Type, Content-Encoding, whether a session
id is named, and the body after normalisation must agree (or the ledger says why not).

Upstream: pkg/router/server.go:154-181 (routes, Gin's 404, the concurrency limit),
pkg/router/handlers.go:37-56 (health), pkg/router/handlers.go:131-151 and
pkg/router/session_manager.go:137-239 (opening and finding sessions),
pkg/router/handlers.go:153-166 (no entry point), pkg/router/handlers.go:247-257 and
pkg/router/handlers.go:346-352 (a sandbox that cannot be reached).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext

import pytest

from localcube.upstream_records import go_json, go_time, session_key
from tests.localcube.support import wait_until
from tests.recordings.recorded import Exchange, differences, judge, params
from tests.recordings.router_replay import (  # noqa: F401 (the fixtures this module uses)
    GIVE_UP_AFTER,
    SESSION_PLACEHOLDER,
    Cube,
    answer_mismatches,
    bind_answer,
    capture_interpreter_cube,
    limited_cube,
    main_cube,
    not_reproduced,
    redis_cube,
    send,
    sessions_for,
    slow_start_cube,
    wait_for_warm_sandbox,
)

FILE = "router-answers.jsonl"
ON_REDIS = {"expired-record-still-stored", "creating-placeholder", "garbage-record"}
CAPTURE_INTERPRETERS = {"ci-echo-new-session", "claim-echo-new-session"}


def cube_for(exchange: Exchange, request: pytest.FixtureRequest) -> Cube:
    if exchange.id.startswith("limit1-"):
        return request.getfixturevalue("limited_cube")
    if exchange.id in CAPTURE_INTERPRETERS:
        cube = request.getfixturevalue("capture_interpreter_cube")
        wait_for_warm_sandbox(cube, "claim-echo")
        return cube
    if exchange.id == "wm-504":
        return request.getfixturevalue("slow_start_cube")
    if exchange.id in ON_REDIS:
        return request.getfixturevalue("redis_cube")
    return request.getfixturevalue("main_cube")


def shared_sessions(cube: Cube) -> dict[str, str]:
    """The recordings' first agent session and first interpreter session (holding the
    `a.txt` the recorder uploaded), opened once per localcube."""
    if not hasattr(cube, "shared"):
        interpreter = cube.open_session("code-interpreter", "python-interpreter")
        upload = {"path": "a.txt", "content": "aGVsbG8="}
        answer = cube.client.interpreter(
            "python-interpreter", "/api/files", interpreter, json=upload
        )
        assert answer.status_code == 200, answer.text
        cube.shared = {
            "<SESSION_ID_1>": cube.open_session("agent-runtime", "echo-agent"),
            "<SESSION_ID_2>": interpreter,
        }
    return cube.shared


def rewritten_record(cube: Cube, session: str, **fields: object) -> None:
    """The session's record in Redis with `fields` changed, written as Go writes it."""
    store = cube.redis.client()
    stored = store.get(session_key(session))
    assert stored is not None, f"session {session} has no record"
    record = {**json.loads(stored), **fields}
    store.set(session_key(session), go_json(record))


def sessions_in(exchange: Exchange, cube: Cube) -> dict[str, str]:
    """What the request's session placeholders stand for in this situation."""
    known: dict[str, str] = {}
    if exchange.id == "ended-session":  # opened, then deleted as DELETE does
        ended = cube.open_session("agent-runtime", "echo-agent")
        assert cube.client.delete_session("agent-runtime", ended).status_code == 200
        known["<SESSION_ID_1>"] = ended
    elif exchange.id == "expired-record-still-stored":
        session = cube.open_session("agent-runtime", "echo-agent")
        rewritten_record(cube, session, expiresAt=go_time(time.time() - 3600))
        known["<SESSION_ID_8>"] = session
    elif exchange.id == "creating-placeholder":
        session = cube.open_session("agent-runtime", "echo-agent")
        rewritten_record(cube, session, sandboxId="", entryPoints=None, status="creating")
        known["<SESSION_ID_9>"] = session
    elif exchange.id == "garbage-record":
        known = sessions_for(exchange.request.headers, {})
        cube.redis.client().set(session_key(f"garbage-{known['<SESSION_ID_9>']}"), b"not json")
    elif SESSION_PLACEHOLDER.search(str(exchange.request.headers)):
        known = {
            name: session
            for name, session in shared_sessions(cube).items()
            if name in str(exchange.request.headers)
        }
    return sessions_for(exchange.request.headers, known)


@contextmanager
def slot_held(cube: Cube) -> Iterator[None]:
    """The only concurrency slot taken by a call the slow sandbox is still answering."""
    holder = threading.Thread(
        target=cube.client.agent,
        args=("slow-agent",),
        kwargs={"json": {}, "headers": {"X-Rec-Id": "slot-holder"}},
    )
    holder.start()
    try:
        wait_until(lambda: cube.captured("slot-holder") is not None, 10, "the slot to be held")
        yield
    finally:
        holder.join()


@pytest.mark.parametrize("exchange", params(FILE))
def test_the_router_answers_as_upstream_did(
    exchange: Exchange, request: pytest.FixtureRequest
) -> None:
    entry = differences(FILE).get(exchange.id)
    if entry is not None and entry["verdict"] == "not reproducible":
        judge(FILE, exchange, not_reproduced(exchange))
        return
    cube = cube_for(exchange, request)
    sessions = sessions_in(exchange, cube)
    held = exchange.id.startswith("limit1-") and exchange.id != "limit1-slow-call"
    timeout = GIVE_UP_AFTER if exchange.response.fields.get("status") is None else 30
    with slot_held(cube) if held else nullcontext():
        answer = send(cube, exchange.request, sessions, timeout)
    bind_answer(exchange.response, answer, sessions)
    judge(FILE, exchange, answer_mismatches(exchange.response, answer, sessions))
