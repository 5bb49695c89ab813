"""Helpers of the pod tests."""

from __future__ import annotations

import time
from pathlib import Path


def wait_for_text(path: Path, text: str, timeout: float = 5.0) -> str:
    """The content of `path` once it holds `text`; fails the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while text not in (content := path.read_text() if path.exists() else ""):
        assert time.monotonic() < deadline, f"{path} never held {text!r}: {content!r}"
        time.sleep(0.005)
    return content
