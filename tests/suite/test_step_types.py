from __future__ import annotations

import parse

from acceptance.core.runtimes import Role, RuntimeKind
from acceptance.domain.credentials import Credentials
from acceptance.domain.jail import JailOperation
from acceptance.domain.refusals import BadRequest
from acceptance.domain.step_types import STEP_TYPES


def test_the_longest_runtime_phrase_wins() -> None:
    pattern = parse.compile("a session of the {runtime:Runtime}", extra_types=STEP_TYPES)
    assert pattern.parse("a session of the echo agent")["runtime"] is Role.ECHO_AGENT
    short = pattern.parse("a session of the echo agent with a short idle timeout")
    assert short["runtime"] is Role.SHORT_TIMEOUT_AGENT


def test_runtime_kinds_and_integer_lists() -> None:
    kind = parse.compile("I call {kind:RuntimeKind} that does not exist", extra_types=STEP_TYPES)
    assert kind.parse("I call a code interpreter that does not exist")["kind"] is (
        RuntimeKind.CODE_INTERPRETER
    )
    numbers = parse.compile("numbers {numbers:Integers}", extra_types=STEP_TYPES)
    assert numbers.parse("numbers 0, 1, 1, 2")["numbers"] == [0, 1, 1, 2]
    assert numbers.parse("numbers 0, x") is None


def test_bad_requests_jail_operations_and_credentials_by_their_phrases() -> None:
    request = parse.compile("I send the session {request:BadRequest}", extra_types=STEP_TYPES)
    assert request.parse("I send the session an empty command")["request"] is (
        BadRequest.EMPTY_COMMAND
    )
    attempt = parse.compile('I {operation:JailOperation} "{path}"', extra_types=STEP_TYPES)
    parsed = attempt.parse('I run a command in the directory "link"')
    assert (parsed["operation"], parsed["path"]) == (JailOperation.RUN_IN, "link")
    call = parse.compile("I call the echo agent {credentials:Credentials}", extra_types=STEP_TYPES)
    assert call.parse("I call the echo agent without a token")["credentials"] is Credentials.NONE
