"""PyHamcrest matchers for AgentCube's answers.

Each matcher describes the expectation in the platform's words and, on a mismatch, says
what was wrong and shows the whole answer (status, request line, headers, body excerpt),
so a failure report can be read without re-running anything.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import requests
from hamcrest import (
    all_of,
    any_of,
    contains_string,
    equal_to,
    has_entries,
    has_entry,
    has_items,
    has_key,
    is_in,
    is_not,
)
from hamcrest.core.base_matcher import BaseMatcher
from hamcrest.core.description import Description
from hamcrest.core.matcher import Matcher
from hamcrest.core.string_description import StringDescription

from acceptance.clients import SESSION_HEADER
from acceptance.evidence import describe_response
from acceptance.runtimes import Runtime

_NO_JSON = object()


def _json(response: requests.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return _NO_JSON


class Answer(BaseMatcher[requests.Response]):
    """An answer with the expected status, a JSON body matching `body` and headers matching
    `headers`; any of the three may be left out."""

    def __init__(
        self,
        expectation: str,
        *,
        status: int | None = None,
        body: Matcher[Any] | None = None,
        headers: Mapping[str, Matcher[Any]] | None = None,
    ) -> None:
        self.expectation = expectation
        self.status = status
        self.body = body
        self.headers = dict(headers or {})

    def _problem(self, response: requests.Response) -> str | None:
        if self.status is not None and response.status_code != self.status:
            return f"the status was {response.status_code}, not {self.status}"
        for name, matcher in self.headers.items():
            value = response.headers.get(name)
            if not matcher.matches(value):
                expected = StringDescription().append_description_of(matcher)
                found = "it was missing" if value is None else f"it was {value!r}"
                return f"header {name} should be {expected}, but {found}"
        if self.body is not None:
            body = _json(response)
            if body is _NO_JSON:
                return "the body is not JSON"
            if not self.body.matches(body):
                mismatch = StringDescription()
                self.body.describe_mismatch(body, mismatch)
                return f"in the body, {mismatch}"
        return None

    def _matches(self, item: requests.Response) -> bool:
        return self._problem(item) is None

    def describe_to(self, description: Description) -> None:
        description.append_text(self.expectation)

    def describe_mismatch(self, item: requests.Response, mismatch: Description) -> None:
        mismatch.append_text(f"{self._problem(item)}; the answer was {describe_response(item)}")


class _Uuid4(BaseMatcher[Any]):
    def _matches(self, item: Any) -> bool:
        try:
            return isinstance(item, str) and uuid.UUID(item).version == 4
        except ValueError:
            return False

    def describe_to(self, description: Description) -> None:
        description.append_text("a UUID v4")


def a_uuid4() -> Matcher[Any]:
    return _Uuid4()


def echoes(text: str) -> Answer:
    reply = f"echo: {text}"
    return Answer(
        f"the echo agent to answer 200 with output {reply!r}",
        status=200,
        body=has_entries(output=reply, metadata=has_entries(original_input=text)),
    )


def carries_new_session_id(known: Collection[str]) -> Answer:
    """A session id that is a UUID v4 and none of the ids the scenario already knew."""
    return Answer(
        f"the answer to carry a new session id in {SESSION_HEADER}",
        headers={SESSION_HEADER: all_of(a_uuid4(), is_not(is_in(list(known))))},
    )


def carries_session_id(session_id: str) -> Answer:
    return Answer(
        f"the answer to carry session id {session_id} in {SESSION_HEADER}",
        headers={SESSION_HEADER: equal_to(session_id)},
    )


def refused_because_session_not_found(session_id: str) -> Answer:
    """404 with an error naming the session; since upstream PR #460 also code
    SESSION_NOT_FOUND, which a 404 from the application inside the sandbox never carries."""
    return Answer(
        f"the Router to refuse the call with 404 because session {session_id} was not found",
        status=404,
        body=all_of(
            has_entry("error", all_of(contains_string(session_id), contains_string("not found"))),
            any_of(is_not(has_key("code")), has_entry("code", "SESSION_NOT_FOUND")),
        ),
    )


def refused_because_runtime_not_found(runtime: Runtime) -> Answer:
    return Answer(
        f"the Router to refuse the call with 404 because {runtime} was not found",
        status=404,
        body=has_entry(
            "error",
            all_of(
                contains_string(runtime.kind.resource),
                contains_string(f"{runtime.namespace}/{runtime.name}"),
                contains_string("not found"),
            ),
        ),
    )


def command_result(expectation: str, **entries: Any) -> Answer:
    """PicoD's answer to an execute call: 200 and a result with these entries."""
    return Answer(expectation, status=200, body=has_entries(**entries))


def prints_line(line: str) -> Answer:
    return command_result(f"the command to print {line!r} and nothing else", stdout=f"{line}\n")


def exits_with(code: int) -> Answer:
    return command_result(f"the command to exit with code {code}", exit_code=code)


def fails_because_undefined(name: str) -> Answer:
    return command_result(
        f"the command to fail with NameError because {name!r} is not defined",
        exit_code=is_not(0),
        stderr=contains_string(f"NameError: name '{name}' is not defined"),
    )


def lists_files(names: Sequence[str]) -> Answer:
    return Answer(
        f"the workspace listing to include {', '.join(names)}",
        status=200,
        body=has_entry("files", has_items(*(has_entry("name", name) for name in names))),
    )


def holds_json(expectation: str, body: Matcher[Any]) -> Answer:
    return Answer(expectation, status=200, body=body)


def holds_fibonacci(numbers: Sequence[int]) -> Answer:
    """The file fixtures/scripts/fibonacci.py writes: {"count": N, "fibonacci": [...]}."""
    return holds_json(
        f"the file to hold the first {len(numbers)} Fibonacci numbers",
        has_entries(count=len(numbers), fibonacci=list(numbers)),
    )


def succeeded(expectation: str) -> Answer:
    """A plain 200, for calls that set a scenario up."""
    return Answer(expectation, status=200)


class ServedByOneSandbox(BaseMatcher[Sequence[Mapping[str, Any]]]):
    """The echo agent's sandbox reports of consecutive calls: one process (same hostname,
    pid and start time) whose call counter went 1, 2, ... with no call in between."""

    _IDENTITY = ("hostname", "pid", "started_at")

    def _matches(self, item: Sequence[Mapping[str, Any]]) -> bool:
        if not all(isinstance(report, Mapping) for report in item):
            return False
        identities = {tuple(report.get(key) for key in self._IDENTITY) for report in item}
        counters = [report.get("calls") for report in item]
        return len(item) > 1 and len(identities) == 1 and counters == list(range(1, len(item) + 1))

    def describe_to(self, description: Description) -> None:
        description.append_text(
            "every call served by one sandbox (same hostname, pid and start time), "
            "its call counter going 1, 2, ... in order"
        )

    def describe_mismatch(
        self, item: Sequence[Mapping[str, Any]], mismatch_description: Description
    ) -> None:
        mismatch_description.append_text(
            "the sandboxes reported " + json.dumps(list(item), sort_keys=True)
        )


def served_by_one_sandbox() -> ServedByOneSandbox:
    return ServedByOneSandbox()
