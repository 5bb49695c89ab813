"""The one place that chooses the target of a run.

``read_settings`` reads the suite's settings (with a cluster's defaults under
``platform=kubernetes``); ``resolve_target`` then connects to the cluster, starts localcube
when no Router is configured, or takes the URLs as given, and returns the Target every other
module receives: URLs that are never None, the tokens, the platform and what the run can do.
"""

from __future__ import annotations

from collections.abc import Mapping

from acceptance.core.evidence import register_secret
from acceptance.core.runtimes import STATEFUL_FIXTURE
from acceptance.core.settings import ConfigError, Settings, load_settings
from acceptance.platforms.base import (
    ADMIN,
    AUTH,
    OVERLOAD,
    RUNTIME_ADMIN,
    SECOND_SUBJECT,
    SHORT_TIMEOUT_AGENT,
    STATEFUL_INTERPRETER,
    WORKLOAD_MANAGER_SESSIONS,
    Target,
)
from acceptance.platforms.kubernetes.settings import (
    KUBERNETES_SETTING_NAMES,
    with_cluster_defaults,
)
from acceptance.platforms.localcube import LocalcubeTarget, capabilities_of
from acceptance.platforms.none import HttpOnlyTarget
from acceptance.platforms.own_localcube import OwnLocalcube


def read_settings(
    userdata: Mapping[str, str], environ: Mapping[str, str]
) -> tuple[Settings, dict[str, str]]:
    """The suite's settings, and the userdata with the cluster's defaults filled in when
    platform=kubernetes (the adapter reads its own settings from it), or the localcube
    fixture's stateful interpreter when the suite starts localcube. The adapter's settings
    given as -D with another platform are refused rather than ignored. Raises ConfigError."""
    userdata = with_own_localcube_defaults(with_cluster_defaults(userdata, environ), environ)
    suite_userdata = {k: v for k, v in userdata.items() if k not in KUBERNETES_SETTING_NAMES}
    settings = load_settings(suite_userdata, environ)
    stray = sorted(name for name in KUBERNETES_SETTING_NAMES if userdata.get(name))
    if stray and settings.platform != "kubernetes":
        raise ConfigError(
            f"setting {stray[0]} (-D {stray[0]}) applies only with -D platform=kubernetes "
            "(docs/kubernetes.md)"
        )
    return settings, userdata


def with_own_localcube_defaults(
    userdata: Mapping[str, str], environ: Mapping[str, str]
) -> dict[str, str]:
    """The userdata, naming the fixture's stateful interpreter when the suite starts
    localcube (no Router configured, no other platform) with its own PicoD, which serves it
    (a PicoD of one's own, `picod_command`, has no kernel), and none is configured."""

    def given(name: str, variable: str) -> str | None:
        return userdata.get(name) or environ.get(variable)

    if (
        given("router_url", "AGENTCUBE_ROUTER_URL")
        or given("platform", "AGENTCUBE_PLATFORM") not in (None, "localcube")
        or given("stateful_interpreter", "AGENTCUBE_STATEFUL_INTERPRETER")
        or given("picod_command", "AGENTCUBE_PICOD_COMMAND")
    ):
        return dict(userdata)
    return {**userdata, "stateful_interpreter": STATEFUL_FIXTURE}


def resolve_target(
    settings: Settings, userdata: Mapping[str, str], environ: Mapping[str, str]
) -> Target:
    """The run's target; raises ConfigError (ClusterUnreachable among them) or
    TargetStartError. What it started or opened is the Target's to close."""
    target = _platform_target(settings, userdata, environ)
    for token in (target.api_token, target.second_api_token, target.admin_api_token):
        register_secret(token)
    register_secret(settings.workload_manager_token)
    target.capabilities = target.capabilities | _configured_capabilities(settings, target)
    return target


def _platform_target(
    settings: Settings, userdata: Mapping[str, str], environ: Mapping[str, str]
) -> Target:
    tokens = (settings.api_token, settings.second_api_token, settings.admin_api_token)
    if settings.platform == "kubernetes":
        # Imported here: it loads the kubernetes client, which no other run needs.
        from acceptance.platforms.kubernetes.platform import ClusterTarget

        return ClusterTarget.open(settings, userdata, environ)
    if settings.router_url is None:
        if settings.platform not in (None, "localcube"):
            raise ConfigError(
                f"setting platform={settings.platform} needs router_url: the suite starts "
                "a localcube only as platform localcube"
            )
        own = OwnLocalcube.start(settings)
        return LocalcubeTarget(
            own.url, own.url, *own.tokens, capabilities_of(own.url, own=True), own=own
        )
    router_url = settings.router_url
    workload_manager_url = settings.workload_manager_url or router_url
    if settings.platform == "localcube":
        return LocalcubeTarget(
            router_url, workload_manager_url, *tokens, capabilities_of(router_url, own=False)
        )
    return HttpOnlyTarget(router_url, workload_manager_url, *tokens, frozenset())


def _configured_capabilities(settings: Settings, target: Target) -> frozenset[str]:
    """What the target as configured adds to its platform: the tokens it was given, a
    Router whose concurrency limit is declared, a stateful interpreter, and a runtime with
    a short idle timeout (deployed, or applied for the scenario). Sessions opened at the
    WorkloadManager can be used through the Router by an admin, or by anyone where no token
    is required; any session by an admin."""
    available = set()
    if target.api_token:
        available.add(AUTH)
        if target.second_api_token:
            available.add(SECOND_SUBJECT)
    if target.admin_api_token or not target.api_token:
        available.add(WORKLOAD_MANAGER_SESSIONS)
    if target.api_token and target.admin_api_token:
        available.add(ADMIN)
    if settings.max_concurrent_requests:
        available.add(OVERLOAD)
    if settings.stateful_interpreter:
        available.add(STATEFUL_INTERPRETER)
    if settings.short_timeout_agent or RUNTIME_ADMIN in target.capabilities:
        available.add(SHORT_TIMEOUT_AGENT)
    return frozenset(available)
