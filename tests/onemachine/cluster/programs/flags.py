"""The launcher's flags as the stand-ins read them, and their wait for SIGTERM."""

from __future__ import annotations

import signal
import sys
import threading


def parse(argv: list[str] | None = None) -> dict[str, str]:
    """`--name=value` and `--name value` pairs (a bare flag maps to ""); positional
    arguments are ignored."""
    arguments = sys.argv[1:] if argv is None else argv
    flags: dict[str, str] = {}
    index = 0
    while index < len(arguments):
        argument = arguments[index]
        index += 1
        if not argument.startswith("--"):
            continue
        name, equals, value = argument.removeprefix("--").partition("=")
        if not equals and index < len(arguments) and not arguments[index].startswith("--"):
            value, index = arguments[index], index + 1
        flags[name] = value
    return flags


def stopping() -> threading.Event:
    """An event set by SIGTERM or SIGINT, as the launcher stops its parts."""
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    return stop


def wait_for_sigterm() -> None:
    stopping().wait()
