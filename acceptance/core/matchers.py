"""PyHamcrest matchers shared by many capabilities: an Answer, a Refusal, `meets` for what
is not an answer (a capability's own live beside its helper in acceptance/domain). Each
describes the expectation in the platform's words and, on a mismatch, says what was wrong
and shows the whole answer, so a failure report can be read without re-running anything.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, TypeVar

import requests
from hamcrest import (
    all_of,
    equal_to,
    has_entries,
    none,
)
from hamcrest.core.base_matcher import BaseMatcher
from hamcrest.core.description import Description
from hamcrest.core.matcher import Matcher
from hamcrest.core.string_description import StringDescription

from acceptance.core.evidence import describe_response
from acceptance.core.runtimes import Runtime
from agentcube_contract.session import SESSION_HEADER, SESSION_NOT_FOUND

_NO_JSON = object()
T = TypeVar("T")


def json_body(response: requests.Response) -> Any:
    """The answer's body as JSON; a marker no JSON value equals when it is none."""
    try:
        return response.json()
    except ValueError:
        return _NO_JSON


class _Meets(BaseMatcher[T]):
    """A value in which `problem` finds nothing wrong (None), described as `expectation`; a
    mismatch names what is wrong, when `problem` can, then shows the value as `shown` does."""

    def __init__(
        self, expectation: str, problem: Callable[[T], str | None], shown: Callable[[T], str]
    ) -> None:
        self.expectation, self.problem, self.shown = expectation, problem, shown

    def _matches(self, item: T) -> bool:
        return self.problem(item) is None

    def describe_to(self, description: Description) -> None:
        description.append_text(self.expectation)

    def describe_mismatch(self, item: T, mismatch: Description) -> None:
        problem = self.problem(item)
        mismatch.append_text(f"{problem}; {self.shown(item)}" if problem else self.shown(item))


class Answer(_Meets[requests.Response]):
    """An answer with the expected status (or one of several), JSON body and headers, each
    optional; `view` turns the JSON body into what `body` is matched against."""

    def __init__(
        self,
        expectation: str,
        *,
        status: int | Collection[int] | None = None,
        body: Matcher[Any] | None = None,
        headers: Mapping[str, Matcher[Any]] | None = None,
        view: Callable[[Any], Any] = lambda body: body,
    ) -> None:
        super().__init__(expectation, self._problem, _the_answer)
        self.statuses = {status} if isinstance(status, int) else set(status or ())
        self.wanted = " or ".join(str(code) for code in sorted(self.statuses))
        self.body = body
        self.headers = dict(headers or {})
        self.view = view

    def _problem(self, response: requests.Response) -> str | None:
        if self.statuses and response.status_code not in self.statuses:
            return f"the status was {response.status_code}, not {self.wanted}"
        for name, matcher in self.headers.items():
            value = response.headers.get(name)
            if not matcher.matches(value):
                expected = StringDescription().append_description_of(matcher)
                found = "it was missing" if value is None else f"it was {value!r}"
                return f"header {name} should be {expected}, but {found}"
        if self.body is not None:
            body = json_body(response)
            if body is _NO_JSON:
                return "the body is not JSON"
            body = self.view(body)
            if not self.body.matches(body):
                mismatch = StringDescription()
                self.body.describe_mismatch(body, mismatch)
                return f"in the body, {mismatch}"
        return self._own_problem(response)

    def _own_problem(self, response: requests.Response) -> str | None:
        """What a kind of answer checks past the status, headers and body: nothing here."""
        return None


def _the_answer(response: requests.Response) -> str:
    return f"the answer was {describe_response(response)}"


def _is_uuid4(item: Any) -> bool:
    try:
        return isinstance(item, str) and uuid.UUID(item).version == 4
    except ValueError:
        return False


def a_uuid4() -> Matcher[Any]:
    return meets("a UUID v4", _is_uuid4, lambda item: f"was {item!r}")


def echoes(text: str) -> Answer:
    reply = f"echo: {text}"
    return Answer(
        f"the echo agent to answer 200 with output {reply!r}",
        status=200,
        body=has_entries(output=reply, metadata=has_entries(original_input=text)),
    )


