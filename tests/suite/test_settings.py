from __future__ import annotations

from pathlib import Path

import pytest

from acceptance.core.runtimes import STATEFUL_FIXTURE
from acceptance.core.settings import SETTINGS, ConfigError, load_settings
from acceptance.platforms.target import open_target, read_settings
from agentcube_contract.names import DNS_LABEL_RULE, DNS_SUBDOMAIN_RULE
from docgen.configuration_table import settings_table

BAD_VALUES = {
    "router_url": "localhost:8081",
    "workload_manager_url": "ftp://wm.example",
    "namespace": "Not_A_Namespace",
    "neighbour_namespace": "not.a.label",
    "api_token": "two words",
    "second_api_token": "tab\tinside",
    "admin_api_token": "new\nline",
    "no_role_api_token": "two words",
    "expired_api_token": "two words",
    "other_audience_api_token": "two words",
    "other_issuer_api_token": "two words",
    "token_dir": "/no/such/directory",
    "workload_manager_token": "a space",
    "platform": "Docker Desktop",
    "echo_agent": "Echo Agent",
    "python_interpreter": "-leading-dash",
    "warm_interpreter": "under_score",
    "stateful_interpreter": "Stateful!",
    "short_timeout_agent": "Short TTL",
    "request_timeout": "30",
    "ready_timeout": "-1s",
    "short_session_timeout": "0s",
    "ttl_grace": "soon",
    "gc_interval": "every pass",
    "poll_interval": "1 second",
    "short_session_lifetime": "forever",
    "long_task_duration": "0ms",
    "stream_event_spacing": "-1s",
    "router_read_timeout": "thirty",
    "fail_fast": "5",
    "sandbox_gone_timeout": "never",
    "answer_allowance": "-3s",
    "clock_allowance": "a bit",
    "warm_pool_timeout": "0s",
    "burst_gather_timeout": "30",
    "overload_hold": "two seconds",
    "load_sessions": "many",
    "load_rate": "0",
    "load_required_share": "0.9",
    "max_concurrent_requests": "0",
    "agentcube_release": "0.3",
    "keep_on_failure": "yes",
    "must_authenticate": "always",
    "reports_dir": "/dev/null",
    "results_dir": "/dev/null",
}


def test_every_setting_has_a_bad_value_case() -> None:
    assert set(BAD_VALUES) == {setting.name for setting in SETTINGS}


def test_defaults_when_nothing_is_configured() -> None:
    settings = load_settings({}, {})
    assert settings.router_url is None
    assert settings.namespace == "default"
    assert settings.stateful_interpreter is None
    assert (settings.load_sessions, settings.load_rate) == (100, 10)
    assert settings.load_required_share == 1.0
    assert settings.echo_agent == "echo-agent"
    assert settings.short_session_timeout == 2.0
    assert settings.poll_interval == pytest.approx(0.1)
    assert settings.agentcube_release == "auto"  # the preflight detects it


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.name)
def test_a_bad_userdata_value_names_the_setting(setting) -> None:
    with pytest.raises(ConfigError) as error:
        load_settings({setting.name: BAD_VALUES[setting.name]}, {})
    if setting.secret:
        assert f"setting {setting.name} is read from {setting.env} only" in str(error.value)
    else:
        assert f"setting {setting.name} (-D {setting.name})" in str(error.value)


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.name)
def test_a_bad_environment_value_names_the_variable(setting) -> None:
    with pytest.raises(ConfigError) as error:
        load_settings({}, {setting.env: BAD_VALUES[setting.name]})
    assert f"setting {setting.name} ({setting.env})" in str(error.value)


@pytest.mark.parametrize(
    ("name", "rule"),
    [("namespace", DNS_LABEL_RULE), ("warm_interpreter", DNS_SUBDOMAIN_RULE)],
)
def test_a_bad_kubernetes_name_is_refused_with_the_rule_it_breaks(name: str, rule: str) -> None:
    with pytest.raises(ConfigError) as error:
        load_settings({name: BAD_VALUES[name]}, {})
    assert f"{BAD_VALUES[name]!r} is not a valid Kubernetes" in str(error.value)
    assert f"({rule})" in str(error.value), str(error.value)


def test_a_bad_token_is_not_echoed() -> None:
    with pytest.raises(ConfigError) as error:
        load_settings({}, {"AGENTCUBE_API_TOKEN": "secret with spaces"})
    assert "secret" not in str(error.value)


def test_userdata_wins_over_the_environment_and_empty_means_unset() -> None:
    settings = load_settings(
        {"namespace": "team-a", "ttl_grace": ""},
        {"AGENTCUBE_NAMESPACE": "team-b", "AGENTCUBE_TTL_GRACE": "10s"},
    )
    assert settings.namespace == "team-a"
    assert settings.ttl_grace == 10.0


def test_an_unknown_userdata_name_is_refused() -> None:
    with pytest.raises(ConfigError, match="unknown setting -D routerurl"):
        load_settings({"routerurl": "http://x"}, {})


def test_userdata_of_behavex_and_of_behave_formatters_is_left_to_them() -> None:
    userdata = {"worker_id": "3", "behave.formatter.html-pretty.show_summary": "true"}
    assert load_settings(userdata, {}).keep_on_failure is False


