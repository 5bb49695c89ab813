"""Processes in tests: whether one is still running."""

from __future__ import annotations

from pathlib import Path


def alive(pid: int) -> bool:
    """Alive and not a zombie (a zombie is gone for every purpose but its exit status)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
