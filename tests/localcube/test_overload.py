"""More concurrent invocations than --max-concurrent-requests get 429."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from tests.localcube.support import SESSION_HEADER, Client, wait_until


def test_requests_over_the_limit_are_refused_and_under_it_served(start_localcube) -> None:
    client = Client(start_localcube(extra_arguments=["--max-concurrent-requests", "1"]).url)
    session = client.agent("echo-agent", json={}).headers[SESSION_HEADER]

    with ThreadPoolExecutor(1) as pool:
        slow = pool.submit(
            client.agent, "echo-agent", "/echo/sleep", json={"seconds": 5}, session=session
        )

        def refused_while_the_slow_call_runs():
            if slow.done():
                return ("the slow call ended first",)
            answer = client.agent("echo-agent", json={}, session=session)
            return (answer,) if answer.status_code == 429 else None

        (refused,) = wait_until(refused_while_the_slow_call_runs, 30, "a concurrent call refused")
        assert not isinstance(refused, str), refused
        assert refused.json() == {
            "error": "server overloaded, please try again later",
            "code": "SERVER_OVERLOADED",
        }
        assert slow.result().status_code == 200
    assert client.agent("echo-agent", json={}, session=session).status_code == 200
