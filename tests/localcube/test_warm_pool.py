"""Warm pools: sandboxes started ahead, claimed without a process start, refilled."""

from __future__ import annotations

from tests.localcube.support import SESSION_HEADER, Client, wait_until

WARM = "python-interpreter-warm"


def warm_sandboxes(client: Client, runtime: str) -> list[dict]:
    return [
        box for box in client.sandboxes() if box["runtime"] == runtime and box["state"] == "warm"
    ]


def test_a_session_claims_a_warm_sandbox_and_the_pool_refills(start_localcube) -> None:
    client = Client(start_localcube().url)
    pool = wait_until(
        lambda: len(warm_sandboxes(client, WARM)) == 2 and warm_sandboxes(client, WARM),
        20,
        "the warm pool to fill",
    )
    answer = client.execute(WARM, ["python3", "-c", "print('warm')"])
    assert answer.json()["stdout"] == "warm\n"
    claimed = client.sandbox_of(answer.headers[SESSION_HEADER])
    assert claimed["sandboxId"] in {box["sandboxId"] for box in pool}
    assert claimed["state"] == "claimed"
    wait_until(lambda: len(warm_sandboxes(client, WARM)) == 2, 20, "the pool to refill to 2")


def test_the_workload_manager_reports_a_claim_for_pooled_runtimes(start_localcube) -> None:
    client = Client(start_localcube().url)
    assert client.create_session("code-interpreter", WARM).json()["kind"] == "SandboxClaim"
    assert (
        client.create_session("code-interpreter", "python-interpreter").json()["kind"] == "Sandbox"
    )


def test_an_interpreter_without_a_pool_starts_cold(start_localcube) -> None:
    client = Client(start_localcube().url)
    wait_until(lambda: len(warm_sandboxes(client, WARM)) == 2, 20, "the other runtime's pool")
    assert warm_sandboxes(client, "python-interpreter") == []
    answer = client.execute("python-interpreter", ["echo", "cold"])
    assert answer.json()["stdout"] == "cold\n"
