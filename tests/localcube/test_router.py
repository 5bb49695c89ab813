"""The Router's contract on agent runtimes: session creation, reuse, errors, headers."""

from __future__ import annotations

import hashlib
import os
import signal
import uuid
from concurrent.futures import ThreadPoolExecutor

from tests.localcube.support import SESSION_HEADER, Client
from tests.waiting import wait_until


def test_first_call_creates_a_session_and_reuse_reaches_the_same_sandbox(client: Client) -> None:
    first = client.agent("echo-agent", json={"input": "hello"})
    assert first.status_code == 200
    session = first.headers[SESSION_HEADER]
    assert uuid.UUID(session).version == 4
    assert first.json()["output"] == "echo: hello"

    second = client.agent("echo-agent", json={"input": "again"}, session=session)
    assert second.status_code == 200
    assert second.headers[SESSION_HEADER] == session
    assert second.json()["output"] == "echo: again"
    assert second.json()["sandbox"]["pid"] == first.json()["sandbox"]["pid"]
    assert [first.json()["sandbox"]["calls"], second.json()["sandbox"]["calls"]] == [1, 2]


def test_an_agent_with_a_memory_limit_serves_concurrent_calls(client: Client) -> None:
    """The echo agent (256Mi) starts a thread per connection: a memory limit that counted
    reserved address space (RLIMIT_AS) refused the fourth or fifth thread."""
    session = client.agent("echo-agent", json={}).headers[SESSION_HEADER]
    with ThreadPoolExecutor(8) as callers:
        answers = list(
            callers.map(
                lambda _: client.agent(
                    "echo-agent", "/echo/sleep", json={"seconds": 0.5}, session=session
                ),
                range(8),
            )
        )
    assert [answer.status_code for answer in answers] == [200] * 8


def test_sessions_without_the_header_get_distinct_sandboxes(client: Client) -> None:
    answers = [client.agent("echo-agent", json={"input": "x"}) for _ in range(2)]
    assert answers[0].headers[SESSION_HEADER] != answers[1].headers[SESSION_HEADER]
    assert answers[0].json()["sandbox"]["pid"] != answers[1].json()["sandbox"]["pid"]


def test_unknown_runtime_is_404_naming_the_resource(client: Client) -> None:
    """Upstream: pkg/router/session_manager.go:206-208"""
    answer = client.agent("no-such-agent", json={})
    assert answer.status_code == 404
    assert answer.json() == {
        "error": 'agentruntimes.agentcube.volcano.sh "default/no-such-agent" not found'
    }
    answer = client.interpreter("no-such-interpreter", "/api/execute", json={"command": ["true"]})
    assert answer.status_code == 404
    assert answer.json() == {
        "error": 'codeinterpreters.agentcube.volcano.sh "default/no-such-interpreter" not found'
    }


def test_unknown_session_is_404_with_the_stable_code(client: Client) -> None:
    """Upstream: pkg/router/session_manager.go:144-147 (the code since PR #460)"""
    unknown = str(uuid.uuid4())
    answer = client.agent("echo-agent", json={}, session=unknown)
    assert answer.status_code == 404
    assert answer.json() == {
        "error": f'sessions.agentcube.volcano.sh "{unknown}" not found',
        "code": "SESSION_NOT_FOUND",
    }


def test_an_agents_own_404_is_proxied_with_the_session_header_and_no_code(client: Client) -> None:
    answer = client.agent("echo-agent", "/not-an-agent-path", json={})
    assert answer.status_code == 404
    assert answer.json() == {"error": "Not found"}
    assert SESSION_HEADER in answer.headers


def test_get_bootstraps_a_session_as_the_sdk_does(client: Client) -> None:
    answer = client.agent("echo-agent", "/")
    assert answer.status_code == 200
    assert answer.headers[SESSION_HEADER]


def test_the_callers_token_never_reaches_the_sandbox(client: Client) -> None:
    token = "caller-secret-token"
    answer = client.agent(
        "echo-agent", json={"input": "x"}, headers={"Authorization": f"Bearer {token}"}
    )
    received = answer.json()["sandbox"]["authorization_sha256"]
    assert received is not None, "the Router signs every forwarded request"
    assert received != hashlib.sha256(f"Bearer {token}".encode()).hexdigest()


def test_a_deleted_session_is_refused_and_its_sandbox_ends(client: Client) -> None:
    created = client.create_session("agent-runtime", "echo-agent")
    assert created.status_code == 200
    session = created.json()["sessionId"]
    pid = client.sandbox_of(session)["pid"]
    assert client.delete_session("agent-runtime", session).json() == {
        "message": "Sandbox deleted successfully"
    }
    assert client.agent("echo-agent", json={}, session=session).status_code == 404
    wait_until(lambda: not os.path.exists(f"/proc/{pid}"), "the sandbox process to end", timeout=5)


def test_a_dead_sandbox_answers_502_quickly(client: Client) -> None:
    """Upstream: pkg/router/handlers.go:247-251"""
    session = client.agent("echo-agent", json={}).headers[SESSION_HEADER]
    pid = client.sandbox_of(session)["pid"]
    os.killpg(pid, signal.SIGKILL)
    wait_until(
        lambda: not client.sandbox_of(session)["alive"], "the sandbox to be seen dead", timeout=5
    )
    # a hang would end in the client's timeout, not in the Router's answer
    answer = client.agent("echo-agent", json={}, session=session, timeout=30)
    assert answer.status_code == 502
    assert answer.json() == {"error": "sandbox unreachable"}
    assert client.agent("echo-agent", json={"input": "fresh"}).status_code == 200


def test_health_routes(client: Client) -> None:
    assert client.http.get(f"{client.url}/health/live").json() == {"status": "alive"}
    assert client.http.get(f"{client.url}/health/ready").json() == {"status": "ready"}
    assert client.http.get(f"{client.url}/health").json() == {"status": "healthy"}


def test_a_session_presented_under_another_path_is_served_by_its_own_sandbox(
    client: Client,
) -> None:
    """Upstream: pkg/router/session_manager.go:137-153 (an existing session is looked up by
    its id alone: the namespace, name and kind the path names are not compared), as the
    recordings agent-session-wrong-runtime and agent-session-on-ci-path show"""
    first = client.agent("echo-agent", json={"input": "mine"})
    session = first.headers[SESSION_HEADER]
    for path in (
        "/v1/namespaces/elsewhere/agent-runtimes/echo-agent/invocations/echo",
        "/v1/namespaces/default/agent-runtimes/other-agent/invocations/echo",
    ):
        answer = client.http.post(
            client.url + path, json={"input": "again"}, headers={SESSION_HEADER: session}
        )
        assert answer.status_code == 200, path
        assert answer.headers[SESSION_HEADER] == session
        assert answer.json()["sandbox"]["pid"] == first.json()["sandbox"]["pid"]
