"""PyHamcrest matchers for AgentCube's answers.

Each matcher describes the expectation in the platform's words and, on a mismatch, says
what was wrong and shows the whole answer (status, request line, headers, body excerpt),
so a failure report can be read without re-running anything.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, TypeVar

import requests
from hamcrest import (
    all_of,
    contains_string,
    described_as,
    equal_to,
    has_entries,
    has_entry,
    has_item,
    has_items,
    has_key,
    is_in,
    is_not,
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


def _json(response: requests.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return _NO_JSON


class Answer(BaseMatcher[requests.Response]):
    """An answer with the expected status (or one of several), a JSON body matching `body`
    and headers matching `headers`; any of the three may be left out. `view` turns the JSON
    body into what `body` is matched against."""

    def __init__(
        self,
        expectation: str,
        *,
        status: int | Collection[int] | None = None,
        body: Matcher[Any] | None = None,
        headers: Mapping[str, Matcher[Any]] | None = None,
        view: Callable[[Any], Any] = lambda body: body,
    ) -> None:
        self.expectation = expectation
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
            body = _json(response)
            if body is _NO_JSON:
                return "the body is not JSON"
            body = self.view(body)
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


def passed_on_from_the_agent(session_id: str) -> Answer:
    """The echo agent's own 404, proxied as it was sent: in the session, without the
    Router's SESSION_NOT_FOUND code."""
    return Answer(
        f"the echo agent's own 404 passed on in session {session_id}, "
        f"without the Router's code {SESSION_NOT_FOUND}",
        status=404,
        headers={SESSION_HEADER: equal_to(session_id)},
        body=all_of(has_entry("error", "Not found"), is_not(has_entry("code", SESSION_NOT_FOUND))),
    )


class Refusal(Answer):
    """The one matcher of refusals: what the contract promises of one, and no more: the
    status, an error text that contains each reason (in any case, so a gateway may wrap it
    in words of its own), the stable code when there is one, any other field allowed.
    `code` None checks no code (PicoD's errors carry a number there);
    `code_may_be_missing` accepts a body without any code but no other code;
    `by_the_router` demands that no session id came back, as a Router's refusal opens no
    session."""

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

    def _problem(self, response: requests.Response) -> str | None:
        problem = super()._problem(response)
        if problem is not None:
            return problem
        body = _json(response)
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


def refused_as_escaping_the_workspace() -> Answer:
    return Refusal(
        "the call to be refused with 400 because the path escapes the workspace",
        400,
        ("access denied", "escapes"),
    )


def refused_as_unauthorized(reason: str) -> Answer:
    """The Router's 401, which opens no session (pkg/router/auth.go:44-83)."""
    return Refusal(
        f"the Router to refuse the call with 401 because of {reason!r}, opening no session "
        "(code UNAUTHORIZED)",
        401,
        (reason,),
        code="UNAUTHORIZED",
        by_the_router=True,
    )


def refused_as_not_the_owner() -> Answer:
    """The Router's 403 for another subject's session (pkg/router/handlers.go:118-127)."""
    return Refusal(
        "the Router to refuse another subject's call in the session with 403 FORBIDDEN "
        "because the caller does not own it",
        403,
        ("you do not own this sandbox",),
        code="FORBIDDEN",
        by_the_router=True,
    )


def refused_as_missing_role() -> Answer:
    """The Router's 403 for a valid token without its required role, before any session is
    looked up or opened (pkg/router/auth.go:109-118)."""
    return Refusal(
        "the Router to refuse the call with 403 FORBIDDEN because the caller lacks the role "
        "it requires, opening no session",
        403,
        ("insufficient permissions", "missing role"),
        code="FORBIDDEN",
        by_the_router=True,
    )


class CarriesNoCredential(BaseMatcher[requests.Response]):
    """An answer none of whose headers or body holds any of these credentials (by name:
    the values never reach a message)."""

    def __init__(self, credentials: Mapping[str, str]) -> None:
        self._credentials = {name: value for name, value in credentials.items() if value}
        self._found: list[str] = []

    def _matches(self, item: requests.Response) -> bool:
        text = item.text + "".join(f"{k}: {v}\n" for k, v in item.headers.items())
        self._found = [name for name, value in self._credentials.items() if value in text]
        return not self._found

    def describe_to(self, description: Description) -> None:
        description.append_text(
            "an answer that repeats none of the credentials (" + ", ".join(self._credentials) + ")"
        )

    def describe_mismatch(self, item: requests.Response, description: Description) -> None:
        description.append_text(
            f"it carried {', '.join(self._found)} (masked below): {describe_response(item)}"
        )


def carries_no_credential(credentials: Mapping[str, str]) -> Matcher[requests.Response]:
    return CarriesNoCredential(credentials)


