from __future__ import annotations

import socket

import pytest

from acceptance.platforms import platform_class
from acceptance.settings import PLATFORMS, ConfigError
from acceptance.suite import Suite, TargetNotReady, read_settings


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


def test_every_platform_name_has_an_adapter() -> None:
    assert {name: platform_class(name).name for name in PLATFORMS} == {
        name: name for name in PLATFORMS
    }
    with pytest.raises(ConfigError, match="'other' has no adapter yet"):
        platform_class("other")


def test_a_cluster_setting_without_the_cluster_platform_is_refused_not_ignored() -> None:
    with pytest.raises(ConfigError, match=r"setting port_forward .* only with -D platform=kub"):
        Suite.start({"port_forward": "true"}, {})
    with pytest.raises(ConfigError, match="setting kubeconfig"):
        read_settings({"platform": "none", "kubeconfig": "/k"}, {})
    assert read_settings({"platform": "none", "kubeconfig": ""}, {})[0].platform == "none"


def test_the_cluster_platform_brings_its_defaults_and_keeps_its_settings_apart() -> None:
    userdata = {"platform": "kubernetes", "kube_context": "kind-e2e", "ttl_grace": "2m"}
    settings, cluster_userdata = read_settings(userdata, {"AGENTCUBE_FAIL_FAST": "7s"})
    assert (settings.namespace, settings.ttl_grace, settings.fail_fast) == ("agentcube", 120, 7)
    assert settings.short_session_lifetime == 60
    assert cluster_userdata["kube_context"] == "kind-e2e"
    assert read_settings({}, {})[0].short_session_lifetime == 4  # localcube keeps its own
