"""How the sustained-load scenarios tell one session's failure from another."""

from __future__ import annotations

import pytest

from acceptance.domain.load import error_kind
from tests.suite.conftest import MakeAnswer

SESSION = {"x-agentcube-session-id": "3b1f8a52-0c1e-4a7e-9d59-2f4c1d6e7a10"}


def test_a_session_that_printed_what_it_was_asked_succeeded(answer: MakeAnswer) -> None:
    assert error_kind(answer(200, {"stdout": "hi\n"}, headers=SESSION), "hi\n") is None


@pytest.mark.parametrize(
    ("status", "body", "headers", "kind"),
    [
        (503, {"error": "sandbox unreachable"}, {}, "status 503: sandbox unreachable"),
        (500, b"Internal Server Error", {}, "status 500"),
        (200, {"stdout": "hi\n"}, {}, "no session id in the answer"),
        (200, b"<html>", SESSION, "an answer that is not PicoD's JSON"),
        (200, {"stdout": "other\n"}, SESSION, "wrong output"),
    ],
)
def test_each_failure_has_its_kind(
    answer: MakeAnswer, status: int, body: object, headers: dict[str, str], kind: str
) -> None:
    assert error_kind(answer(status, body, headers=headers), "hi\n") == kind
