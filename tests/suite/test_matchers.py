"""The matchers accept what the contract allows and, when they do not, say which
expectation broke and show the answer."""

from __future__ import annotations

import hashlib

import pytest
from hamcrest import assert_that

from acceptance.core import matchers
from acceptance.core.runtimes import Runtime, RuntimeKind
from acceptance.domain.credentials import (
    not_given_credentials,
    refused_as_not_the_owner,
    refused_as_unauthorized,
)
from acceptance.domain.interpreters import exits_with, fails_because_undefined, prints_line
from acceptance.domain.isolation import OwnSandboxOrRefusal, new_session_ids
from acceptance.domain.jail import reveals_nothing_of
from acceptance.domain.refusals import passed_on_from_the_agent
from acceptance.domain.resilience import SandboxGone, refused_as_overloaded
from acceptance.domain.sessions import carries_new_session_id, served_by_one_sandbox
from acceptance.domain.workspace import holds_checksum, holds_fibonacci, lists_files

SESSION = "0b9a8f4e-3c1d-4e6f-9a2b-1c3d5e7f9a0b"
ECHO = Runtime(RuntimeKind.AGENT_RUNTIME, "default", "echo-agent")


def failure(matcher, item) -> str:
    with pytest.raises(AssertionError) as error:
        assert_that(item, matcher)
    return str(error.value)


def test_an_echo_matches_and_a_wrong_echo_shows_the_answer(answer) -> None:
    body = {"output": "echo: hi", "metadata": {"original_input": "hi"}}
    assert_that(answer(200, body), matchers.echoes("hi"))
    message = failure(matchers.echoes("bye"), answer(200, body))
    assert "Expected: the echo agent to answer 200 with output 'echo: bye'" in message
    assert "in the body, value for" in message
    assert "POST http://router.test/" in message and "-> 200 OK in" in message


def test_a_wrong_status_is_named_first(answer) -> None:
    message = failure(matchers.echoes("hi"), answer(502, {"error": "sandbox unreachable"}))
    assert "the status was 502, not 200" in message
    assert '{"error": "sandbox unreachable"}' in message


def test_a_body_that_is_not_json_is_named(answer) -> None:
    assert "the body is not JSON" in failure(matchers.echoes("hi"), answer(200, b"<html>"))


BEFORE_PR_460 = {"error": f'sessions.agentcube.volcano.sh "{SESSION}" not found'}
SINCE_PR_460 = {**BEFORE_PR_460, "code": "SESSION_NOT_FOUND"}


def test_session_not_found_accepts_both_upstream_bodies_unless_the_code_is_required(
    answer,
) -> None:
    relaxed = matchers.refused_because_session_not_found(SESSION, code_required=False)
    assert_that(answer(404, BEFORE_PR_460), relaxed)
    assert_that(answer(404, SINCE_PR_460), relaxed)
    strict = matchers.refused_because_session_not_found(SESSION, code_required=True)
    assert_that(answer(404, SINCE_PR_460), strict)
    assert "with code SESSION_NOT_FOUND" in failure(strict, answer(404, BEFORE_PR_460))


@pytest.mark.parametrize(
    "body",
    [
        {"error": "Not found"},  # the application's own 404, proxied
        {"error": f'sessions.agentcube.volcano.sh "{SESSION}" not found', "code": "NOT_FOUND"},
    ],
)
@pytest.mark.parametrize("code_required", [False, True])
def test_session_not_found_refuses_other_404s(answer, body, code_required) -> None:
    matcher = matchers.refused_because_session_not_found(SESSION, code_required=code_required)
    message = failure(matcher, answer(404, body))
    assert f"refuse the call with 404 because session {SESSION} was not found" in message


def test_the_agents_own_404_carries_the_session_and_never_the_routers_code(answer) -> None:
    matcher = passed_on_from_the_agent(SESSION)
    in_session = {"x-agentcube-session-id": SESSION}
    assert_that(answer(404, {"error": "Not found"}, headers=in_session), matcher)
    marked = answer(404, {"error": "Not found", "code": "SESSION_NOT_FOUND"}, headers=in_session)
    assert "without the Router's code SESSION_NOT_FOUND" in failure(matcher, marked)
    assert "it was missing" in failure(matcher, answer(404, {"error": "Not found"}))


