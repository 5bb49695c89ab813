"""Ending sandboxes: off the event loop, and a DELETE answered 200 means the processes are gone.

How fast /health/ready answers meanwhile is measured, not asserted (a loaded machine would
break any bound): bench/ready_while_deleting.py, with issue 9's 50 ms."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import aiohttp

from tests.localcube.support import Client, open_sessions, process_gone

SESSIONS = 20


async def delete_all_while_probing(
    url: str, sandboxes: list[dict]
) -> tuple[list[tuple[int, bool]], list[float]]:
    """DELETE every session at once while /health/ready is probed one call after another.

    Returns, per DELETE, its status and whether the sandbox process was gone when it
    answered, and every probe's latency in seconds."""
    latencies: list[float] = []
    async with aiohttp.ClientSession() as deleter, aiohttp.ClientSession() as prober:
        async with prober.get(f"{url}/health/ready") as warm_up:  # open the probe's connection
            assert warm_up.status == 200

        async def delete(sandbox: dict) -> tuple[int, bool]:
            path = f"/v1/agent-runtime/sessions/{sandbox['sessionId']}"
            async with deleter.delete(url + path) as answer:
                return answer.status, process_gone(sandbox["pid"])

        deletes = asyncio.gather(*(delete(sandbox) for sandbox in sandboxes))
        while not deletes.done():
            started = time.perf_counter()
            async with prober.get(f"{url}/health/ready") as answer:
                assert answer.status == 200
                await answer.read()
            latencies.append(time.perf_counter() - started)
            await asyncio.sleep(0.002)
        return await deletes, latencies


def test_health_ready_answers_while_20_sessions_are_deleted(start_localcube) -> None:
    cube = start_localcube()
    client = Client(cube.url)
    sandboxes = open_sessions(client, SESSIONS)

    answers, latencies = asyncio.run(delete_all_while_probing(cube.url, sandboxes))

    assert answers == [(200, True)] * SESSIONS, "each DELETE answers 200 once its sandbox ended"
    # Answered, one after another, before the deletes were: teardown does not hold the loop.
    assert len(latencies) >= 3, "the probe ran while the sessions were being deleted"
    assert not any(Path(box["workspace"]).exists() for box in sandboxes)
