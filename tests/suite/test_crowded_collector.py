"""An idle session that outlives its timeout on a target crowded past what upstream's
collector looks at in one pass fails saying so, with the number of sessions the target held
(localcube's platform and the Kubernetes one count them, the latter tested in
tests/kubernetes/test_observation.py); an ordinary target's failure is left as it is."""

from __future__ import annotations

from acceptance.core.clients import Router
from acceptance.core.evidence import ExchangeLog
from acceptance.core.measurements import Measurements
from acceptance.core.runtimes import Runtime, RuntimeKind
from acceptance.core.transport import Transport
from acceptance.domain.lifetimes import crowded_collector_note
from acceptance.platforms.localcube import LocalcubePlatform
from tests.conftest import StartLocalCube

ECHO = Runtime(RuntimeKind.AGENT_RUNTIME, "default", "echo-agent")
WARM = Runtime(RuntimeKind.CODE_INTERPRETER, "default", "python-interpreter-warm")


def test_a_crowded_target_is_named_with_the_collectors_limit() -> None:
    """Upstream: pkg/workloadmanager/garbage_collection.go:45,84"""
    note = crowded_collector_note(240)
    assert "The target held 240 sessions" in note, note
    assert "no more than 100 idle candidates per pass" in note, note
    assert "upstream issue #454" in note, note
    assert crowded_collector_note(100) == ""
    assert crowded_collector_note(None) == "", "a platform that cannot count adds nothing"


def test_localcube_counts_the_sessions_it_holds_not_its_warm_sandboxes(
    start_localcube: StartLocalCube,
) -> None:
    cube = start_localcube()
    transport = Transport(timeout=30, log=ExchangeLog())
    platform = LocalcubePlatform(transport, cube.url)
    router = Router(transport, cube.url, Measurements(), warm_pooled=[WARM])
    assert platform.session_count() == 0
    router.invoke(ECHO, "echo", session_id=None, json={"input": "one"})
    router.invoke(WARM, "api/execute", session_id=None, json={"command": ["true"]})
    assert platform.session_count() == 2
