"""Helpers of the pod tests."""

from __future__ import annotations

from pathlib import Path

from onemachine.node.container_logs import log_text
from tests.waiting import wait_until


def wait_for_text(path: Path, text: str, timeout: float = 30.0) -> str:
    """What a container wrote to its log `path` once it holds `text`; fails the test after
    `timeout` seconds."""
    return wait_until(
        lambda: content if text in (content := log_text(path)) else "",
        f"{path} to hold {text!r}",
        timeout=timeout,
        poll=0.005,
    )