def refused_as_overloaded() -> Answer:
    """The Router's 429 past --max-concurrent-requests (pkg/router/server.go:142-148)."""
    return Refusal(
        "the Router to refuse the call with 429 because it is overloaded, opening no session "
        "(code SERVER_OVERLOADED)",
        429,
        ("server overloaded",),
        code="SERVER_OVERLOADED",
        by_the_router=True,
    )


# What upstream's Router answers when it cannot reach a session's sandbox, by status
# (pkg/router/handlers.go:246-257 at 939abb5): a refused connection, a dial or read that
# timed out (a pod address that stops answering), and any other error.
SANDBOX_GONE_ERRORS = {
    502: "sandbox unreachable",
    503: "sandbox unreachable",
    504: "sandbox timeout",
}


class _SandboxGone(Answer):
    """502, 503 or 504, each with the error words upstream gives that status."""

    def __init__(self) -> None:
        super().__init__(
            "the Router to answer 502 or 503 (sandbox unreachable) or 504 (sandbox timeout) "
            "because the session's sandbox is gone",
            status=SANDBOX_GONE_ERRORS,
            body=has_key("error"),
        )

    def _problem(self, response: requests.Response) -> str | None:
        problem = super()._problem(response)
        if problem is not None:
            return problem
        words = SANDBOX_GONE_ERRORS[response.status_code]
        error = _json(response).get("error")
        if not isinstance(error, str) or words not in error.lower():
            return f"a {response.status_code} must say {words!r}, but the error was {error!r}"
        return None


def failed_because_the_sandbox_died() -> Answer:
    """What the Router answers when the session's sandbox is gone."""
    return _SandboxGone()


def refused_because_runtime_not_found(runtime: Runtime) -> Answer:
    return Refusal(
        f"the Router to refuse the call with 404 because {runtime} was not found, "
        "opening no session",
        404,
        (runtime.kind.resource, f"{runtime.namespace}/{runtime.name}", "not found"),
        by_the_router=True,
    )


def _as_command_result(body: Any) -> Any:
    """PicoD's ExecuteResponse as it is; a kernel's E2B Execution (a stateful
    interpreter's run_code) with its logs joined into stdout and stderr, beside its error."""
    if isinstance(body, dict) and isinstance(body.get("logs"), dict):
        logs = body["logs"]
        return {
            "stdout": "".join(logs.get("stdout") or []),
            "stderr": "".join(logs.get("stderr") or []),
            "error": body.get("error"),
        }
    return body


def command_result(expectation: str, **entries: Any) -> Answer:
    """The answer to a command or to code run in a kernel: 200 and a result with these
    entries (a kernel's output in the same words as a command's)."""
    return Answer(expectation, status=200, body=has_entries(**entries), view=_as_command_result)


def ran_without_error() -> Answer:
    """A kernel's answer to code that ran to its end, raising nothing."""
    return command_result("the code to run without an error", error=none())


def wrote_no_error_output() -> Answer:
    return command_result("the command to write nothing to its error output", stderr="")


def failed_because_the_kernel_died() -> Answer:
    """A stateful interpreter's answer when its kernel died during the run (localcube's)."""
    return Answer(
        "the interpreter to answer 500 because the session's kernel died",
        status=500,
        body=has_entry("error", contains_string("kernel died")),
    )


def prints_line(line: str) -> Answer:
    return command_result(f"the command to print {line!r} and nothing else", stdout=f"{line}\n")


def exits_with(code: int) -> Answer:
    return command_result(f"the command to exit with code {code}", exit_code=code)


def completes_with_lines(lines: Sequence[str]) -> Answer:
    return command_result(
        f"the command to complete with exit code 0 and all {len(lines)} lines it printed",
        exit_code=0,
        stdout="".join(f"{line}\n" for line in lines),
    )


def timed_out_after(seconds: int) -> Answer:
    return command_result(
        f"the command to be stopped with exit code 124 after its timeout of {seconds} s",
        exit_code=124,
        stderr=contains_string(f"Command timed out after {seconds} seconds"),
    )


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


class _Meets(BaseMatcher[T]):
    def __init__(self, expectation: str, test: Callable[[T], bool], shown: Callable[[T], str]):
        self.expectation, self.test, self.shown = expectation, test, shown

    def _matches(self, item: T) -> bool:
        return self.test(item)

    def describe_to(self, description: Description) -> None:
        description.append_text(self.expectation)

    def describe_mismatch(self, item: T, mismatch_description: Description) -> None:
        mismatch_description.append_text(self.shown(item))


