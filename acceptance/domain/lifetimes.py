"""How sessions end: the idle timeout (sessionTimeout) and the hard lifetime (the runtime's
maxSessionDuration, or the ttl a session asked for), watched through the Router and, where
touching the session would count as activity, through the platform."""

from __future__ import annotations

import math
import time
import uuid

import requests
from hamcrest import assert_that, described_as, equal_to, is_not, none

from acceptance.core import matchers
from acceptance.core.matchers import Answer
from acceptance.core.polling import consistently, eventually, waiting
from acceptance.core.runtimes import Role, RuntimeKind, derive_manifest, fixture_manifest
from acceptance.core.settings import Settings
from acceptance.domain.calls import TOUCH_TEXT
from acceptance.domain.resilience import SandboxGone
from acceptance.domain.sessions import echoed_in, served_by_one_sandbox
from acceptance.domain.world import Session, World, required, sandbox_serving
from acceptance.platforms.base import SANDBOX_OBSERVATION, Platform, Sandbox, Target
from agentcube_contract.session import SESSION_NOT_FOUND

# The fixture the derived agents come from (fixtures/runtimes/echo-agent.yaml).
ECHO_AGENT_FIXTURE = "echo-agent"


# upstream's collector looks at no more than this many idle candidates per pass, the least
# recently active first (pkg/workloadmanager/garbage_collection.go:45,84; upstream issue #454)
GC_CANDIDATES_PER_PASS = 100


def crowded_collector_note(sessions_held: int | None) -> str:
    """Why an idle session may outlive its timeout on a crowded target, or "" when the
    target is not crowded (or cannot tell how many sessions it holds)."""
    if sessions_held is None or sessions_held <= GC_CANDIDATES_PER_PASS:
        return ""
    return (
        f"The target held {sessions_held} sessions, and upstream's collector looks at no more "
        f"than {GC_CANDIDATES_PER_PASS} idle candidates per pass, the least recently active "
        f"first and always from the start (upstream issue #454): a session behind "
        f"{GC_CANDIDATES_PER_PASS} that are not yet idle is never ended. Run against a "
        "target holding fewer sessions, or end the others."
    )