@pytest.mark.parametrize(
    ("status", "error"),
    [(502, "sandbox unreachable"), (503, "sandbox unreachable"), (504, "sandbox timeout")],
)
def test_a_dead_sandbox_may_be_any_of_upstreams_answers(answer, status, error) -> None:
    """Upstream: pkg/router/handlers.go:246-257 (refused 502, timeout 504, other 503)."""
    assert_that(answer(status, {"error": error}), SandboxGone())


@pytest.mark.parametrize(
    ("status", "body", "problem"),
    [
        (500, {"error": "sandbox unreachable"}, "the status was 500, not 502 or 503 or 504"),
        (504, {"error": "sandbox unreachable"}, "a 504 must say 'sandbox timeout'"),
        (502, {"error": "upstream exploded"}, "a 502 must say 'sandbox unreachable'"),
        (503, {"message": "sandbox unreachable"}, "in the body"),
    ],
)
def test_a_dead_sandbox_answer_must_say_what_upstream_says(answer, status, body, problem) -> None:
    assert problem in failure(SandboxGone(), answer(status, body))


def test_a_refusal_explains_itself_in_any_case(answer) -> None:
    body = {"code": 400, "error": "Invalid timeout format: bad"}
    assert_that(answer(400, body), matchers.refused_with(400, "invalid timeout format"))
    assert "the body is not JSON" in failure(
        matchers.refused_with(400, "invalid timeout format"), answer(400, b"")
    )


def test_an_answer_reveals_nothing_of_a_secret_or_its_file(answer) -> None:
    matcher = reveals_nothing_of("s3cr3t", "secret.txt")
    assert_that(answer(400, {"error": "access denied: secret.txt escapes"}), matcher)
    assert "the answer holds the secret" in failure(matcher, answer(200, b"s3cr3t"))
    listing = answer(200, {"files": [{"name": "secret.txt"}]})
    assert "the answer lists secret.txt" in failure(matcher, listing)


def test_session_ids_are_new_uuid4s() -> None:
    first, second = "0b9a8f4e-3c1d-4e6f-9a2b-1c3d5e7f9a0b", "1c9a8f4e-3c1d-4e6f-9a2b-1c3d5e7f9a0b"
    assert_that([first, second], new_session_ids([]))
    assert "number 2) was issued before" in failure(new_session_ids([]), [first, first])
    assert "number 1) was issued before" in failure(new_session_ids([first]), [first])
    assert "is not a UUID v4" in failure(new_session_ids([]), ["abc"])


def test_a_sandbox_report_without_the_callers_tokens() -> None:
    matcher = not_given_credentials({"api_token": "the-token"})
    fingerprint = hashlib.sha256(b"the-token").hexdigest()
    assert_that({"header_word_sha256s": ["router-jwt", "other"]}, matcher)
    assert_that({"header_word_sha256s": []}, matcher)
    assert "none of the callers' tokens (api_token)" in failure(
        matcher, {"header_word_sha256s": ["other", fingerprint]}
    )


def test_runtime_not_found_names_resource_namespace_and_name(answer) -> None:
    missing = Runtime(RuntimeKind.CODE_INTERPRETER, "default", "nope")
    matcher = matchers.refused_because_runtime_not_found(missing)
    good = {"error": 'codeinterpreters.agentcube.volcano.sh "default/nope" not found'}
    assert_that(answer(404, good), matcher)
    wrong_kind = {"error": 'agentruntimes.agentcube.volcano.sh "default/nope" not found'}
    assert "CodeInterpreter default/nope was not found" in failure(matcher, answer(404, wrong_kind))


def test_a_new_session_id_is_a_uuid4_not_seen_before(answer) -> None:
    with_header = answer(200, {}, headers={"x-agentcube-session-id": SESSION})
    assert_that(with_header, carries_new_session_id([]))
    message = failure(carries_new_session_id([SESSION]), with_header)
    assert "header x-agentcube-session-id should be (a UUID v4 and not one of" in message
    assert f"but it was '{SESSION}'" in message
    assert "it was missing" in failure(carries_new_session_id([]), answer(200, {}))
    not_uuid = answer(200, {}, headers={"x-agentcube-session-id": "abc"})
    assert "it was 'abc'" in failure(carries_new_session_id([]), not_uuid)


