"""Helpers of the pod tests."""

from __future__ import annotations

from pathlib import Path

from tests.waiting import wait_until


def wait_for_text(path: Path, text: str, timeout: float = 30.0) -> str:
    """The content of `path` once it holds `text`; fails the test after `timeout` seconds."""
    return wait_until(
        lambda: content if text in (content := path.read_text() if path.exists() else "") else "",
        f"{path} to hold {text!r}",
        timeout=timeout,
        poll=0.005,
    )
