"""More concurrent invocations than --max-concurrent-requests get 429."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from tests.localcube.support import SESSION_HEADER, Client, wait_until


def test_requests_over_the_limit_are_refused_and_under_it_served(start_localcube) -> None:
    client = Client(start_localcube(extra_arguments=["--max-concurrent-requests", "1"]).url)
    session = client.agent("echo-agent", json={}).headers[SESSION_HEADER]

    def refused_call():
        answer = client.agent("echo-agent", json={}, session=session)
        return (answer,) if answer.status_code == 429 else None

    with ThreadPoolExecutor(1) as pool:
        slow = pool.submit(
            client.agent, "echo-agent", "/echo/sleep", json={"seconds": 3}, session=session
        )
        (refused,) = wait_until(refused_call, 2.5, "a call beside the slow one to be refused")
        assert refused.json() == {
            "error": "server overloaded, please try again later",
            "code": "SERVER_OVERLOADED",
        }
        assert slow.result().status_code == 200
    assert client.agent("echo-agent", json={}, session=session).status_code == 200
