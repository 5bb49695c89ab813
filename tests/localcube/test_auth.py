"""Bearer-token authentication of /v1/* and session ownership."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.localcube.support import SESSION_HEADER, Client

ALICE, BOB = "alice-token-0123456789", "bob-token-9876543210"


@pytest.fixture
def cube_url(tmp_path: Path, start_localcube) -> str:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"# subjects\nalice={ALICE}\nbob={BOB}\n")
    cube = start_localcube(extra_arguments=["--token-file", str(tokens)])
    assert ALICE not in " ".join(cube.arguments), "tokens never reach process arguments"
    return cube.url


@pytest.mark.parametrize(
    ("authorization", "expected"),
    [
        (None, "missing authorization header"),
        ("Basic abc", "invalid authorization header format"),
        ("Bearer", "invalid authorization header format"),
        ("Bearer    ", "invalid authorization header format"),  # trailing blanks are dropped
        ("Bearer wrong-token", "invalid or expired token"),
    ],
)
def test_v1_refuses_callers_without_a_valid_token(cube_url: str, authorization, expected) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    for path in (
        "/v1/namespaces/default/agent-runtimes/echo-agent/invocations/echo",
        "/v1/agent-runtime",
    ):
        answer = Client(cube_url).http.post(cube_url + path, json={}, headers=headers, timeout=10)
        assert answer.status_code == 401
        assert answer.json() == {"error": expected, "code": "UNAUTHORIZED"}


def test_health_and_admin_routes_need_no_token(cube_url: str) -> None:
    client = Client(cube_url)
    assert client.http.get(f"{cube_url}/health/ready").status_code == 200
    assert client.http.get(f"{cube_url}/localcube/v1/runtimes").status_code == 200


def test_a_session_belongs_to_the_subject_that_created_it(cube_url: str) -> None:
    alice, bob = Client(cube_url, ALICE), Client(cube_url, BOB)
    session = alice.agent("echo-agent", json={"input": "mine"}).headers[SESSION_HEADER]
    assert alice.agent("echo-agent", json={}, session=session).status_code == 200
    refused = bob.agent("echo-agent", json={}, session=session)
    assert refused.status_code == 403
    assert refused.json() == {"error": "you do not own this sandbox", "code": "FORBIDDEN"}
    assert bob.delete_session("agent-runtime", session).status_code == 403
    assert alice.delete_session("agent-runtime", session).status_code == 200


def test_the_token_is_absent_from_the_server_log(tmp_path: Path, start_localcube) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice={ALICE}\n")
    cube = start_localcube(extra_arguments=["--token-file", str(tokens)])
    client = Client(cube.url, ALICE)
    client.agent("echo-agent", json={})
    Client(cube.url, "Bearer-" + ALICE[::-1]).agent("echo-agent", json={})
    cube.stop()
    assert ALICE not in cube.log()
