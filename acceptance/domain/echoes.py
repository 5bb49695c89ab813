"""Texts the echo agent must give back unchanged: an empty one, and one full of what a
careless layer mangles (quotes, backslashes, newlines, non-ASCII characters), as
upstream's own e2e test sends them."""

from __future__ import annotations

import enum

from hamcrest import assert_that

from acceptance.core import matchers
from acceptance.core.runtimes import Role
from acceptance.domain.world import World


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

    def send(self, sample: SampleText, role: Role) -> None:
        """Send the text in a call that opens a session."""
        self._sent = sample
        self._world.send_to_agent(role, sample.text, in_session=False)

    def expect_echoed_unchanged(self) -> None:
        if self._sent is None:
            raise AssertionError("the scenario has sent no sample text yet")
        assert_that(self._world.last_answer, matchers.echoes(self._sent.text))
