from __future__ import annotations

import socket

import pytest

from acceptance.settings import ConfigError
from acceptance.suite import Suite, TargetNotReady


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_an_unreachable_router_stops_the_run_naming_it_and_its_setting() -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    with pytest.raises(TargetNotReady) as error:
        Suite.start({"router_url": url, "ready_timeout": "500ms"}, {})
    message = str(error.value)
    assert f"the Router at {url} is unreachable or not ready" in message
    assert "check router_url / AGENTCUBE_ROUTER_URL" in message
    assert "Connection refused" in message or "ConnectionError" in message


def test_a_bad_setting_stops_the_run_before_anything_starts() -> None:
    with pytest.raises(ConfigError, match="setting namespace"):
        Suite.start({"namespace": "Bad Namespace"}, {})


def test_a_platform_without_adapter_stops_the_run() -> None:
    with pytest.raises(ConfigError, match="'kubernetes' has no adapter yet"):
        Suite.start({"platform": "kubernetes", "router_url": "http://127.0.0.1:1"}, {})
