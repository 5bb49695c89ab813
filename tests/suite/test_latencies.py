"""The latencies a run reports keep apart what must not be mixed: a call in a session, a
lone first call that starts a sandbox cold, one served from a warm pool, and first calls
made by many callers at once. Measured against a real localcube."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from acceptance.core.clients import (
    CALL_IN_SESSION,
    FIRST_CALL_COLD,
    FIRST_CALL_WARM,
    Router,
    session_id_of,
)
from acceptance.core.evidence import ExchangeLog
from acceptance.core.measurements import Measurements
from acceptance.core.runtimes import Runtime, RuntimeKind
from acceptance.core.transport import Transport
from localcube import embedded

ECHO = Runtime(RuntimeKind.AGENT_RUNTIME, "default", "echo-agent")
WARM = Runtime(RuntimeKind.CODE_INTERPRETER, "default", "python-interpreter-warm")


@pytest.fixture
def measurements() -> Measurements:
    return Measurements()


@pytest.fixture
def router(shared_cube: embedded.RunningLocalCube, measurements: Measurements) -> Router:
    transport = Transport(timeout=30, log=ExchangeLog())
    return Router(transport, shared_cube.url, measurements, warm_pooled=[WARM])


def test_cold_warm_loaded_and_in_session_calls_are_measured_apart(
    router: Router, measurements: Measurements
) -> None:
    first = router.invoke(ECHO, "echo", session_id=None, json={"input": "one"})
    router.invoke(ECHO, "echo", session_id=session_id_of(first), json={"input": "two"})
    router.invoke(WARM, "api/execute", session_id=None, json={"command": ["true"]})
    with router.at_once(3), ThreadPoolExecutor(3) as callers:
        list(callers.map(lambda n: router.invoke(ECHO, "echo", session_id=None, json={}), "abc"))
    samples = measurements.samples()
    assert {name: len(seconds) for name, seconds in samples.items()} == {
        FIRST_CALL_COLD: 1,
        CALL_IN_SESSION: 1,
        FIRST_CALL_WARM: 1,
        f"{FIRST_CALL_COLD}, 3 at once": 3,
    }


def test_a_refused_call_measures_nothing(router: Router, measurements: Measurements) -> None:
    missing = Runtime(RuntimeKind.AGENT_RUNTIME, "default", "no-such-agent")
    assert router.invoke(missing, "echo", session_id=None, json={}).status_code == 404
    assert measurements.samples() == {}