def test_command_results(answer) -> None:
    ran = answer(200, {"stdout": "2\n", "stderr": "", "exit_code": 0})
    assert_that(ran, prints_line("2"))
    assert_that(ran, exits_with(0))
    message = failure(prints_line("3"), ran)
    assert "Expected: the command to print '3' and nothing else" in message
    undefined = answer(
        200, {"stdout": "", "stderr": "NameError: name 'x' is not defined\n", "exit_code": 1}
    )
    assert_that(undefined, fails_because_undefined("x"))
    assert "because 'x' is not defined" in failure(fails_because_undefined("x"), ran)


def test_workspace_listing_and_fibonacci(answer) -> None:
    listing = answer(200, {"files": [{"name": "fibonacci.py"}, {"name": "output.json"}]})
    assert_that(listing, lists_files(["output.json", "fibonacci.py"]))
    message = failure(lists_files(["missing.txt"]), listing)
    assert "the workspace listing to include missing.txt" in message
    numbers = [0, 1, 1, 2, 3, 5, 8, 13, 21, 34]
    assert_that(answer(200, {"count": 10, "fibonacci": numbers}), holds_fibonacci(numbers))
    wrong = answer(200, {"count": 10, "fibonacci": [1, 1, 2, 3, 5, 8, 13, 21, 34, 55]})
    assert "value for 'fibonacci' was" in failure(holds_fibonacci(numbers), wrong)


def report(pid: int, calls: int) -> dict:
    return {"hostname": "h", "pid": pid, "started_at": 1.0, "calls": calls}


def test_one_sandbox_counts_the_calls_in_order() -> None:
    assert_that([report(7, 1), report(7, 2)], served_by_one_sandbox())
    for reports in ([report(7, 1), report(8, 1)], [report(7, 1), report(7, 3)], [report(7, 1)]):
        message = failure(served_by_one_sandbox(), reports)
        assert "every call served by one sandbox" in message
        assert '"pid": 7' in message
    assert "the sandboxes reported" in failure(served_by_one_sandbox(), [None, None])


def test_a_not_found_refusal_that_opened_a_session_fails(answer) -> None:
    opened = answer(404, SINCE_PR_460, headers={"x-agentcube-session-id": "new-session"})
    matcher = matchers.refused_because_session_not_found(SESSION, code_required=True)
    assert "opening no session" in failure(matcher, opened)


# Each Router refusal: its matcher, and a body the contract allows for it.
ROUTER_REFUSALS = {
    "401": (
        refused_as_unauthorized("missing authorization header"),
        401,
        {"error": "missing authorization header", "code": "UNAUTHORIZED"},
    ),
    "403": (
        refused_as_not_the_owner(),
        403,
        {"error": "you do not own this sandbox", "code": "FORBIDDEN"},
    ),
    "404 session": (
        matchers.refused_because_session_not_found(SESSION, code_required=True),
        404,
        SINCE_PR_460,
    ),
    "404 runtime": (
        matchers.refused_because_runtime_not_found(ECHO),
        404,
        {"error": 'agentruntimes.agentcube.volcano.sh "default/echo-agent" not found'},
    ),
    "429": (
        refused_as_overloaded(),
        429,
        {"error": "server overloaded, please try again later", "code": "SERVER_OVERLOADED"},
    ),
}
REFUSAL_CASES = pytest.mark.parametrize("refusal", ROUTER_REFUSALS.values(), ids=ROUTER_REFUSALS)


@REFUSAL_CASES
def test_a_refusal_may_carry_more_fields_and_wrap_its_reason(answer, refusal) -> None:
    """A release that adds a field, or a gateway that puts the reason in words of its own,
    still refuses as the contract promises."""
    matcher, status, body = refusal
    wrapped = {**body, "error": f"gateway: {body['error'].upper()} (request 7)", "requestId": "7"}
    assert_that(answer(status, wrapped), matcher)


@REFUSAL_CASES
def test_a_refusal_without_its_reason_fails_naming_it(answer, refusal) -> None:
    matcher, status, body = refusal
    message = failure(matcher, answer(status, {**body, "error": "something went wrong"}))
    assert "the error 'something went wrong' does not say" in message
    assert f"Expected: {matcher.expectation}" in message


