"""What upstream's Router sent its WorkloadManager (router-to-workload-manager.jsonl),
against localcube.

localcube's Router calls its WorkloadManager in-process: no request crosses a socket, so
the request's bytes, its Content-Type and its bearer (the service-account token) cannot be
observed on that hop. What can be compared, per exchange:
- the client call that caused it, sent through localcube's Router, gets the status
  upstream's Router answered (`router_answer_status`);
- the recorded request itself (path, the compact `{"kind","name","namespace"}` body,
  Content-Type), replayed at localcube's WorkloadManager in the same situation, is
  answered as the recorded WorkloadManager answered: status, Content-Type, and the body
  with its ids, names and ports as placeholders (types.CreateSandboxResponse in its field
  order, or `{"message"}`). That localcube's WorkloadManager admits the service-account
  token is pinned by tests/localcube/test_router_identity.py.
Situations only the capture WorkloadManager could make (its 400, a body that is not JSON,
an empty session id, no entry points) are "not reproducible" in the ledger.

Upstream: pkg/router/session_manager.go:155-239, pkg/workloadmanager/handlers.go:146-266,
pkg/workloadmanager/utils.go:30-41, pkg/common/types/sandbox.go:60-67.
"""

from __future__ import annotations

import re

import pytest
import requests

from tests.recordings.recorded import Exchange, Message, differences, judge, message, params
from tests.recordings.router_replay import (
    GIVE_UP_AFTER,
    SESSION_HEADER,
    Cube,
    cube_for,
    not_reproduced,
    send,
    sessions_in,
    situation_of,
)

# the module's fixtures serve all its tests: one process runs them (pytest-xdist)
pytestmark = pytest.mark.xdist_group("router-to-workload-manager")

FILE = "router-to-workload-manager.jsonl"
_VARYING = (  # what names one sandbox of one run, as placeholders on both sides
    (re.compile(r'"sessionId":"[^"]*"'), '"sessionId":"<SESSION_ID>"'),
    (re.compile(r'"sandboxId":"[^"]*"'), '"sandboxId":"<SANDBOX_ID>"'),
    (re.compile(r'"sandboxName":"[^"]*"'), '"sandboxName":"<SANDBOX_NAME>"'),
    (re.compile(r'"endpoint":"127\.0\.0\.1:[^"]*"'), '"endpoint":"127.0.0.1:<PORT>"'),
)


def without_names(body: bytes) -> str:
    text = body.decode("utf-8", "replace")
    for pattern, placeholder in _VARYING:
        text = pattern.sub(placeholder, text)
    return text


def router_mismatches(exchange: Exchange, cube: Cube) -> list[str]:
    """The client call through localcube's Router: its status, and for a session it opened,
    the kind, namespace and name the WorkloadManager opened it for (the admin API's view
    of what the in-process call carried) against the recorded request's body."""
    client_request = message(exchange.line["client_request"])
    answers_id = client_request.header("X-Rec-Id")
    sessions = sessions_in(answers_id, client_request.headers, cube)
    wanted = exchange.line["router_answer_status"]
    with situation_of(answers_id)(cube):
        answer = send(cube, client_request, sessions, GIVE_UP_AFTER if wanted is None else 30)
    status = None if answer is None else answer.status
    found = [] if status == wanted else [f"the Router answered {status}, upstream's {wanted}"]
    session = None if answer is None else answer.header(SESSION_HEADER)
    if session:
        sandbox = cube.client.sandbox_of(session) or {}
        opened = {
            "kind": sandbox.get("kind"),
            "name": sandbox.get("runtime"),
            "namespace": sandbox.get("namespace"),
        }
        if opened != exchange.request.json():
            found.append(
                f"the session was opened for {opened}, upstream asked for {exchange.request.json()}"
            )
    return found


def workload_manager_mismatches(recorded: Message, expected: Message, cube: Cube) -> list[str]:
    answer = requests.post(
        f"{cube.running.url}{recorded.fields['path']}",
        data=recorded.body,
        headers={"Content-Type": recorded.header("Content-Type")},
        timeout=60,
    )
    found = []
    if answer.status_code != expected.fields["status"]:
        found.append(f"WM status {answer.status_code}, upstream {expected.fields['status']}")
    if answer.headers.get("Content-Type") != expected.header("Content-Type"):
        found.append(
            f"WM Content-Type {answer.headers.get('Content-Type')!r}, "
            f"upstream {expected.header('Content-Type')!r}"
        )
    if without_names(answer.content) != without_names(expected.body or b""):
        found.append(
            f"WM body {without_names(answer.content)!r}, upstream {without_names(expected.body)!r}"
        )
    return found


@pytest.mark.parametrize("exchange", params(FILE))
def test_the_workload_manager_is_asked_and_answers_as_upstreams(
    exchange: Exchange, request: pytest.FixtureRequest
) -> None:
    """Upstream: pkg/router/session_manager.go:155-239, pkg/workloadmanager/handlers.go:146-266"""
    entry = differences(FILE).get(exchange.id)
    if entry is not None and entry["verdict"] == "not reproducible":
        judge(FILE, exchange, not_reproduced(exchange))
        return
    cube = cube_for(message(exchange.line["client_request"]).header("X-Rec-Id"), request)
    mismatches = router_mismatches(exchange, cube)
    mismatches += workload_manager_mismatches(exchange.request, exchange.response, cube)
    judge(FILE, exchange, mismatches)
