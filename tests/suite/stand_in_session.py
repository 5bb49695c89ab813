"""A stand-in world for the lifetime checks: one session, served with echoes until a
chosen moment, then answered with a chosen ending, without any server."""

from __future__ import annotations

import time
from collections.abc import Callable
from types import SimpleNamespace

import requests

from acceptance.core.settings import load_settings
from acceptance.domain.calls import TOUCH_TEXT
from acceptance.domain.lifetimes import Lifetimes
from acceptance.platforms.base import Sandbox

SESSION_ID = "s-1"
LIFETIME = 1.0
NOT_FOUND = {
    "error": f'sessions.agentcube.volcano.sh "{SESSION_ID}" not found',
    "code": "SESSION_NOT_FOUND",
}


def world_whose_session_ends(
    answer: Callable[..., requests.Response],
    served_for: float,
    ending: tuple[int, dict],
    opening: float = 0.0,
    **userdata: str,
) -> SimpleNamespace:
    """A session with a hard lifetime of LIFETIME, echoing for `served_for` seconds after it
    was opened and answering `ending` (status, body) from then on; the call that opened it
    took `opening` seconds (a cold start), and the target counts the lifetime from its
    start."""
    settings = load_settings(
        {"short_session_lifetime": f"{LIFETIME:g}s", "poll_interval": "20ms", **userdata}, {}
    )
    now = time.monotonic()
    session = SimpleNamespace(session_id=SESSION_ID, runtime=None, opened_at=now - opening)

    def touch(runtime: object, session_id: str) -> requests.Response:
        if time.monotonic() - session.opened_at < served_for:
            echo = {"output": f"echo: {TOUCH_TEXT}", "metadata": {"original_input": TOUCH_TEXT}}
            return answer(200, echo)
        return answer(*ending)

    platform = SimpleNamespace(sandbox_of=lambda session_id: Sandbox("sandbox-1"))
    world = SimpleNamespace(settings=settings, session=session, touch=touch, platform=platform)
    # The session's calls, made with whatever `touch` the world holds by then.
    world.in_session = lambda _: SimpleNamespace(touch=lambda: world.touch(None, SESSION_ID))
    return world


def lifetimes_of(world: SimpleNamespace) -> Lifetimes:
    """The scenario's Lifetimes helper, given the stand-in's settings and platform."""
    target = getattr(world, "target", None)
    return Lifetimes(world, world.settings, world.platform, target)  # type: ignore[arg-type]


def busy_until_it_ends(world: SimpleNamespace) -> None:
    """The steps of the lifetime scenarios: call until not served, then judge the span."""
    lifetimes = lifetimes_of(world)
    lifetimes.keep_session_busy_until_it_ends()
    lifetimes.expect_session_lasted_its_lifetime()
