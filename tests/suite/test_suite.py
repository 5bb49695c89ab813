"""Starting the run: settings, the target they resolve to, and the one start path under
the suite's runner and under behave's own."""

from __future__ import annotations

import pytest

from acceptance.core.settings import ConfigError
from acceptance.platforms.target import open_target, read_settings
from acceptance.run.suite import Suite
from tests.suite.commands import run_behave, run_module


def test_a_bad_setting_stops_the_run_before_anything_starts() -> None:
    with pytest.raises(ConfigError, match="setting namespace"):
        Suite.start({"namespace": "Bad Namespace"}, {})


def test_urls_given_make_an_http_only_target_unless_the_platform_is_named() -> None:
    """The Target is resolved once: URLs never None, the WorkloadManager's defaulting to the
    Router's, the platform named or none."""
    userdata = {"router_url": "http://router.test"}
    target = open_target(userdata, {})[1]
    assert (target.router_url, target.workload_manager_url) == ("http://router.test",) * 2
    assert target.platform_name == "none"
    userdata = {**userdata, "platform": "localcube", "workload_manager_url": "http://wm.test"}
    target = open_target(userdata, {})[1]
    assert (target.workload_manager_url, target.platform_name) == ("http://wm.test", "localcube")


def test_only_the_localcube_platform_starts_a_localcube() -> None:
    with pytest.raises(ConfigError, match="platform=none needs router_url"):
        Suite.start({"platform": "none"}, {})


def test_a_target_keeps_its_tokens_out_of_its_repr() -> None:
    environ = {"AGENTCUBE_API_TOKEN": "hunter2", "AGENTCUBE_SECOND_API_TOKEN": "hunter3"}
    userdata = {"router_url": "http://router.test"}
    target = open_target(userdata, environ)[1]
    assert (target.api_token, target.second_api_token) == ("hunter2", "hunter3")
    assert "hunter2" not in repr(target) and "hunter3" not in repr(target)


def test_a_cluster_setting_without_the_cluster_platform_is_refused_not_ignored() -> None:
    with pytest.raises(ConfigError, match=r"setting port_forward .* only with -D platform=kub"):
        Suite.start({"port_forward": "true"}, {})
    with pytest.raises(ConfigError, match="setting kubeconfig"):
        read_settings({"platform": "none", "kubeconfig": "/k"}, {})
    assert read_settings({"platform": "none", "kubeconfig": ""}, {}).suite.platform == "none"


def test_the_cluster_platform_brings_its_defaults_and_keeps_its_settings_apart() -> None:
    userdata = {"platform": "kubernetes", "kube_context": "kind-e2e", "ttl_grace": "2m"}
    run = read_settings(userdata, {"AGENTCUBE_FAIL_FAST": "7s"})
    settings = run.suite
    assert (settings.namespace, settings.ttl_grace, settings.fail_fast) == ("agentcube", 120, 7)
    assert settings.short_session_lifetime == 60
    assert run.adapter_settings.kube_context == "kind-e2e"
    assert read_settings({}, {}).suite.short_session_lifetime == 3  # localcube keeps its own


BAD_SETTING = ("--tags=@smoke", "-D", "namespace=Bad Namespace")


def test_a_start_that_fails_under_dev_suite_is_a_clean_stop() -> None:
    """acceptance.run.main starts the suite before behave runs: behave adds nothing."""
    status, output = run_behave(*BAD_SETTING, timeout=60)
    assert status == 1 and "setting namespace" in output, output
    assert "The run stopped before any scenario (1 problem to fix):" in output
    assert "HOOK-ERROR" not in output and "ABORTED" not in output, output
    assert "scenarios passed" not in output and "USING RUNNER" not in output, output


def test_a_start_that_fails_under_plain_behave_is_a_hook_error() -> None:
    """Plain behave, as behavex's workers run it: the same start stops the run in
    before_all, as a hook error, before any scenario."""
    status, output = run_module("behave", "--no-color", *BAD_SETTING, timeout=60)
    assert status != 0 and "setting namespace" in output, output
    assert "HOOK-ERROR in before_all" in output, output
