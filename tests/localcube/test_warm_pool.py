"""Warm pools: sandboxes started ahead, claimed without a process start, refilled."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

from tests.localcube.picod_process import own_picod_command
from tests.localcube.support import SESSION_HEADER, Client, derived_manifest, processes_under
from tests.waiting import wait_until

WARM = "python-interpreter-warm"


def warm_sandboxes(client: Client, runtime: str) -> list[dict]:
    return [
        box for box in client.sandboxes() if box["runtime"] == runtime and box["state"] == "warm"
    ]


def test_a_session_claims_a_warm_sandbox_and_the_pool_refills(start_localcube) -> None:
    client = Client(start_localcube().url)
    pool = wait_until(
        lambda: len(warm_sandboxes(client, WARM)) == 2 and warm_sandboxes(client, WARM),
        "the warm pool to fill",
        timeout=20,
    )
    answer = client.execute(WARM, ["python3", "-c", "print('warm')"])
    assert answer.json()["stdout"] == "warm\n"
    claimed = client.sandbox_of(answer.headers[SESSION_HEADER])
    assert claimed["sandboxId"] in {box["sandboxId"] for box in pool}
    assert claimed["state"] == "claimed"
    wait_until(
        lambda: len(warm_sandboxes(client, WARM)) == 2, "the pool to refill to 2", timeout=20
    )


def test_the_workload_manager_reports_a_claim_for_pooled_runtimes(start_localcube) -> None:
    client = Client(start_localcube().url)
    assert client.create_session("code-interpreter", WARM).json()["kind"] == "SandboxClaim"
    assert (
        client.create_session("code-interpreter", "python-interpreter").json()["kind"] == "Sandbox"
    )


def test_an_interpreter_without_a_pool_starts_cold(start_localcube) -> None:
    client = Client(start_localcube().url)
    wait_until(
        lambda: len(warm_sandboxes(client, WARM)) == 2, "the other runtime's pool", timeout=20
    )
    assert warm_sandboxes(client, "python-interpreter") == []
    answer = client.execute("python-interpreter", ["echo", "cold"])
    assert answer.json()["stdout"] == "cold\n"


def test_a_warm_sandbox_that_finishes_starting_after_its_runtime_went_is_ended(
    tmp_path: Path, start_localcube
) -> None:
    """The pool's sandboxes start slowly here (a PicoD behind a wrapper that waits a
    second); the runtime is deleted while they start. Once they serve, they belong to no
    runtime and no record: they must end, leaving no process and no directory."""
    records = tmp_path / "records"
    slow = tmp_path / "slow-picod.sh"
    slow.write_text(f'sleep 1\nexec sh {tmp_path}/my-picod.sh "$@"\n')
    own_picod_command(tmp_path, records)  # writes my-picod.sh, which runs localcube's daemon
    pooled = derived_manifest(tmp_path, WARM, "slow-pool", warmPoolSize=1)
    state = tmp_path / "state"
    cube = start_localcube(
        [pooled],
        state_dir=state,
        extra_arguments=["--picod-command", f"sh {slow} --port {{port}} --workspace {{workspace}}"],
    )
    client = Client(cube.url)
    wait_until(lambda: any(records.iterdir()), "the pool's sandbox to start", timeout=10)
    deleted = client.http.delete(
        f"{client.url}/localcube/v1/runtimes/codeinterpreters/default/slow-pool", timeout=10
    )
    assert deleted.status_code == 200, deleted.text
    time.sleep(2)  # the start it could not stop completes meanwhile
    wait_until(
        lambda: not processes_under(state / "sandboxes"), "no sandbox process left", timeout=10
    )
    assert client.sandboxes() == []
    assert list((state / "sandboxes").iterdir()) == []


def test_a_stop_while_one_warm_sandbox_serves_and_another_starts_leaves_no_process(
    tmp_path: Path, start_localcube
) -> None:
    """A pool of two whose second sandbox starts slowly (its wrapper waits half a minute).
    The first is recorded as soon as it serves, not once the whole batch has started: a
    stop ends what the records know, so one left unrecorded would outlive localcube."""
    own_picod_command(tmp_path, tmp_path / "records")  # writes my-picod.sh
    second_slow = tmp_path / "second-slow-picod.sh"
    second_slow.write_text(
        f"mkdir {tmp_path}/first-started 2>/dev/null || sleep 30\n"
        f'exec sh {tmp_path}/my-picod.sh "$@"\n'
    )
    pooled = derived_manifest(tmp_path, WARM, "half-ready-pool", warmPoolSize=2)
    state = tmp_path / "state"
    command = f"sh {second_slow} --port {{port}} --workspace {{workspace}}"
    cube = start_localcube([pooled], state_dir=state, extra_arguments=["--picod-command", command])
    client = Client(cube.url)
    wait_until(
        lambda: warm_sandboxes(client, "half-ready-pool"),
        "the first warm sandbox listed",
        timeout=10,
    )
    assert cube.stop() == 0
    left = processes_under(state / "sandboxes")
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert left == [], f"the stop left sandbox processes running: {left}"
