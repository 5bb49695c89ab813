"""Timing that fits the target (acceptance/run/timings.py), against a target whose cold
starts are slow: a proxy in front of localcube holds the first answer of every new session
(the session already open, its clock running) for longer than the suite's default idle
timeout, as a loaded cluster's slow pod start does. The preflight scales the short timings
it was left, and the scenarios that rely on them then pass; a short timing the user set
stops the run naming it."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from acceptance.core.settings import load_settings
from acceptance.run.preflight import PreflightFailed
from acceptance.run.suite import Suite
from acceptance.run.timings import COLD_STARTS, TimingsDoNotFit, fitted
from tests.suite.commands import run_behave
from tests.suite.fault_proxy import FAULTS, Answer, Fault, FaultProxy, Request

START_UP = 2.5  # seconds a first answer is held: longer than the 2 s default idle timeout
TIMED = ("short_session_timeout", "short_session_lifetime")
SLOW_COLD_STARTS = "slow-cold-starts"


class SlowColdStarts(Fault):
    """Every call that opens a session is answered START_UP seconds late."""

    async def answer_instead(self, proxy: FaultProxy, request: Request) -> Answer | None:
        if not request.invocation or request.session_id:
            return None
        answer = await proxy.forward(request)
        await asyncio.sleep(START_UP)
        return answer


def names(setting: str) -> str:
    return f"{setting} / AGENTCUBE_{setting.upper()}"


@pytest.fixture
def slow_cube(shared_cube, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setitem(FAULTS, SLOW_COLD_STARTS, SlowColdStarts)
    with FaultProxy(shared_cube.url, SLOW_COLD_STARTS) as proxy:
        yield proxy.url


def test_the_short_timings_left_at_their_defaults_are_scaled_to_the_cold_start(
    slow_cube: str,
) -> None:
    suite = Suite.start({"router_url": slow_cube, "platform": "localcube"}, {})
    suite.finish()
    timeout, lifetime = (getattr(suite.settings, name) for name in TIMED)
    assert timeout >= COLD_STARTS * START_UP, suite.preflight
    assert lifetime > timeout, (timeout, lifetime)
    told = re.search(
        r"cold start ([\d.]+) s: short_session_timeout 2 s -> (\d+) s", suite.preflight
    )
    assert told and float(told[1]) >= START_UP and float(told[2]) == timeout, suite.preflight


def test_a_short_timing_the_user_set_stops_the_run_naming_it(slow_cube: str) -> None:
    userdata = {"router_url": slow_cube, "platform": "localcube", "short_session_timeout": "2s"}
    with pytest.raises(PreflightFailed) as failed:
        Suite.start(userdata, {})
    (problem,) = failed.value.problems
    assert problem.startswith(
        "short_session_timeout / AGENTCUBE_SHORT_SESSION_TIMEOUT is 2 s, shorter than 2 cold "
        "starts of the echo agent"
    ), problem
    assert "set it to at least" in problem and "short_session_lifetime" not in problem


def test_a_cold_start_that_cannot_be_measured_changes_nothing(shared_cube) -> None:
    """Over HTTP alone the runtimes are not listed: an echo agent that does not exist is
    found by the cold start's call, whose 404 leaves the timings as they are."""
    userdata = {"router_url": shared_cube.url, "platform": "none", "echo_agent": "no-agent"}
    suite = Suite.start(userdata, {})
    suite.finish()
    assert (suite.settings.short_session_timeout, suite.settings.short_session_lifetime) == (2, 3)
    assert (
        "short timings kept, no cold start measured: the first call of no-agent answered 404"
        in (suite.preflight)
    ), suite.preflight


def test_a_deployed_short_timeout_agent_fixes_the_idle_timeout() -> None:
    settings = load_settings({"short_timeout_agent": "echo-agent-short-ttl"}, {})
    with pytest.raises(TimingsDoNotFit, match=r"short_session_timeout / .* is 2 s"):
        fitted(settings, 1.5, frozenset({"short_timeout_agent"}), names)


def test_timings_that_outlast_the_cold_start_are_kept() -> None:
    settings = load_settings({}, {})
    kept, told = fitted(settings, 0.2, frozenset(), names)
    assert kept == settings and told == "cold start 0.2 s: the short timings fit it"


def test_a_timing_the_user_set_is_kept_while_it_lasts_two_cold_starts() -> None:
    """A set 2 s idle timeout, a 0.8 s cold start: tight, but the user's to choose."""
    settings = load_settings({"short_session_timeout": "2s"}, {})
    kept, told = fitted(settings, 0.8, frozenset({"short_session_timeout"}), names)
    assert (kept.short_session_timeout, kept.short_session_lifetime) == (2.0, 3.0), told
    with pytest.raises(TimingsDoNotFit, match="is 2 s, shorter than 2 cold starts"):
        fitted(settings, 1.1, frozenset({"short_session_timeout"}), names)


def test_the_scenarios_that_rely_on_the_short_timings_pass_on_the_slow_target(
    slow_cube: str, tmp_path: Path
) -> None:
    """No false failure: the idle-timeout and lifetime scenarios, whose sessions would end
    before or just after their first answer with the default timings."""
    status, output = run_behave(
        *("-f", "plain", "--tags", "@ttl"),
        "--name=A session left idle past its timeout ends",
        "--name=A busy session ends when its runtime's maximum session duration is up",
        userdata={"router_url": slow_cube, "platform": "localcube", "reports_dir": str(tmp_path)},
        timeout=240,
    )
    assert status == 0, output
    assert ": 2 passed, 0 failed" in output, output
    assert "short_session_timeout 2 s ->" in output, output