def meets(expectation: str, test: Callable[[T], bool], shown: Callable[[T], str]) -> Matcher[T]:
    """A value `test` holds for, described as `expectation`; a mismatch shows the value as
    `shown` tells it (for values that are not answers: streams, conversations)."""
    return _Meets(expectation, test, shown)


def all_met(*expectations: Matcher[requests.Response]) -> Matcher[requests.Response]:
    """hamcrest's all_of for answers, typed: in a call, all_of's type is not inferred."""
    combined: Matcher[requests.Response] = all_of(*expectations)
    return combined


def lists_one_and_none_of(name: str, others: Sequence[str]) -> Answer:
    def listed(file_name: str) -> Matcher[Sequence[Mapping[str, str]]]:
        entry: Matcher[Sequence[Mapping[str, str]]] = has_item(has_entry("name", file_name))
        return entry

    def unlisted(file_name: str) -> Matcher[Sequence[Mapping[str, str]]]:
        absent: Matcher[Sequence[Mapping[str, str]]] = is_not(listed(file_name))
        return absent

    return Answer(
        f"the workspace listing to hold {name} and none of {', '.join(others)}",
        status=200,
        body=has_entry(
            "files",
            all_of(listed(name), *(unlisted(other) for other in others)),
        ),
    )


def holds_json(expectation: str, body: Matcher[Any]) -> Answer:
    return Answer(expectation, status=200, body=body)


class _HoldsBytes(BaseMatcher[requests.Response]):
    def __init__(self, expectation: str, content: bytes) -> None:
        self.expectation = expectation
        self.content = content

    def _matches(self, item: requests.Response) -> bool:
        return item.status_code == 200 and item.content == self.content

    def describe_to(self, description: Description) -> None:
        description.append_text(self.expectation)

    def describe_mismatch(self, item: requests.Response, mismatch: Description) -> None:
        mismatch.append_text(f"the answer was {describe_response(item)}")


def holds_bytes(expectation: str, content: bytes) -> Matcher[requests.Response]:
    """A 200 answer whose body is exactly `content` (a downloaded file)."""
    return _HoldsBytes(expectation, content)


class _RevealsNothing(BaseMatcher[requests.Response]):
    """An answer that neither contains the secret nor lists the file that holds it."""

    def __init__(self, secret: str, file_name: str) -> None:
        self.secret = secret
        self.file_name = file_name

    def _problem(self, response: requests.Response) -> str | None:
        if self.secret.encode() in response.content:
            return "the answer holds the secret"
        body = _json(response)
        files = body.get("files") if isinstance(body, dict) else None
        if isinstance(files, list) and any(
            isinstance(entry, dict) and entry.get("name") == self.file_name for entry in files
        ):
            return f"the answer lists {self.file_name}"
        return None

    def _matches(self, item: requests.Response) -> bool:
        return self._problem(item) is None

    def describe_to(self, description: Description) -> None:
        description.append_text(
            f"an answer that reveals nothing from outside the workspace "
            f"(neither the secret nor a listing of {self.file_name})"
        )

    def describe_mismatch(self, item: requests.Response, mismatch: Description) -> None:
        mismatch.append_text(f"{self._problem(item)}; the answer was {describe_response(item)}")


def reveals_nothing_of(secret: str, file_name: str) -> Matcher[requests.Response]:
    return _RevealsNothing(secret, file_name)


def finished_long_call() -> Answer:
    """The echo agent's answer to POST /echo/sleep, once it has slept."""
    return holds_json("the echo agent to finish its long call", has_entries(output="slept"))


class _NewSessionIds(BaseMatcher[Sequence[str]]):
    """Session ids, in the order they were issued: each a UUID v4 that neither an earlier
    one in the sequence nor any of `earlier` had."""

    def __init__(self, earlier: Collection[str]) -> None:
        self.earlier = set(earlier)

    def _problem(self, ids: Sequence[str]) -> str | None:
        seen = set(self.earlier)
        for position, session_id in enumerate(ids, start=1):
            if not a_uuid4().matches(session_id):
                return f"session id {session_id!r} (number {position}) is not a UUID v4"
            if session_id in seen:
                return f"session id {session_id} (number {position}) was issued before"
            seen.add(session_id)
        return None

    def _matches(self, item: Sequence[str]) -> bool:
        return self._problem(item) is None

    def describe_to(self, description: Description) -> None:
        description.append_text(
            f"every session id a UUID v4 never issued before in this run "
            f"({len(self.earlier)} issued earlier)"
        )

    def describe_mismatch(self, item: Sequence[str], mismatch: Description) -> None:
        mismatch.append_text(f"{self._problem(item)}; the ids were {', '.join(item)}")


def new_session_ids(earlier: Collection[str]) -> Matcher[Sequence[str]]:
    return _NewSessionIds(earlier)


