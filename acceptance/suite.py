"""The test run: configuration, the target (started here when none is configured, or a
cluster's with platform=kubernetes), the readiness check before any scenario, one World per
scenario, and the closing report."""

from __future__ import annotations

import atexit
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hamcrest import described_as, empty, has_entries

from acceptance.clients import Router, WorkloadManager
from acceptance.evidence import ExchangeLog, register_secret
from acceptance.kubernetes.settings import KUBERNETES_SETTING_NAMES, with_cluster_defaults
from acceptance.matchers import holds_json
from acceptance.measurements import Measurements
from acceptance.own_localcube import OwnLocalcube
from acceptance.platforms import (
    SANDBOX_OBSERVATION,
    Platform,
    make_platform,
    platform_class,
    run_capabilities,
)
from acceptance.polling import eventually
from acceptance.results import RunResults
from acceptance.settings import ConfigError, Settings, load_settings
from acceptance.summary import format_notes
from acceptance.tags import ACTIVE_CATEGORIES, ScenarioGate
from acceptance.transport import NoAnswer, Transport
from acceptance.world import RegisterCleanup, Session, World

if TYPE_CHECKING:
    from acceptance.kubernetes.cluster import Cluster

# The title of the closing note on what keep_on_failure kept.
KEPT = "Kept for inspection"


class TargetNotReady(RuntimeError):
    """The Router or the WorkloadManager is unreachable or not ready."""


@dataclass
class Suite:
    settings: Settings
    gate: ScenarioGate
    localcube: OwnLocalcube | None = None
    leaks: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    sessions: list[Session] = field(default_factory=list)
    measurements: Measurements = field(default_factory=Measurements)
    results: RunResults = field(default_factory=RunResults)
    started: float = field(default_factory=time.monotonic)
    cluster: Cluster | None = None

    @classmethod
    def start(cls, userdata: Mapping[str, str], environ: Mapping[str, str]) -> Suite:
        """Read the settings; with platform=kubernetes connect to the cluster, else start
        localcube if no Router is configured; wait until the target reports ready, and on a
        cluster until the fixtures are usable. Raises ConfigError (ClusterUnreachable
        among them), LocalCubeStartError, TargetNotReady or, for fixtures never usable,
        AssertionError."""
        settings, userdata = read_settings(userdata, environ)
        register_secret(settings.api_token)
        register_secret(settings.second_api_token)
        if settings.platform:
            platform_class(settings.platform)  # an unavailable adapter stops the run now
        cluster = None
        if settings.platform == "kubernetes":
            from acceptance.kubernetes.cluster import Cluster  # loads the kubernetes client

            cluster, settings = Cluster.start(settings, userdata, environ)
        localcube, router_url = None, settings.router_url
        if router_url is None:
            localcube = OwnLocalcube.start(settings)
            router_url = localcube.url
        settings = settings.for_target(
            router_url,
            started_localcube=localcube is not None,
            tokens=localcube.tokens if localcube else None,
        )
        assert settings.platform is not None
        gate = ScenarioGate(
            {category: getattr(settings, category) for category in ACTIVE_CATEGORIES},
            settings.platform,
            run_capabilities(settings, started_localcube=localcube is not None),
        )
        suite = cls(settings, gate, localcube, cluster=cluster)
        # behave may never reach after_all (a broken pipe, an internal error): stop anyway.
        atexit.register(suite.stop)
        try:
            _await_ready(settings)
            if cluster is not None:
                cluster.ensure_fixtures(settings)
        except BaseException:
            suite.stop()
            raise
        return suite

    def new_world(self, register_cleanup: RegisterCleanup) -> World:
        """A World with its own HTTP session and exchange log, closed by the last cleanup."""
        settings = self.settings
        assert settings.router_url and settings.workload_manager_url and settings.platform
        transport = _transport(settings, settings.request_timeout)
        register_cleanup(transport.close)
        return World(
            settings,
            router=Router(transport, settings.router_url, self.measurements),
            workload_manager=WorkloadManager(transport, settings.workload_manager_url),
            platform=self._platform(transport),
            register_cleanup=register_cleanup,
            log=transport.log,
            leaks=self.leaks,
            measurements=self.measurements,
            run_sessions=self.sessions,
        )

    def _platform(self, transport: Transport) -> Platform:
        assert self.settings.platform and self.settings.workload_manager_url
        if self.cluster is not None:
            from acceptance.kubernetes.platform import KubernetesPlatform

            return KubernetesPlatform(transport, self.settings.workload_manager_url, self.cluster)
        return make_platform(
            self.settings.platform, transport, self.settings.workload_manager_url, self.localcube
        )

    def stop(self) -> None:
        """Let go of the cluster, deleting the runtimes the run created there, and stop the
        localcube this run started; once. The localcube ends its sandboxes on SIGTERM. While
        sessions are kept for inspection, the runtimes and the localcube stay instead."""
        if self.cluster is not None:
            cluster, self.cluster = self.cluster, None
            if self.kept:
                self.kept += cluster.kept_notes()
            self.problems += cluster.close(keep_created=bool(self.kept))
        if self.localcube is None:
            return
        localcube, self.localcube = self.localcube, None
        if self.kept:
            self.kept.append(
                f"localcube keeps running at {localcube.url} (pid {localcube.pid}, log "
                f"{localcube.log_path}); stop it with: kill {localcube.pid}"
            )
            return
        code = localcube.stop()
        if code != 0:
            self.problems.append(
                f"localcube exited with code {code} on SIGTERM; its log: {localcube.log_path}"
            )

    def finish(self) -> RunResults:
        """Look for sandboxes the run left, stop the target and return the run's results,
        its notes and latencies included."""
        self.left = self._sandboxes_left()
        self.stop()
        self.results.close(self.measurements, self.notes())
        return self.results

    def elapsed(self) -> float:
        """Seconds since the run started."""
        return time.monotonic() - self.started

    def notes(self) -> dict[str, list[str]]:
        """What the run must tell beside behave's summary, by title."""
        return {
            "Skipped for this target": self.skipped,
            "Could not clean up": self.leaks,
            "Sandboxes left on the target": self.left,
            KEPT: self.kept,
            "Problems stopping the target": self.problems,
        }

    def report(self) -> str:
        """The notes as text; empty when there is nothing to tell."""
        return format_notes(self.notes())

    def assert_nothing_left(self) -> None:
        """Fail the run when a sandbox it created outlived it (`finish` looked)."""
        if self.left:
            raise AssertionError(
                f"{len(self.left)} sandbox(es) the run created are still on the target: "
                + "; ".join(self.left)
            )

    def _sandboxes_left(self) -> list[str]:
        """The run's sessions the platform still shows a sandbox for, once ttl_grace has
        passed; nothing when the platform cannot observe sandboxes or sessions were kept
        for inspection on purpose."""
        capabilities = self.gate.capabilities
        if self.kept or SANDBOX_OBSERVATION not in capabilities or not self.sessions:
            return []
        transport = _transport(self.settings, self.settings.request_timeout)
        platform = self._platform(transport)

        def served() -> list[str]:
            return [
                f"{session}: {sandbox}"
                for session in self.sessions
                if (sandbox := platform.sandbox_of(session.session_id)) is not None
            ]

        try:
            eventually(
                served,
                described_as("no sandbox serving any of the run's sessions", empty()),
                timeout=self.settings.ttl_grace,
                poll=self.settings.poll_interval,
                waiting_for="the sandboxes of the run's sessions to be gone",
            )
            return []
        except AssertionError:
            return served()
        finally:
            transport.close()


