"""A 403 for a token without the Router's required role is not the ownership refusal: the
credential steps fail on it naming the token, whatever the ownership matcher would say."""

from __future__ import annotations

import pytest

from acceptance.domain.credentials import fail_on_a_missing_role

MISSING_ROLE = {
    "error": "insufficient permissions: missing role sandbox:invoke",
    "code": "FORBIDDEN",
}


def test_a_missing_role_refusal_fails_naming_the_token_and_the_answer(answer) -> None:
    """Upstream: pkg/router/auth.go:96-122"""
    with pytest.raises(AssertionError) as error:
        fail_on_a_missing_role(answer(403, MISSING_ROLE), "second_api_token")
    message = str(error.value)
    assert "refused the second_api_token caller with 403" in message, message
    assert "insufficient permissions: missing role sandbox:invoke" in message, message
    assert "lacks the role the Router requires" in message, message
    assert "403 Forbidden from POST http://router.test/" in message, message


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (403, {"error": "you do not own this sandbox", "code": "FORBIDDEN"}),
        (403, b"forbidden"),
        (200, {"output": "echo: insufficient permissions: missing role"}),
    ],
    ids=["ownership", "not-json", "not-a-refusal"],
)
def test_other_answers_are_left_to_the_scenario_s_own_expectation(answer, status, body) -> None:
    fail_on_a_missing_role(answer(status, body), "second_api_token")
