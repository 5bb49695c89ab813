"""SIGTERM and Ctrl-C during a launch: the first ends it, any later one kills at once.

Only the first signal raises Stop, and only in the main thread's `raising()` block (the
launch until its stop) outside a `held()` one: the supervisor holds signals while it starts
a part and records it, so that no part is started and lost, and while it polls one (Popen's
lock). A first signal that comes elsewhere is kept, and raised when `raising()` or the
`held()` block ends. Every later signal only sets `kill_at_once`, which the stop reads in
its grace loop: the handler never signals or waits itself, since it may run while the main
thread holds one of Popen's locks, which are not reentrant.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class Stop(Exception):
    """SIGTERM or Ctrl-C: stop everything and exit 0."""


class Interrupts:
    def __init__(self) -> None:
        self.kill_at_once = False
        self._stop_asked = False
        self._pending = False
        self._raising = False

    def install(self) -> None:
        signal.signal(signal.SIGTERM, self.handle)
        signal.signal(signal.SIGINT, self.handle)

    def handle(self, signum: int, frame: FrameType | None) -> None:
        if self._stop_asked:
            self.kill_at_once = True
            return
        self._stop_asked = True
        if not self._raising:
            self._pending = True
            return
        raise Stop

    @contextmanager
    def raising(self) -> Iterator[None]:
        """The block a first signal ends with Stop (also one that came before it)."""
        self._raising = True
        try:
            self._raise_pending()
            yield
        finally:
            self._raising = False

    @contextmanager
    def held(self) -> Iterator[None]:
        """Keep a first signal from interrupting the block; raise it at its end."""
        outer, self._raising = self._raising, False
        try:
            yield
        finally:
            self._raising = outer
        if outer:
            self._raise_pending()

    def _raise_pending(self) -> None:
        if self._pending:
            self._pending = False
            raise Stop
