"""Calls to the echo agent and what it gives back: texts it must return unchanged (an empty
one, and one full of what a careless layer mangles: quotes, backslashes, newlines,
non-ASCII characters, as upstream's own e2e test sends them), and the sandbox it reports."""

from __future__ import annotations

import enum

from hamcrest import assert_that

from acceptance.core import matchers
from acceptance.core.runtimes import Role
from acceptance.domain.sessions import served_by_one_sandbox
from acceptance.domain.world import World, required


class SampleText(enum.Enum):
    """A text as the features phrase it, and the text itself."""

    EMPTY = ("an empty text", "")
    SPECIAL = (
        "a text full of quotes, backslashes, newlines and non-ASCII characters",
        "quotes \" and ' , backslashes \\ and \\n, a newline\nand a tab\t, "
        "h\u00e9llo \u2013 \u4f60\u597d \U0001f680, and @#$%^&*()",
    )

    def __init__(self, phrase: str, text: str) -> None:
        self.phrase = phrase
        self.text = text


class Echoes:
    def __init__(self, world: World) -> None:
        self._world = world
        self._sent: SampleText | None = None

    def send_text(self, role: Role, text: str, *, in_session: bool) -> None:
        """An echo of the role's runtime, in the scenario's session or opening one."""
        self._world.calls_to(role, in_session=in_session).echo(text)

    def send(self, sample: SampleText, role: Role) -> None:
        """Send the text in a call that opens a session."""
        self._sent = sample
        self.send_text(role, sample.text, in_session=False)

    def expect_served_by_one_sandbox(self) -> None:
        """Every echo of the scenario so far came from the one sandbox."""
        assert_that(self._world.sandbox_reports(), served_by_one_sandbox())

    def expect_echoed_unchanged(self) -> None:
        sent = required(self._sent, "the scenario has sent no sample text yet")
        assert_that(self._world.last_answer, matchers.echoes(sent.text))