def carries_session_id(session_id: str) -> Answer:
    return Answer(
        f"the answer to carry session id {session_id} in {SESSION_HEADER}",
        headers={SESSION_HEADER: equal_to(session_id)},
    )


def refused_because_session_not_found(session_id: str, *, code_required: bool) -> Answer:
    """404 with an error naming the session and, since upstream PR #460, code
    SESSION_NOT_FOUND, which a 404 from the application inside the sandbox never carries.
    Without `code_required` (older releases) the code may be missing, but no other code."""
    return Refusal(
        f"the Router to refuse the call with 404 because session {session_id} was not found"
        + (f", with code {SESSION_NOT_FOUND}" if code_required else "")
        + ", opening no session",
        404,
        (session_id, "not found"),
        code=SESSION_NOT_FOUND,
        code_may_be_missing=not code_required,
        by_the_router=True,
    )


class Refusal(Answer):
    """A refusal as the contract promises it, no more: the status, an error text holding
    each reason (in any case: a gateway may wrap it), the stable code if any (None: checks
    none, as PicoD's is a number; `code_may_be_missing`: none or that one), other fields
    allowed; `by_the_router`: no session id came back."""

    def __init__(
        self,
        expectation: str,
        status: int,
        reasons: Sequence[str],
        *,
        code: str | None = None,
        code_may_be_missing: bool = False,
        by_the_router: bool = False,
    ) -> None:
        super().__init__(
            expectation,
            status=status,
            headers={SESSION_HEADER: none()} if by_the_router else None,
        )
        self.reasons = tuple(reasons)
        self.code = code
        self.code_may_be_missing = code_may_be_missing

    def _own_problem(self, response: requests.Response) -> str | None:
        body = json_body(response)
        if body is _NO_JSON:
            return "the body is not JSON"
        error = body.get("error") if isinstance(body, dict) else None
        if not isinstance(error, str):
            return "the body has no error text"
        for reason in self.reasons:
            if reason.lower() not in error.lower():
                return f"the error {error!r} does not say {reason!r}"
        if self.code is None or (self.code_may_be_missing and "code" not in body):
            return None
        if "code" not in body:
            return f"the body has no code, not {self.code!r}"
        if body["code"] != self.code:
            return f"the code was {body['code']!r}, not {self.code!r}"
        return None


def refused_with(status: int, explanation: str) -> Answer:
    """A refusal whose JSON error explains the problem in these words (any case)."""
    return Refusal(
        f"the call to be refused with {status} and an error that says {explanation!r}",
        status,
        (explanation,),
    )


def refused_because_runtime_not_found(runtime: Runtime) -> Answer:
    return Refusal(
        f"the Router to refuse the call with 404 because {runtime} was not found, "
        "opening no session",
        404,
        (runtime.kind.resource, f"{runtime.namespace}/{runtime.name}", "not found"),
        by_the_router=True,
    )


def meets(expectation: str, test: Callable[[T], bool], shown: Callable[[T], str]) -> Matcher[T]:
    """A value `test` holds for (not an answer), described as `expectation`, shown on a
    mismatch as `shown` tells it."""
    return _Meets(expectation, lambda item: None if test(item) else "", shown)


def without_problem(
    expectation: str, problem: Callable[[T], str | None], shown: Callable[[T], str]
) -> Matcher[T]:
    """A value in which `problem` finds none; a mismatch names the problem, then shows the
    value as `shown` tells it."""
    return _Meets(expectation, problem, shown)


def all_met(*expectations: Matcher[requests.Response]) -> Matcher[requests.Response]:
    """hamcrest's all_of for answers, typed: in a call, all_of's type is not inferred."""
    combined: Matcher[requests.Response] = all_of(*expectations)
    return combined


def holds_json(expectation: str, body: Matcher[Any]) -> Answer:
    return Answer(expectation, status=200, body=body)


def holds_bytes(expectation: str, content: bytes) -> Matcher[requests.Response]:
    """A 200 answer whose body is exactly `content` (a downloaded file)."""
    return meets(
        expectation,
        lambda answer: answer.status_code == 200 and answer.content == content,
        _the_answer,
    )


def succeeded(expectation: str) -> Answer:
    """A plain 200, for calls that set a scenario up."""
    return Answer(expectation, status=200)
