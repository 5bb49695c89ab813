"""Calls a client must be able to tell apart when they fail: a session that has ended, a
"not found" from the agent itself, and requests a code interpreter cannot accept."""

from __future__ import annotations

import base64
import enum
import uuid

from hamcrest import all_of, assert_that, equal_to, has_entry, is_not

from acceptance.core import matchers
from acceptance.core.matchers import Answer
from acceptance.core.runtimes import Runtime, RuntimeKind
from acceptance.core.settings import Settings
from acceptance.domain.world import World, required
from agentcube_contract.session import SESSION_HEADER, SESSION_NOT_FOUND

# PicoD refuses request bodies over 32 MiB (upstream's maxBodySize).
MAX_BODY_SIZE = 32 << 20
_JSON = {"Content-Type": "application/json"}


class BadRequest(enum.Enum):
    """A request a code interpreter must refuse, as the features phrase it, with the status
    and the words of upstream PicoD's refusal (pkg/picod/execute.go, files.go)."""

    MALFORMED_JSON = ("a command request that is not valid JSON", 400, "invalid character")
    EMPTY_COMMAND = ("an empty command", 400, "command cannot be empty")
    BAD_TIMEOUT = ("a timeout that is not a duration", 400, "invalid timeout format")
    BAD_BASE64 = ("an upload whose content is not encoded as the API requires", 400, "base64")
    LISTING_WITHOUT_PATH = ("a listing without a path", 400, "missing 'path'")
    MISSING_FILE = ("a download of a file that does not exist", 404, "file not found")
    MISSING_DIRECTORY = (
        "a listing of a directory that does not exist",
        404,
        "directory not found",
    )
    DIRECTORY_DOWNLOAD = ("a download of a directory", 400, "is a directory")
    OVERSIZED_UPLOAD = ("an upload larger than the sandbox accepts", 413, "request body too large")

    def __init__(self, phrase: str, status: int, explanation: str) -> None:
        self.phrase = phrase
        self.status = status
        self.explanation = explanation


class Refusals:
    def __init__(self, world: World, settings: Settings) -> None:
        self._world = world
        self._settings = settings
        self._sent: BadRequest | None = None

    def close_session(self) -> None:
        """End the scenario's session as a client does, through the WorkloadManager."""
        answer = self._world.close_session(self._world.session)
        assert_that(answer, matchers.succeeded("the WorkloadManager to delete the session"))

    def call_missing_runtime(self, kind: RuntimeKind) -> None:
        namespace = self._settings.namespace
        self._world.calls(Runtime(kind, namespace, f"missing-{uuid.uuid4().hex[:12]}")).touch()

    def expect_refused_as_runtime_not_found(self) -> None:
        call = self._world.last_call
        assert_that(call.response, matchers.refused_because_runtime_not_found(call.runtime))

    def ask_agent_for_missing_path(self) -> None:
        self._world.in_session().invoke("no/such/path", method="GET")

    def expect_agent_not_found_passed_on(self) -> None:
        call = self._world.last_call
        assert_that(call.response, passed_on_from_the_agent(call.presented_session_id))

    def send(self, request: BadRequest) -> None:
        calls = self._world.in_session()
        match request:
            case BadRequest.MALFORMED_JSON:
                calls.invoke("api/execute", data=b'{command: ["true"]}', headers=_JSON)
            case BadRequest.EMPTY_COMMAND:
                calls.execute(["true"], fields={"command": []})
            case BadRequest.BAD_TIMEOUT:
                calls.execute(["true"], fields={"timeout": "soon"})
            case BadRequest.BAD_BASE64:
                body = b'{"path": "a.txt", "content": "%%%"}'
                calls.invoke("api/files", data=body, headers=_JSON)
            case BadRequest.LISTING_WITHOUT_PATH:
                calls.invoke("api/files", method="GET", params={})
            case BadRequest.MISSING_FILE:
                calls.download_file("no-such-file.txt")
            case BadRequest.MISSING_DIRECTORY:
                calls.invoke("api/files", method="GET", params={"path": "no-such-directory"})
            case BadRequest.DIRECTORY_DOWNLOAD:
                stored = calls.upload_file("folder/file.txt", b"x")
                assert_that(stored, matchers.succeeded("PicoD to store folder/file.txt"))
                calls.download_file("folder")
            case BadRequest.OVERSIZED_UPLOAD:  # its base64 content alone exceeds the limit
                content = base64.b64encode(b"\0" * (MAX_BODY_SIZE // 4 * 3 + 3))
                body = b'{"path": "big.bin", "content": "' + content + b'"}'
                calls.invoke("api/files", data=body, headers=_JSON)
        self._sent = request

    def expect_refused_saying_why(self) -> None:
        """The refusal the last request calls for: its status, and an error in its words."""
        sent = required(self._sent, "the scenario has not sent a request to be refused")
        assert_that(self._world.last_answer, matchers.refused_with(sent.status, sent.explanation))


# What its answers are expected to be.


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
