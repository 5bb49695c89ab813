"""More concurrent invocations than --max-concurrent-requests get 429."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from tests.localcube.support import SESSION_HEADER, Client
from tests.waiting import wait_until

OVERLOADED = {"error": "server overloaded, please try again later", "code": "SERVER_OVERLOADED"}


def test_requests_over_the_limit_are_refused_and_under_it_served(start_localcube) -> None:
    url = start_localcube(extra_arguments=["--max-concurrent-requests", "1"]).url
    client, slow_client = Client(url), Client(url)  # one HTTP session per thread
    session = client.agent("echo-agent", json={}).headers[SESSION_HEADER]

    with ThreadPoolExecutor(1) as pool:
        slow = pool.submit(
            slow_client.agent, "echo-agent", "/echo/sleep", json={"seconds": 3}, session=session
        )
        # The admin API is outside the limit: it shows when the slow call holds the slot.
        wait_until(
            lambda: client.sandbox_of(session)["callsInFlight"] == 1,
            "the slow call to reach the Router",
            timeout=10,
        )
        refused = client.agent("echo-agent", json={}, session=session)
        assert refused.status_code == 429, refused.text
        assert refused.json() == OVERLOADED
        assert slow.result().status_code == 200
    assert client.agent("echo-agent", json={}, session=session).status_code == 200
