from __future__ import annotations

from pathlib import Path

import pytest
from behave.parser import parse_file

from acceptance.core.settings import load_settings
from acceptance.platforms.base import (
    ADMIN,
    AUTH,
    CAPABILITIES,
    OVERLOAD,
    ROUTER_RESTART,
    SANDBOX_KILL,
    SECOND_SUBJECT,
    STATEFUL_INTERPRETER,
    WORKLOAD_MANAGER_SESSIONS,
)
from acceptance.platforms.localcube import LocalcubePlatform, capabilities_of
from acceptance.platforms.target import open_target
from acceptance.run.fixtures import FIXTURES
from acceptance.run.tags import ScenarioGate, is_known_tag

FEATURES = sorted((Path(__file__).resolve().parents[2] / "features").glob("*.feature"))


def tags_in(path: Path) -> set[str]:
    feature = parse_file(str(path))
    tags = set(feature.tags)
    for scenario in feature.walk_scenarios(with_outlines=True):
        tags.update(scenario.tags)
        tags.update(tag for examples in getattr(scenario, "examples", []) for tag in examples.tags)
    return tags


@pytest.mark.parametrize("path", FEATURES, ids=lambda path: path.name)
def test_features_use_only_the_tag_vocabulary(path: Path) -> None:
    unknown = sorted(tag for tag in tags_in(path) if not is_known_tag(tag))
    assert not unknown, f"{path.name} uses tags outside acceptance/run/tags.py: {unknown}"


@pytest.mark.parametrize(
    "tag",
    ["smoke", "load", "use.with_agentcube_release=main", "not.with_agentcube_release=pre-460"]
    + [f"requires.{capability}" for capability in CAPABILITIES]
    + list(FIXTURES),
)
def test_known_tags(tag: str) -> None:
    assert is_known_tag(tag)


@pytest.mark.parametrize(
    "tag",
    [
        "fast",
        "use.with_agentcube_release=0.3",
        "use.with_agentcube_release=auto",  # a setting's value, resolved before any scenario
        "use.with_interpreter_mode=stateful",
        "use.with_os=linux",
        "requires.gpu",
        "fixture.unlimited-router",
        "fixture",
    ],
)
def test_unknown_tags(tag: str) -> None:
    assert not is_known_tag(tag)


def gate(release: str = "main", platform: str = "none", capabilities=()) -> ScenarioGate:
    return ScenarioGate({"agentcube_release": release}, platform, capabilities)


def test_plain_tags_never_skip() -> None:
    assert gate().skip_reason(["smoke", "code-interpreter"]) is None


def test_an_active_tag_for_another_value_skips_with_the_setting_to_change() -> None:
    reason = gate("main").skip_reason(["use.with_agentcube_release=pre-460"])
    assert reason == (
        "@use.with_agentcube_release=pre-460 does not fit agentcube_release=main "
        "(choose with -D agentcube_release=...)"
    )
    assert gate("pre-460").skip_reason(["use.with_agentcube_release=pre-460"]) is None
    assert gate("pre-460").skip_reason(["not.with_agentcube_release=pre-460"]) is not None


def test_without_a_stateful_interpreter_its_scenarios_are_skipped_saying_why() -> None:
    reason = gate().skip_reason(["requires.stateful-interpreter"])
    assert reason is not None and "set stateful_interpreter" in reason
    assert (
        gate(capabilities=["stateful-interpreter"]).skip_reason(["requires.stateful-interpreter"])
        is None
    )


def test_a_release_before_pr_460_skips_what_needs_it_with_the_reason() -> None:
    """Upstream's per-session ttl and SESSION_NOT_FOUND code came with PR #460."""
    older = ScenarioGate({"agentcube_release": "pre-460"}, "none", ())
    reason = older.skip_reason(["not.with_agentcube_release=pre-460"])
    assert reason is not None and "agentcube_release=pre-460" in reason
    current = ScenarioGate({"agentcube_release": "main"}, "none", ())
    assert current.skip_reason(["not.with_agentcube_release=pre-460"]) is None
    settings = load_settings({"agentcube_release": "pre-460"}, {})
    assert not settings.since_pr_460
    assert load_settings({"agentcube_release": "main"}, {}).since_pr_460


def test_a_missing_capability_skips_and_names_the_platform() -> None:
    reason = gate(platform="none").skip_reason(["requires.runtime-admin"])
    assert reason is not None
    assert "runtime-admin" in reason and "platform 'none' cannot" in reason
    assert (
        gate(platform="localcube", capabilities=CAPABILITIES).skip_reason(
            ["requires.runtime-admin", "requires.sandbox-observation"]
        )
        is None
    )


def test_a_capability_of_the_target_skips_with_how_to_get_it() -> None:
    reason = gate(platform="localcube", capabilities={"runtime-admin"}).skip_reason(
        ["requires.second-subject"]
    )
    assert reason is not None and "set api_token and second_api_token" in reason
    reason = gate(platform="localcube").skip_reason(["requires.workload-manager-sessions"])
    assert reason is not None and "set admin_api_token" in reason
    reason = gate(platform="localcube").skip_reason(["requires.overload"])
    assert reason is not None and "-D max_concurrent_requests=N" in reason


def test_a_localcube_offers_kills_on_this_machine_and_more_when_the_suite_started_it() -> None:
    remote = capabilities_of("http://localcube.example:8081", own=False)
    assert remote == LocalcubePlatform.capabilities
    assert SANDBOX_KILL in capabilities_of("http://127.0.0.1:8081", own=False)
    own = capabilities_of("http://127.0.0.1:8081", own=True)
    assert {ROUTER_RESTART, OVERLOAD, SANDBOX_KILL} <= own and AUTH not in own


def test_the_target_as_configured_adds_what_its_tokens_and_limit_allow() -> None:
    userdata = {"platform": "none", "router_url": "http://router.test"}

    def capabilities(**environ: str) -> frozenset[str]:
        return open_target(userdata, environ)[1].capabilities

    # No token: the Router checks none, so sessions opened at the WorkloadManager are usable.
    assert capabilities() == {WORKLOAD_MANAGER_SESSIONS}
    assert capabilities(AGENTCUBE_API_TOKEN="a") == {AUTH}
    assert capabilities(AGENTCUBE_API_TOKEN="a", AGENTCUBE_SECOND_API_TOKEN="b") == {
        AUTH,
        SECOND_SUBJECT,
    }
    assert capabilities(AGENTCUBE_API_TOKEN="a", AGENTCUBE_ADMIN_API_TOKEN="c") == {
        AUTH,
        ADMIN,
        WORKLOAD_MANAGER_SESSIONS,
    }
    assert ADMIN not in capabilities(AGENTCUBE_ADMIN_API_TOKEN="c")  # no token is checked
    assert OVERLOAD in capabilities(AGENTCUBE_MAX_CONCURRENT_REQUESTS="50")
    assert STATEFUL_INTERPRETER in capabilities(AGENTCUBE_STATEFUL_INTERPRETER="kernels")
