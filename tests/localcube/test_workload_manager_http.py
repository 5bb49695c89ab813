"""The WorkloadManager's routes: create and delete sessions, with upstream's error bodies."""

from __future__ import annotations

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


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("not json", "Invalid request body"),
        ("[1, 2]", "Invalid request body"),
        ('{"namespace": "default"}', "name is required"),
        ('{"name": "echo-agent"}', "namespace is required"),
        (
            '{"name": "echo-agent", "namespace": "default", "ttl": -1}',
            "ttl must be a positive number of seconds",
        ),
        (
            '{"name": "echo-agent", "namespace": "default", "ttl": "1h"}',
            "ttl must be a positive number of seconds",
        ),
        (
            '{"name": "echo-agent", "namespace": "default", "ttl": NaN}',
            "ttl must be a positive number of seconds",
        ),
        (
            '{"name": "echo-agent", "namespace": "default", "ttl": Infinity}',
            "ttl must be a positive number of seconds",
        ),
        (
            '{"name": "echo-agent", "namespace": "default", "ttl": -Infinity}',
            "ttl must be a positive number of seconds",
        ),
    ],
)
def test_create_refuses_bad_bodies(client: Client, body: str, expected: str) -> None:
    answer = client.http.post(f"{client.url}/v1/agent-runtime", data=body, timeout=10)
    assert answer.status_code == 400
    assert answer.json() == {"message": expected}


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
    sandbox = client.sandbox_of(session)
    assert sandbox["expiresAt"] is not None
    from datetime import datetime

    created = datetime.fromisoformat(sandbox["createdAt"])
    expires = datetime.fromisoformat(sandbox["expiresAt"])
    assert 29 <= (expires - created).total_seconds() <= 31
