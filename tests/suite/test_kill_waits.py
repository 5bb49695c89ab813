"""Killing a sandbox waits until the platform no longer shows it running: on a cluster a
killed pod stays Terminating until its kubelet has stopped its containers, and a call made
before would not meet the dead sandbox the scenario is about. A stand-in platform shows the
sandbox for a few polls."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest

from acceptance.core.settings import load_settings
from acceptance.domain.resilience import Resilience
from acceptance.platforms.base import Platform, Sandbox

SANDBOX = Sandbox("sandbox-1")


@dataclass
class LingeringPlatform(Platform):
    """Shows the killed sandbox running for `lingers` more looks (a Platform for its
    default `is_killed`: once not running)."""

    lingers: int
    looks: int = 0
    killed: list[Sandbox] = field(default_factory=list)

    def sandbox_of(self, session_id: str) -> Sandbox:
        return SANDBOX

    def kill_sandbox(self, sandbox: Sandbox) -> None:
        self.killed.append(sandbox)

    def is_running(self, sandbox: Sandbox) -> bool:
        self.looks += 1
        return not self.killed or self.looks <= self.lingers


def resilience(platform: LingeringPlatform, **userdata: str) -> Resilience:
    settings = load_settings({"poll_interval": "10ms", **userdata}, {})
    session = SimpleNamespace(session_id="s-1")
    world = SimpleNamespace(session=session)
    return Resilience(world, settings, platform, None)  # type: ignore[arg-type]


def test_the_kill_returns_once_the_platform_shows_the_sandbox_gone() -> None:
    platform = LingeringPlatform(lingers=3)
    resilience(platform).kill_sandbox()
    assert platform.killed == [SANDBOX]
    assert platform.looks == 4, "the kill must look until the sandbox is no longer running"


def test_a_sandbox_shown_running_past_the_timeout_fails_the_step_naming_the_wait() -> None:
    platform = LingeringPlatform(lingers=10_000)
    with pytest.raises(AssertionError) as error:
        resilience(platform, sandbox_gone_timeout="100ms").kill_sandbox()
    assert "sandbox sandbox-1 no longer running" in str(error.value)
