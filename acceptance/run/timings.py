"""Timing that fits the target. The idle-timeout and lifetime scenarios give their sessions
short limits (`short_session_timeout`, `short_session_lifetime`) counted from a cold start:
on a target whose sandboxes start slower, a session would end around its first answer and
the scenario would wrongly blame the platform.

So the preflight times one first answer of the echo agent. A short timing left at its
default is scaled to last COLD_STARTS such starts (both by one factor, so the lifetime
stays the longer); one the user set (or a deployed `short_timeout_agent`'s) is kept while it
lasts SET_COLD_STARTS, else the run stops naming the value that fits. A cold start that
cannot be measured changes nothing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from collections.abc import Callable
from typing import Any

from acceptance.core.clients import Router, WorkloadManager, session_id_of
from acceptance.core.evidence import ExchangeLog, excerpt
from acceptance.core.measurements import Measurements
from acceptance.core.runtimes import Role, configured_runtime
from acceptance.core.settings import Given, Settings
from acceptance.core.transport import NoAnswer, Transport
from acceptance.platforms.base import Target

# How many cold starts a default short timing lasts: the first answer comes in its first
# third, leaving the rest for what the scenario observes.
COLD_STARTS = 3
# How many one the user set must last; more is the user's margin to choose.
SET_COLD_STARTS = 2
SHORT_TIMINGS = ("short_session_timeout", "short_session_lifetime")
# The tag of the scenarios that rely on them: a run without any measures no cold start.
TIMED_TAG = "ttl"


class TimingsDoNotFit(ValueError):
    """A short timing the user set is shorter than SET_COLD_STARTS cold starts."""


class NoColdStart(Exception):
    """The first answer of a new session could not be timed: why."""


def measure_cold_start(target: Target, settings: Settings) -> float:
    """The seconds to the first answer of a new echo-agent session, which then ends;
    raises NoColdStart."""
    echo_agent = configured_runtime(Role.ECHO_AGENT, settings)
    with contextlib.closing(
        Transport(timeout=settings.request_timeout, log=ExchangeLog())
    ) as transport:
        started = time.monotonic()
        try:
            answer = Router(transport, target.router_url, Measurements()).invoke(
                echo_agent,
                "echo",
                session_id=None,
                json={"input": "preflight"},
                token=target.api_token,
            )
        except NoAnswer as error:
            raise NoColdStart(
                f"the first call of {echo_agent.name} was not answered: {error}"
            ) from None
        seconds = time.monotonic() - started
        if session_id := session_id_of(answer):
            with contextlib.suppress(NoAnswer):  # else it ends with its idle timeout
                WorkloadManager(transport, target.workload_manager_url).delete_session(
                    echo_agent.kind,
                    session_id,
                    token=settings.workload_manager_token or target.api_token,
                )
    if not answer.ok:
        shown = f"{answer.status_code} {excerpt(answer.content, 120)}"
        raise NoColdStart(f"the first call of {echo_agent.name} answered {shown}")
    return seconds


def fitted(
    settings: Settings, cold_start: float, given: Given, names: Callable[[str], str]
) -> tuple[Settings, str]:
    """The settings with the default short timings scaled to COLD_STARTS cold starts, and
    what was done; `names(setting)` shows a setting as the user gives it. Raises
    TimingsDoNotFit for the ones the user set too short."""
    needed = COLD_STARTS * cold_start
    if "short_timeout_agent" in given:  # a deployed agent's idle timeout is the user's
        given |= {"short_session_timeout"}
    values = {name: getattr(settings, name) for name in SHORT_TIMINGS}
    fixed = [n for n in SHORT_TIMINGS if n in given and values[n] < SET_COLD_STARTS * cold_start]
    if fixed:
        raise TimingsDoNotFit(
            "; ".join(
                f"{names(name)} is {values[name]:g} s, shorter than {SET_COLD_STARTS} cold "
                f"starts of the echo agent ({cold_start:.1f} s each, measured by the "
                f"preflight), so its sessions could end before or just after their first "
                f"answer: set it to at least {math.ceil(needed)}s"
                for name in fixed
            )
        )
    measured = f"cold start {cold_start:.1f} s"
    short = {n: value for n, value in values.items() if value < needed and n not in given}
    if not short:
        return settings, f"{measured}: the short timings fit it"
    factor = max(needed / value for value in short.values())
    scaled: dict[str, Any] = {
        n: float(math.ceil(value * factor)) for n, value in values.items() if n not in given
    }
    told = " and ".join(f"{name} {values[name]:g} s -> {scaled[name]:g} s" for name in scaled)
    return (
        dataclasses.replace(settings, **scaled),
        f"{measured}: {told}, to outlast {COLD_STARTS} cold starts",
    )
