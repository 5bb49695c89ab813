"""The test run: configuration, the target (started here when none is configured), the
readiness check before any scenario, one World per scenario, and the closing report."""

from __future__ import annotations

import atexit
from collections.abc import Mapping
from dataclasses import dataclass, field

from hamcrest import has_entries

from acceptance.clients import Router, WorkloadManager
from acceptance.evidence import ExchangeLog, register_secret
from acceptance.matchers import holds_json
from acceptance.measurements import Measurements
from acceptance.platforms import make_platform, platform_class
from acceptance.polling import eventually
from acceptance.runtimes import FIXTURE_RUNTIMES, REPO_ROOT
from acceptance.settings import Settings, load_settings
from acceptance.tags import ACTIVE_CATEGORIES, ScenarioGate
from acceptance.transport import NoAnswer, Transport
from acceptance.world import RegisterCleanup, World
from localcube import embedded

# A short garbage-collection interval lets the idle-timeout scenarios finish in seconds.
LOCALCUBE_GC_INTERVAL = "0.2s"
LOCALCUBE_LOG = REPO_ROOT / "reports" / "localcube.log"


class TargetNotReady(RuntimeError):
    """The Router or the WorkloadManager is unreachable or not ready."""


@dataclass
class Suite:
    settings: Settings
    gate: ScenarioGate
    localcube: embedded.RunningLocalCube | None = None
    leaks: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    measurements: Measurements = field(default_factory=Measurements)

    @classmethod
    def start(cls, userdata: Mapping[str, str], environ: Mapping[str, str]) -> Suite:
        """Read the settings, start localcube if no Router is configured, and wait until
        the target reports ready. Raises ConfigError, LocalCubeStartError or TargetNotReady."""
        settings = load_settings(userdata, environ)
        register_secret(settings.api_token)
        if settings.platform:
            platform_class(settings.platform)  # an unavailable adapter stops the run now
        localcube, router_url = None, settings.router_url
        if router_url is None:
            LOCALCUBE_LOG.unlink(missing_ok=True)
            localcube = embedded.start(
                [FIXTURE_RUNTIMES],
                LOCALCUBE_LOG,
                gc_interval=LOCALCUBE_GC_INTERVAL,
                ready_timeout=settings.ready_timeout,
            )
            router_url = localcube.url
        settings = settings.for_target(router_url, started_localcube=localcube is not None)
        assert settings.platform is not None
        gate = ScenarioGate(
            {category: getattr(settings, category) for category in ACTIVE_CATEGORIES},
            settings.platform,
            platform_class(settings.platform).capabilities,
        )
        suite = cls(settings, gate, localcube)
        # behave may never reach after_all (a broken pipe, an internal error): stop anyway.
        atexit.register(suite.stop)
        try:
            _await_ready(settings)
        except TargetNotReady:
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
            router=Router(transport, settings.router_url),
            workload_manager=WorkloadManager(transport, settings.workload_manager_url),
            platform=make_platform(settings.platform, transport, settings.workload_manager_url),
            register_cleanup=register_cleanup,
            log=transport.log,
            leaks=self.leaks,
            measurements=self.measurements,
        )

    def stop(self) -> None:
        """Stop the localcube this run started, once; it ends its sandboxes on SIGTERM."""
        if self.localcube is not None:
            code, self.localcube = self.localcube.stop(), None
            if code != 0:
                self.problems.append(
                    f"localcube exited with code {code} on SIGTERM; its log: {LOCALCUBE_LOG}"
                )

    def report(self) -> str:
        """What the run must tell beside behave's summary; empty when there is nothing."""
        sections = [
            ("Skipped for this target", self.skipped),
            ("Could not clean up", self.leaks),
            ("Problems stopping the target", self.problems),
        ]
        return "\n".join(
            f"{title} ({len(items)}):\n" + "\n".join(f"  - {item}" for item in items)
            for title, items in sections
            if items
        )


def _transport(settings: Settings, timeout: float) -> Transport:
    return Transport(timeout=timeout, token=settings.api_token, log=ExchangeLog())


def _await_ready(settings: Settings) -> None:
    """Poll the Router's /health/ready and the WorkloadManager's /health."""
    assert settings.router_url and settings.workload_manager_url
    transport = _transport(settings, min(settings.request_timeout, settings.ready_timeout))
    router = Router(transport, settings.router_url)
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