class Lifetimes:
    def __init__(
        self, world: World, settings: Settings, platform: Platform, target: Target
    ) -> None:
        self._world = world
        self._settings = settings
        self._platform = platform
        self._target = target
        self._ending: Sandbox | None = None  # the sandbox seen serving the session that ends
        self._deadline: float | None = None  # when (time.monotonic) it must have ended
        self._lasted: float | None = None  # from opening to the first call it did not serve
        self._ttls: dict[str, int] = {}  # the ttl each session asked for, by session id
        self._kept_alive: list[requests.Response] = []  # answers to the calls keeping it alive
        # The first call not served at the end of a hard lifetime, when it met the sandbox
        # gone rather than the session: the refusal as not found is still to come.
        self._gone_before_removed: requests.Response | None = None

    # Runtimes with short limits, derived from the echo agent.

    def apply_short_timeout_agent(self) -> None:
        """The deployed runtime short_timeout_agent names, else a uniquely named copy of the
        echo agent whose sessionTimeout is short."""
        deployed = self._settings.short_timeout_agent
        if deployed:
            self._world.use_deployed_runtime(Role.SHORT_TIMEOUT_AGENT, deployed)
        else:
            self._apply(Role.SHORT_TIMEOUT_AGENT, "idle", max_session_duration=None)

    def apply_short_lifetime_agent(self) -> None:
        """A copy of the echo agent whose maxSessionDuration is short (but > its timeout)."""
        lifetime = self._settings.short_session_lifetime
        self._apply(Role.SHORT_LIFETIME_AGENT, "lifetime", max_session_duration=lifetime)

    def _apply(self, role: Role, purpose: str, *, max_session_duration: float | None) -> None:
        manifest = derive_manifest(
            fixture_manifest(RuntimeKind.AGENT_RUNTIME, ECHO_AGENT_FIXTURE),
            name=f"echo-agent-{purpose}-{uuid.uuid4().hex[:8]}",
            namespace=self._settings.namespace,
            session_timeout=self._settings.short_session_timeout,
            max_session_duration=max_session_duration,
        )
        self._world.apply_runtime(role, manifest)

    def open_session_with_short_ttl(self, role: Role) -> None:
        ttl = math.ceil(self._settings.short_session_lifetime)
        self._ttls[self._world.open_session_at_workload_manager(role, ttl=ttl).session_id] = ttl

    # The idle timeout.

    def call_often_for_twice_the_timeout(self) -> None:
        """Call the session every third of its timeout for twice its timeout: had the calls
        not counted as activity, it would have expired half-way. Stops at the first call
        not served."""
        timeout = self._settings.short_session_timeout
        session = self._world.session
        self._kept_alive = consistently(
            self._world.in_session(session).touch,
            echoed_in(session),
            duration=2 * timeout,
            poll=timeout / 3,
            holding=f"session {session.session_id} is served while called every {timeout / 3:g} s",
            raising=False,
        )

    def expect_served_throughout(self) -> None:
        """Every call was served in the session, by the sandbox that served its first."""
        session = self._world.session
        missing = "the scenario has not called the session to keep it alive"
        for answer in required(self._kept_alive or None, missing):
            assert_that(answer, echoed_in(session), f"{session} was not kept alive by calls")
        # Every echo of the scenario, from the call that opened the session on.
        assert_that(
            self._world.sandbox_reports(),
            served_by_one_sandbox(),
            f"{session} changed sandbox",
        )

    def leave_session_idle_until_it_ends(self) -> None:
        """Watch the platform, without touching the session, until its sandbox is released:
        after the timeout counted from when the last call was sent, within ttl_grace after
        the timeout counted from its answer. Where sandboxes cannot be observed, only wait
        out both: the Router's refusal afterwards is then the only evidence."""
        timeout, grace = self._settings.short_session_timeout, self._settings.ttl_grace
        session = self._world.session
        last_call = self._world.last_activity(session)
        self._deadline = last_call.answered_at + timeout + grace
        if SANDBOX_OBSERVATION not in self._target.capabilities:
            self._world.ledger.unobserved.append(
                f"{session}: idle expiry judged by the Router's refusal alone; the removal of "
                f"its sandbox was not observed (platform {self._platform.name!r})"
            )
            with waiting(f"{timeout + grace:g} s of idleness to pass", self._deadline):
                time.sleep(max(self._deadline - time.monotonic(), 0.0))
            return
        self._ending = sandbox_serving(self._platform, session)
        try:
            eventually(
                lambda: self._platform.sandbox_of(session.session_id),
                described_as("no sandbox serving the session", none()),
                timeout=self._remaining(),
                poll=self._settings.poll_interval,
                waiting_for=(
                    f"the platform to end session {session.session_id} within its "
                    f"sessionTimeout ({timeout:g} s) and ttl_grace ({grace:g} s) of idleness"
                ),
            )
        except AssertionError as still_served:
            note = crowded_collector_note(self._platform.session_count())
            if not note:
                raise
            raise AssertionError(f"{still_served}\n{note}") from None
        # Counted from when the last call was sent: the target stamped the session active
        # no sooner, so only a session that really ended early is this short.
        idle = time.monotonic() - last_call.sent_at
        assert_that(
            idle >= timeout - self._settings.clock_allowance,
            f"{session} ended {idle:.2f} s after its last call was sent, before its "
            f"sessionTimeout of {timeout:g} s (less clock_allowance, "
            f"{self._settings.clock_allowance:g} s)",
        )

    def expect_session_refused_as_not_found(self) -> None:
        session = self._world.session
        eventually(
            self._world.in_session(session).touch,
            self._refused_as_not_found(session.session_id),
            timeout=self._remaining(),
            poll=self._settings.poll_interval,
            waiting_for=f"the Router to refuse the ended session {session.session_id}",
        )

    # The hard lifetime.

    def keep_session_busy_until_it_ends(self) -> None:
        """Call the session every poll_interval until a call is not served; that must happen
        within the hard lifetime and ttl_grace of opening it, and the answer must say that
        the session ended: refused as not found, or, for a call in flight as the session
        ended, its sandbox gone (upstream: 503 once its pod is deleted under the call)."""
        session = self._world.session
        lifetime, grace = self._lifetime(session), self._settings.ttl_grace
        self._ending = sandbox_serving(self._platform, session)
        self._deadline = session.opened_at + lifetime + grace
        answer = eventually(
            self._world.in_session(session).touch,
            described_as(
                "a call the session no longer serves", is_not(matchers.echoes(TOUCH_TEXT))
            ),
            timeout=self._remaining(),
            poll=self._settings.poll_interval,
            waiting_for=(
                f"the busy session {session.session_id} to end at its hard lifetime "
                f"({lifetime:g} s) within ttl_grace ({grace:g} s)"
            ),
        )
        self._lasted = time.monotonic() - session.opened_at
        if SandboxGone().matches(answer):
            self._gone_before_removed = answer
            return
        assert_that(
            answer,
            self._refused_as_not_found(session.session_id),
            f"the first call {session} did not serve must say that the session ended: 404 "
            f"{SESSION_NOT_FOUND}, or 502, 503 or 504 for its sandbox gone",
        )

    def expect_call_refused_as_not_found(self) -> None:
        """The last call was refused because its session was not found; or, where it met the
        sandbox gone at the end of a hard lifetime, the refusal follows within gc_interval
        (and clock_allowance): upstream deletes the pod at the Sandbox's shutdownTime, and the
        collector removes the session on its next pass
        (pkg/workloadmanager/garbage_collection.go:122-133); the Router answers 502 between."""
        call = self._world.last_call
        refused = self._refused_as_not_found(call.presented_session_id)
        if call.response is not self._gone_before_removed:
            assert_that(call.response, refused)
            return
        session, settings = self._world.session, self._settings
        allowed = settings.gc_interval + settings.clock_allowance
        eventually(
            self._world.in_session(session).touch,
            refused,
            timeout=max(call.answered_at + allowed - time.monotonic(), settings.poll_interval),
            poll=settings.poll_interval,
            waiting_for=(
                f"the Router to refuse {session} as not found once the collector has removed "
                f"it: its first call not served answered {call.response.status_code} (sandbox "
                f"gone), and the collector runs every gc_interval ({settings.gc_interval:g} s, "
                f"with clock_allowance {settings.clock_allowance:g} s)"
            ),
        )

    def expect_session_lasted_its_lifetime(self) -> None:
        """`lasted` is counted from when the opening call was sent, so a span shorter than
        the lifetime (less clock_allowance) means the session ended early; counted from its
        answer, a slow cold start (which upstream counts in the lifetime) would not."""
        session = self._world.session
        lasted = required(self._lasted, "the scenario has not kept the session busy until it ended")
        lifetime = self._lifetime(session)
        assert_that(
            lasted >= lifetime - self._settings.clock_allowance,
            f"{session} was no longer served {lasted:.2f} s after it was opened, "
            f"before its hard lifetime of {lifetime:g} s",
        )

    def _refused_as_not_found(self, session_id: str) -> Answer:
        return matchers.refused_because_session_not_found(
            session_id, code_required=self._settings.since_pr_460
        )

    def _lifetime(self, session: Session) -> float:
        return self._ttls.get(session.session_id, self._settings.short_session_lifetime)

    # Both.

    def expect_sandbox_gone(self) -> None:
        """The sandbox seen serving the session is gone within ttl_grace; where sandboxes
        cannot be observed, the end of the run says so (leave_session_idle_until_it_ends
        noted it) and the Router's refusal stands alone."""
        if SANDBOX_OBSERVATION not in self._target.capabilities:
            return
        sandbox = required(self._ending, "no sandbox was observed before the session ended")
        eventually(
            lambda: self._platform.is_running(sandbox),
            described_as("the sandbox neither listed nor running", equal_to(False)),
            timeout=self._settings.ttl_grace,
            poll=self._settings.poll_interval,
            waiting_for=f"{sandbox} of the ended session {self._world.session.session_id} to go",
        )

    def _remaining(self) -> float:
        deadline = required(self._deadline, "the scenario has not waited for the session's end")
        return max(deadline - time.monotonic(), self._settings.poll_interval)