def not_given_credentials(tokens: Mapping[str, str]) -> Matcher[Any]:
    """The echo agent's sandbox report: no word of any header it received is one of these
    tokens (by whose they are), which it reports as SHA-256 fingerprints."""
    fingerprints = [hashlib.sha256(token.encode()).hexdigest() for token in tokens.values()]
    any_of_words: Matcher[Sequence[str]] = has_item(is_in(fingerprints))
    return described_as(
        f"a sandbox that received none of the callers' tokens ({', '.join(tokens)})",
        has_entry("header_word_sha256s", is_not(any_of_words)),
    )


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
        shown = [
            {key: report.get(key) for key in (*self._IDENTITY, "calls")}
            if isinstance(report, Mapping)
            else report
            for report in item
        ]
        mismatch_description.append_text("the sandboxes reported " + json.dumps(shown))


def served_by_one_sandbox() -> ServedByOneSandbox:
    return ServedByOneSandbox()


class _HoldsChecksum(BaseMatcher[requests.Response]):
    """A 200 answer whose body has this length and SHA-256 digest: a large download, which
    a failure shows by its length and digest, never by its bytes."""

    def __init__(self, expectation: str, size: int, sha256: str) -> None:
        self.expectation = expectation
        self.size = size
        self.sha256 = sha256

    def _matches(self, item: requests.Response) -> bool:
        return item.status_code == 200 and _digest(item.content) == (self.size, self.sha256)

    def describe_to(self, description: Description) -> None:
        description.append_text(f"{self.expectation} ({self.size} bytes, SHA-256 {self.sha256})")

    def describe_mismatch(self, item: requests.Response, mismatch: Description) -> None:
        size, sha256 = _digest(item.content)
        mismatch.append_text(
            f"the body was {size} bytes, SHA-256 {sha256}; the answer was {describe_response(item)}"
        )


def _digest(content: bytes) -> tuple[int, str]:
    return len(content), hashlib.sha256(content).hexdigest()


def holds_checksum(expectation: str, size: int, sha256: str) -> Matcher[requests.Response]:
    return _HoldsChecksum(expectation, size, sha256)


def lists_file_of_size(name: str, size: int) -> Answer:
    return Answer(
        f"the workspace listing to show {name} with its size of {size} bytes",
        status=200,
        body=has_entry("files", has_item(has_entries(name=name, size=size))),
    )


class _OwnSandboxOrRefusal(Answer):
    """The answer to a call in a session through a path that names a runtime the session
    does not belong to. Upstream's Router looks an existing session up by its id alone and
    forwards the call to the session's own sandbox; a Router that binds a session to its
    path refuses it (404, or 409 as upstream's open PR #324 proposes). Either way no other
    sandbox serves it and no new session is opened: a refusal is the Router's own (see
    Refusal()), with no session id and no sandbox's report."""

    def __init__(self, session_id: str, sandbox: Mapping[str, Any], runtime: Runtime) -> None:
        expectation = (
            f"the call to {runtime} in session {session_id} to be served by the session's own "
            "sandbox or refused with 404 or 409, never by another sandbox or in a new session"
        )
        self.refusals = {
            status: Refusal(expectation, status, (), by_the_router=True) for status in (404, 409)
        }
        super().__init__(
            expectation,
            status={200, *self.refusals},
            headers={SESSION_HEADER: is_in([None, session_id])},
        )
        self.identity = _sandbox_identity(sandbox)

    def _problem(self, response: requests.Response) -> str | None:
        problem = super()._problem(response)
        if problem is not None:
            return problem
        body = _json(response)
        if response.status_code in self.refusals:
            problem = self.refusals[response.status_code]._problem(response)
            if problem is None and "sandbox" in body:
                return "a sandbox answered the refusal"
            return problem
        if not isinstance(body, dict):
            return "the body is not a JSON object"
        served_by = _sandbox_identity(body.get("sandbox"))
        if served_by != self.identity:
            return f"it was served by sandbox {served_by}, not by the session's {self.identity}"
        if response.headers.get(SESSION_HEADER) is None:
            return f"the answer carries no {SESSION_HEADER}"
        return None


def _sandbox_identity(report: Any) -> dict[str, Any] | None:
    """What tells the echo agent's sandboxes apart in its report of the one that served."""
    if not isinstance(report, Mapping):
        return None
    return {key: report.get(key) for key in ServedByOneSandbox._IDENTITY}


def served_by_its_own_sandbox_or_refused(
    session_id: str, sandbox: Mapping[str, Any], runtime: Runtime
) -> Answer:
    """See _OwnSandboxOrRefusal; `sandbox`: the echo agent's report of the session's own."""
    return _OwnSandboxOrRefusal(session_id, sandbox, runtime)