def test_urls_lose_a_trailing_slash() -> None:
    settings = load_settings({"router_url": "http://router.test:8081/"}, {})
    assert settings.router_url == "http://router.test:8081"


def test_the_tokens_stay_out_of_the_settings_repr() -> None:
    environ = {"AGENTCUBE_API_TOKEN": "hunter2", "AGENTCUBE_SECOND_API_TOKEN": "hunter3"}
    settings = load_settings({}, environ)
    assert "hunter2" not in repr(settings) and "hunter3" not in repr(settings)


def test_the_table_has_a_row_per_setting() -> None:
    table = settings_table()
    for setting in SETTINGS:
        assert f"| `{setting.name}` | `{setting.env}` |" in table


@pytest.mark.parametrize("name", ["api_token", "second_api_token"])
def test_a_token_given_with_d_is_refused_without_echoing_it(name: str) -> None:
    with pytest.raises(ConfigError) as error:
        load_settings({name: "hunter2"}, {})
    assert "would show in shell history and process lists" in str(error.value)
    assert "hunter2" not in str(error.value)


def test_a_picod_command_is_the_localcube_adapters_and_needs_the_localcube_it_starts() -> None:
    command = "/opt/picod --port {port} --workspace {workspace}"
    run = read_settings({"picod_command": command}, {})
    assert (run.adapter.name, run.adapter_settings.picod_command) == ("localcube", command)
    given = {"picod_command": command, "router_url": "http://router:8081"}
    with pytest.raises(ConfigError, match="picod_command applies only to the localcube"):
        open_target({**given, "platform": "localcube"}, {})
    for other in ({}, {"platform": "kubernetes"}):  # a Router given: platform none
        with pytest.raises(ConfigError, match=r"picod_command .* only with -D platform=localcube"):
            read_settings({**given, **other}, {})
    with pytest.raises(ConfigError, match=r"picod_command .*not a command localcube can run"):
        read_settings({"picod_command": "picod --port {prot}"}, {})


@pytest.mark.parametrize(("text", "share"), [("90%", 0.9), ("100%", 1.0), ("12.5%", 0.125)])
def test_a_share_is_a_percentage(text: str, share: float) -> None:
    assert load_settings({"load_required_share": text}, {}).load_required_share == share


@pytest.mark.parametrize("text", ["0%", "101%", "90", "x%"])
def test_a_share_outside_0_to_100_percent_is_refused(text: str) -> None:
    with pytest.raises(ConfigError, match="load_required_share"):
        load_settings({"load_required_share": text}, {})


@pytest.mark.parametrize(
    ("userdata", "environ", "expected"),
    [
        ({}, {}, STATEFUL_FIXTURE),  # the suite starts localcube, which serves it
        ({"platform": "localcube"}, {}, STATEFUL_FIXTURE),
        ({"stateful_interpreter": "kernel-one"}, {}, "kernel-one"),
        ({}, {"AGENTCUBE_STATEFUL_INTERPRETER": "kernel-two"}, "kernel-two"),
        ({"router_url": "http://router.example"}, {}, None),  # any other target: unset
        ({}, {"AGENTCUBE_ROUTER_URL": "http://router.example"}, None),
        ({"platform": "kubernetes"}, {}, None),
        ({"picod_command": "/opt/picod --port {port}"}, {}, None),  # one's own PicoD: no kernel
    ],
)
def test_only_the_localcube_the_suite_starts_names_a_stateful_interpreter_unasked(
    userdata: dict[str, str], environ: dict[str, str], expected: str | None
) -> None:
    settings = read_settings(userdata, environ).suite
    assert settings.stateful_interpreter == expected


def test_a_token_dir_fills_the_token_settings_the_environment_leaves_unset(
    tmp_path: Path,
) -> None:
    (tmp_path / "api_token").write_text("from-file\n")
    (tmp_path / "expired_api_token").write_text("expired-from-file")
    (tmp_path / "unrelated").write_text("ignored")
    settings = load_settings(
        {"token_dir": str(tmp_path)}, {"AGENTCUBE_EXPIRED_API_TOKEN": "from-environment"}
    )
    assert settings.api_token == "from-file"
    assert settings.expired_api_token == "from-environment"
    assert settings.second_api_token is None


@pytest.mark.parametrize(
    ("content", "expected"), [("", "is empty"), ("two words", "must not contain whitespace")]
)
def test_a_token_file_without_a_usable_token_is_refused_naming_it(
    tmp_path: Path, content: str, expected: str
) -> None:
    (tmp_path / "api_token").write_text(content)
    with pytest.raises(ConfigError, match=expected) as error:
        load_settings({"token_dir": str(tmp_path)}, {})
    assert str(tmp_path / "api_token") in str(error.value)
    assert content not in str(error.value) or not content


def test_an_unreadable_token_file_is_refused_naming_it(tmp_path: Path) -> None:
    (tmp_path / "api_token").mkdir()
    with pytest.raises(ConfigError, match=r"cannot read .*api_token"):
        load_settings({"token_dir": str(tmp_path)}, {})
