"""The PicoD command template: every code-interpreter sandbox run with a PicoD of one's own
(localcube's `--picod-command`, the suite's `picod_command` setting).

The command is a shell-like line (split as a POSIX shell would, nothing expanded) whose
words may name two placeholders, filled in for each sandbox: `{port}`, the loopback port
it must serve, and `{workspace}`, its workspace directory. `{{` and `}}` stand for braces.
Upstream's daemon takes them as `--port {port} --workspace {workspace}`.
"""

from __future__ import annotations

import shlex
import string
from dataclasses import dataclass
from pathlib import Path

PLACEHOLDERS = ("port", "workspace")


class PicodCommandError(ValueError):
    """A command line localcube cannot run; the message says what to change."""


@dataclass(frozen=True)
class PicodCommand:
    words: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> PicodCommand:
        try:
            words = tuple(shlex.split(text))
        except ValueError as error:  # an unbalanced quote
            raise PicodCommandError(f"cannot split {text!r} into words: {error}") from None
        if not words:
            raise PicodCommandError("the command is empty")
        for word in words:
            _check_placeholders(word)
        return cls(words)

    def argv(self, port: int, workspace: Path) -> list[str]:
        return [word.format(port=port, workspace=workspace) for word in self.words]


def _check_placeholders(word: str) -> None:
    allowed = " and ".join(f"{{{name}}}" for name in PLACEHOLDERS)
    try:
        fields = list(string.Formatter().parse(word))
    except ValueError as error:  # a lone brace
        raise PicodCommandError(
            f"{word!r}: {error}; the placeholders are {allowed}, and {{{{ }}}} stand for braces"
        ) from None
    for _, name, spec, conversion in fields:
        if name is None:
            continue
        if name not in PLACEHOLDERS:
            raise PicodCommandError(
                f"unknown placeholder {{{name}}} in {word!r}: the placeholders are {allowed}"
            )
        if spec or conversion:
            raise PicodCommandError(
                f"{word!r}: a placeholder takes no format or conversion; write {{{name}}}"
            )