def read_settings(
    userdata: Mapping[str, str], environ: Mapping[str, str]
) -> tuple[Settings, dict[str, str]]:
    """The suite's settings, and the userdata with the cluster's defaults filled in when
    platform=kubernetes (the adapter reads its own settings from it). The adapter's settings
    given as -D with another platform are refused rather than ignored. Raises ConfigError."""
    userdata = with_cluster_defaults(userdata, environ)
    suite_userdata = {k: v for k, v in userdata.items() if k not in KUBERNETES_SETTING_NAMES}
    settings = load_settings(suite_userdata, environ)
    stray = sorted(name for name in KUBERNETES_SETTING_NAMES if userdata.get(name))
    if stray and settings.platform != "kubernetes":
        raise ConfigError(
            f"setting {stray[0]} (-D {stray[0]}) applies only with -D platform=kubernetes "
            "(README: Running against a real cluster)"
        )
    return settings, userdata


def _transport(settings: Settings, timeout: float) -> Transport:
    return Transport(timeout=timeout, token=settings.api_token, log=ExchangeLog())


def _await_ready(settings: Settings) -> None:
    """Poll the Router's /health/ready and the WorkloadManager's /health."""
    assert settings.router_url and settings.workload_manager_url
    transport = _transport(settings, min(settings.request_timeout, settings.ready_timeout))
    router = Router(transport, settings.router_url, Measurements())
    workload_manager = WorkloadManager(transport, settings.workload_manager_url)
    checks = [
        (
            f"the Router at {settings.router_url}",
            "router_url / AGENTCUBE_ROUTER_URL",
            router.ready,
            holds_json(
                "GET /health/ready to answer 200 {status: ready}", has_entries(status="ready")
            ),
        ),
        (
            f"the WorkloadManager at {settings.workload_manager_url}",
            "workload_manager_url / AGENTCUBE_WORKLOAD_MANAGER_URL",
            workload_manager.healthy,
            holds_json(
                "GET /health to answer 200 {status: healthy}", has_entries(status="healthy")
            ),
        ),
    ]
    try:
        for what, setting, probe, matcher in checks:
            try:
                eventually(
                    probe,
                    matcher,
                    timeout=settings.ready_timeout,
                    poll=settings.poll_interval,
                    waiting_for=f"{what} to report ready",
                    ignoring=(NoAnswer,),
                )
            except AssertionError as error:
                raise TargetNotReady(
                    f"{what} is unreachable or not ready (check {setting}).\n{error}"
                ) from None
    finally:
        transport.close()
