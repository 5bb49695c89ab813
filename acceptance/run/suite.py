"""The test run: its settings and target, the preflight before any scenario, one World per
scenario, and the closing report."""

from __future__ import annotations

import atexit
import time
from collections.abc import Mapping
from contextlib import closing
from dataclasses import dataclass, field, replace

from hamcrest import described_as, empty

from acceptance.core.evidence import ExchangeLog
from acceptance.core.polling import eventually
from acceptance.core.settings import Settings
from acceptance.core.transport import Transport
from acceptance.domain.world import RegisterCleanup, RunLedger, World
from acceptance.platforms.base import (
    SANDBOX_OBSERVATION,
    TOKEN_CAPABILITIES,
    TOKENS_IGNORED,
    Target,
    without_token_checks,
)
from acceptance.platforms.target import open_target
from acceptance.run.preflight import Preflight, Release
from acceptance.run.results import RunResults
from acceptance.run.tags import ACTIVE_CATEGORIES, ScenarioGate

# The title of the closing note on what keep_on_failure kept.
KEPT = "Kept for inspection"


@dataclass
class Suite:
    settings: Settings  # agentcube_release resolved once the preflight has found the release
    target: Target
    gate: ScenarioGate = field(init=False)  # made once the release is known
    release: Release = field(init=False)
    ledger: RunLedger = field(default_factory=RunLedger)
    skipped: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    results: RunResults = field(default_factory=RunResults)
    started: float = field(default_factory=time.monotonic)
    preflight: str = ""
    _closed: bool = False

    @classmethod
    def start(
        cls, userdata: Mapping[str, str], environ: Mapping[str, str], *, timed: bool = True
    ) -> Suite:
        """Read the settings, open the target, check it (the preflight) and let it prepare;
        `timed`: fit the short timings to a cold start. Raises ConfigError,
        TargetStartError, PreflightFailed or, for fixtures never usable, AssertionError."""
        run, target = open_target(userdata, environ)
        settings = run.suite
        suite = cls(settings, target)
        # behave may never reach after_all (a broken pipe, an internal error): stop anyway.
        atexit.register(suite.stop)
        try:
            with closing(Preflight(settings, target)) as preflight:
                # Run as the release found, against a target that checks tokens or not.
                suite.release = preflight.check_target()
                suite.settings = replace(settings, agentcube_release=suite.release.name)
                ignored = target.api_token is not None and not preflight.checks_tokens
                suite.gate = ScenarioGate(
                    {category: getattr(suite.settings, category) for category in ACTIVE_CATEGORIES},
                    target.platform_name,
                    without_token_checks(target.capabilities) if ignored else target.capabilities,
                    dict.fromkeys(TOKEN_CAPABILITIES, TOKENS_IGNORED) if ignored else None,
                )
                target.prepare(suite.settings)
                preflight.check_runtimes()
                suite.settings = preflight.read_told_settings(suite.settings, run.given)
                if timed:
                    suite.settings = preflight.fit_timings(suite.settings, run.given)
                suite.preflight = preflight.account()
        except BaseException:
            suite.stop()
            raise
        return suite

    def new_world(self, register_cleanup: RegisterCleanup) -> World:
        """A World with its own HTTP session and exchange log, closed by the last cleanup."""
        transport = self._transport()
        register_cleanup(transport.close)
        return World(self.settings, self.target, transport, register_cleanup, self.ledger)

    def stop(self) -> None:
        """Let go of the target, once, keeping what sessions kept for inspection need."""
        if self._closed:
            return
        self._closed = True
        closing = self.target.close(keep=bool(self.kept))
        self.problems += closing.problems
        self.kept += closing.kept

    def finish(self) -> RunResults:
        """Look for sandboxes the run left, stop the target and return the run's results."""
        self.left = self._sandboxes_left()
        self.stop()
        self.results.latencies = self.ledger.measurements.samples()
        self.results.notes = {  # what the run must tell beside the summary, by title
            "Skipped for this target": self.skipped,
            "Could not clean up": self.ledger.leaks,
            "Not observed on this target": self.ledger.unobserved,
            "Measured under load": self.ledger.measured,
            "Sandboxes left on the target": self.left,
            KEPT: self.kept,
            "Problems stopping the target": self.problems,
        }
        self.results.release = self.release.account()
        return self.results

    def assert_nothing_left(self) -> None:
        """Fail the run when a sandbox it created outlived it (`finish` looked)."""
        if self.left:
            raise AssertionError(
                f"{len(self.left)} sandbox(es) the run created are still on the target: "
                + "; ".join(self.left)
            )

    def _transport(self) -> Transport:
        return Transport(timeout=self.settings.request_timeout, log=ExchangeLog())

    def _sandboxes_left(self) -> list[str]:
        """The run's sessions the platform still shows a sandbox for after ttl_grace, unless
        it cannot observe sandboxes or sessions were kept on purpose."""
        if (
            self.kept
            or SANDBOX_OBSERVATION not in self.target.capabilities
            or not self.ledger.sessions
        ):
            return []
        transport = self._transport()
        platform = self.target.platform(transport)

        def served() -> list[str]:
            sandboxes = platform.sandboxes_of(s.session_id for s in self.ledger.sessions)
            return [
                f"{session}: {sandboxes[session.session_id]}"
                for session in self.ledger.sessions
                if session.session_id in sandboxes
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