@pytest.mark.parametrize(
    "refusal",
    [refusal for name, refusal in ROUTER_REFUSALS.items() if "code" in refusal[2]],
    ids=[name for name, refusal in ROUTER_REFUSALS.items() if "code" in refusal[2]],
)
def test_a_refusal_with_a_wrong_or_missing_code_fails_naming_it(answer, refusal) -> None:
    matcher, status, body = refusal
    message = failure(matcher, answer(status, {**body, "code": "INTERNAL"}))
    assert f"the code was 'INTERNAL', not {body['code']!r}" in message
    without_code = {key: value for key, value in body.items() if key != "code"}
    assert f"the body has no code, not {body['code']!r}" in failure(
        matcher, answer(status, without_code)
    )


@REFUSAL_CASES
def test_a_refusal_by_the_router_that_carries_a_session_fails(answer, refusal) -> None:
    matcher, status, body = refusal
    in_session = answer(status, body, headers={"x-agentcube-session-id": SESSION})
    message = failure(matcher, in_session)
    assert f"header x-agentcube-session-id should be None, but it was '{SESSION}'" in message


@REFUSAL_CASES
def test_a_refusal_with_another_status_or_no_error_text_fails(answer, refusal) -> None:
    matcher, status, body = refusal
    assert f"the status was 500, not {status}" in failure(matcher, answer(500, body))
    assert "the body has no error text" in failure(matcher, answer(status, {"message": "no"}))
    assert "the body is not JSON" in failure(matcher, answer(status, b"refused"))


OWN_SANDBOX = {"hostname": "box-a", "pid": 11, "started_at": 1.5, "calls": 1}
NEIGHBOUR = Runtime(RuntimeKind.AGENT_RUNTIME, "default-neighbour", "echo-agent")


def _carrying(session: str | None) -> dict[str, str]:
    return {matchers.SESSION_HEADER: session} if session else {}


def _under_another_path() -> matchers.Answer:
    return OwnSandboxOrRefusal("s-1", OWN_SANDBOX, NEIGHBOUR)


@pytest.mark.parametrize(
    ("status", "body", "session"),
    [
        (200, {"output": "echo: x", "sandbox": {**OWN_SANDBOX, "calls": 2}}, "s-1"),
        (404, {"error": 'sessions.agentcube.volcano.sh "s-1" not found'}, None),
        (409, {"error": "session does not match the route", "code": "X"}, None),
    ],
)
def test_a_session_under_another_path_may_be_served_by_its_sandbox_or_refused(
    answer, status, body, session
) -> None:
    """Upstream: pkg/router/session_manager.go:137-153 forwards by the session id alone;
    upstream's open PR #324 would refuse with 409."""
    assert_that(answer(status, body, headers=_carrying(session)), _under_another_path())


@pytest.mark.parametrize(
    ("status", "body", "session", "problem"),
    [
        (
            200,
            {"output": "echo: x", "sandbox": {**OWN_SANDBOX, "pid": 12}},
            "s-1",
            "it was served by sandbox {'hostname': 'box-a', 'pid': 12",
        ),
        (200, {"output": "echo: x", "sandbox": OWN_SANDBOX}, "s-2", "but it was 's-2'"),
        (200, {"output": "echo: x", "sandbox": OWN_SANDBOX}, None, "carries no"),
        (404, {"error": "Not found", "sandbox": OWN_SANDBOX}, None, "a sandbox answered"),
        (409, {"message": "conflict"}, None, "the body has no error text"),
        (409, {"error": 409}, None, "the body has no error text"),
        (404, b"404 page not found", None, "the body is not JSON"),
        (404, {"error": "Not found"}, "s-1", f"header {matchers.SESSION_HEADER} should be None"),
        (200, b"echo: x", "s-1", "the body is not a JSON object"),
        (
            500,
            {"error": "internal server error"},
            None,
            "the status was 500, not 200 or 404 or 409",
        ),
    ],
)
def test_a_session_under_another_path_served_otherwise_fails(
    answer, status, body, session, problem
) -> None:
    assert problem in failure(
        _under_another_path(), answer(status, body, headers=_carrying(session))
    )


def test_a_large_download_is_judged_by_its_checksum_and_never_shown(answer) -> None:
    content = bytes(range(256)) * 4096
    expected = holds_checksum("the file", content)
    assert_that(answer(200, content), expected)
    message = failure(expected, answer(200, content[:65536]))
    assert f"the body was 65536 bytes, SHA-256 {hashlib.sha256(content[:65536]).hexdigest()}" in (
        message
    )
    assert "(65536 bytes of binary data)" in message
