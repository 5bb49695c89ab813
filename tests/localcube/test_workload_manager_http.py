"""The WorkloadManager's routes: create and delete sessions, with upstream's error bodies."""

from __future__ import annotations

from datetime import datetime

import pytest

from tests.localcube.support import Client


def test_create_answers_the_session_and_its_entry_points(client: Client) -> None:
    answer = client.create_session("agent-runtime", "echo-agent")
    assert answer.status_code == 200
    body = answer.json()
    assert set(body) == {"kind", "sessionId", "sandboxId", "sandboxName", "entryPoints"}
    assert body["kind"] == "Sandbox"
    assert body["entryPoints"][0]["path"] == "/"
    assert body["entryPoints"][0]["endpoint"].startswith("127.0.0.1:")
    assert client.sandbox_of(body["sessionId"])["state"] == "claimed"


WITH_NAMES = '"name": "echo-agent", "namespace": "default"'


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("not json", "Invalid request body"),
        ("[1, 2]", "Invalid request body"),
        ('{"namespace": "default"}', "name is required"),
        ('{"name": "echo-agent"}', "namespace is required"),
        ('{"name": null, "namespace": "default"}', "name is required"),
        ('{"name": 7, "namespace": "default"}', "Invalid request body"),
        (f'{{{WITH_NAMES}, "kind": 7}}', "Invalid request body"),
        (f'{{{WITH_NAMES}, "kind": ["Sandbox"]}}', "Invalid request body"),
        ('{"ttl": 0}', "namespace is required"),
        (f'{{{WITH_NAMES}, "ttl": 0}}', "ttl must be greater than zero"),
        (f'{{{WITH_NAMES}, "ttl": -1}}', "ttl must be greater than zero"),
        (f'{{{WITH_NAMES}, "ttl": "1h"}}', "Invalid request body"),
        (f'{{{WITH_NAMES}, "ttl": "30"}}', "Invalid request body"),
        (f'{{{WITH_NAMES}, "ttl": 1.5}}', "Invalid request body"),
        (f'{{{WITH_NAMES}, "ttl": 30.0}}', "Invalid request body"),
        (f'{{{WITH_NAMES}, "ttl": 3e1}}', "Invalid request body"),
        (f'{{{WITH_NAMES}, "ttl": true}}', "Invalid request body"),
        (f'{{{WITH_NAMES}, "ttl": {2**63}}}', "Invalid request body"),
        (f'{{{WITH_NAMES}, "ttl": NaN}}', "Invalid request body"),
        (f'{{{WITH_NAMES}, "ttl": Infinity}}', "Invalid request body"),
        (f'{{{WITH_NAMES}, "ttl": -Infinity}}', "Invalid request body"),
        (f'{{{WITH_NAMES}, "other": NaN}}', "Invalid request body"),
    ],
)
def test_create_refuses_bad_bodies(client: Client, body: str, expected: str) -> None:
    """A body Go cannot bind into the request (a `ttl` that is not a whole number of
    seconds in int64's range, NaN, a kind or name that is no string) is `Invalid request body`; then
    the fields are validated in order, and PR #460 refuses a ttl <= 0.

    Upstream: pkg/workloadmanager/handlers.go:146-159, pkg/common/types/sandbox.go:54-58,69-83"""
    answer = client.http.post(f"{client.url}/v1/agent-runtime", data=body, timeout=10)
    assert answer.status_code == 400
    assert answer.json() == {"message": expected}


def test_a_kind_in_the_body_gives_way_to_the_paths(client: Client) -> None:
    """A `kind` that binds is replaced by the route's kind before validation.

    Upstream: pkg/workloadmanager/handlers.go:146-153"""
    body = f'{{{WITH_NAMES}, "kind": "CodeInterpreter"}}'
    answer = client.http.post(f"{client.url}/v1/agent-runtime", data=body, timeout=10)
    assert answer.status_code == 200, answer.text
    assert answer.json()["kind"] == "Sandbox"


def test_a_null_ttl_keeps_the_runtimes_maximum_session_duration(client: Client) -> None:
    """PR #460: a ttl left out, or null, keeps the runtime's maxSessionDuration (8h)."""
    answer = client.create_session("agent-runtime", "echo-agent", ttl=None)
    assert answer.status_code == 200, answer.text
    assert 8 * 3600 - 1 <= lifetime_of(client, answer.json()["sessionId"]) <= 8 * 3600 + 1


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("agent-runtime", "agent runtime not found"),
        ("code-interpreter", "code interpreter not found"),
    ],
)
def test_create_for_an_unknown_runtime_is_404(client: Client, kind: str, expected: str) -> None:
    """Upstream: pkg/workloadmanager/handlers.go:179-186"""
    answer = client.create_session(kind, "missing")
    assert answer.status_code == 404
    assert answer.json() == {"message": expected}


def test_delete_of_an_unknown_session_is_404(client: Client) -> None:
    answer = client.delete_session("code-interpreter", "nope")
    assert answer.status_code == 404
    assert answer.json() == {"message": "Session ID nope not found, maybe already deleted"}


def test_a_request_ttl_caps_the_session_lifetime(client: Client) -> None:
    session = client.create_session("agent-runtime", "echo-agent", ttl=30).json()["sessionId"]
    assert 29 <= lifetime_of(client, session) <= 31


def lifetime_of(client: Client, session: str) -> float:
    """Seconds from the session's sandbox creation to its expiry, as the admin API shows."""
    sandbox = client.sandbox_of(session)
    created = datetime.fromisoformat(sandbox["createdAt"])
    return (datetime.fromisoformat(sandbox["expiresAt"]) - created).total_seconds()
