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

import pytest

from tests.recordings.recorded import Exchange, differences, judge, params
from tests.recordings.router_replay import (
    GIVE_UP_AFTER,
    answer_mismatches,
    bind_answer,
    cube_for,
    not_reproduced,
    send,
    sessions_in,
    situation_of,
)

# the module's fixtures serve all its tests: one process runs them (pytest-xdist)
pytestmark = pytest.mark.xdist_group("router-answers")

FILE = "router-answers.jsonl"


@pytest.mark.parametrize("exchange", params(FILE))
def test_the_router_answers_as_upstream_did(
    exchange: Exchange, request: pytest.FixtureRequest
) -> None:
    """Upstream: pkg/router/server.go:154-181, pkg/router/handlers.go:37-166,
    pkg/router/handlers.go:247-275, pkg/router/session_manager.go:137-239"""
    entry = differences(FILE).get(exchange.id)
    if entry is not None and entry["verdict"] == "not reproducible":
        judge(FILE, exchange, not_reproduced(exchange))
        return
    cube = cube_for(exchange.id, request)
    sessions = sessions_in(exchange.id, exchange.request.headers, cube)
    timeout = GIVE_UP_AFTER if exchange.response.fields.get("status") is None else 30
    with situation_of(exchange.id)(cube):
        answer = send(cube, exchange.request, sessions, timeout)
    bind_answer(exchange.response, answer, sessions)
    judge(FILE, exchange, answer_mismatches(exchange.response, answer, sessions))
