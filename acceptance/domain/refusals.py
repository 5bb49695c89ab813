"""Calls a client must be able to tell apart when they fail: a session that has ended, a
"not found" from the agent itself, and requests a code interpreter cannot accept."""

from __future__ import annotations

import base64
import enum
import uuid
from collections.abc import Callable

import requests
from hamcrest import assert_that

from acceptance.core import matchers
from acceptance.core.runtimes import Runtime, RuntimeKind
from acceptance.domain.world import World

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
    def __init__(self, world: World) -> None:
        self._world = world
        self._sent: BadRequest | None = None

    def close_session(self) -> None:
        """End the scenario's session as a client does, through the WorkloadManager."""
        answer = self._world.close_session(self._world.session)
        assert_that(answer, matchers.succeeded("the WorkloadManager to delete the session"))

    def call_missing_runtime(self, kind: RuntimeKind) -> None:
        namespace = self._world.settings.namespace
        self._world.touch(Runtime(kind, namespace, f"missing-{uuid.uuid4().hex[:12]}"), None)

    def expect_refused_as_runtime_not_found(self) -> None:
        call = self._world.last_call
        assert_that(call.response, matchers.refused_because_runtime_not_found(call.runtime))

    def ask_agent_for_missing_path(self) -> None:
        session = self._world.session
        self._world.call(
            session.runtime,
            session.session_id,
            lambda sid: self._world.router.invoke(
                session.runtime, "no/such/path", session_id=sid, method="GET"
            ),
        )

    def expect_agent_not_found_passed_on(self) -> None:
        call = self._world.last_call
        assert_that(call.response, matchers.passed_on_from_the_agent(call.presented_session_id))

    def send(self, request: BadRequest) -> None:
        session = self._world.session
        send = self._senders()[request]
        self._world.call(session.runtime, session.session_id, send)
        self._sent = request

    def expect_refused_saying_why(self) -> None:
        """The refusal the last request calls for: its status, and an error in its words."""
        if self._sent is None:
            raise AssertionError("the scenario has not sent a request to be refused")
        assert_that(
            self._world.last_answer,
            matchers.refused_with(self._sent.status, self._sent.explanation),
        )

    def _senders(self) -> dict[BadRequest, Callable[[str | None], requests.Response]]:
        router, runtime = self._world.router, self._world.session.runtime

        def post(path: str, body: bytes) -> Callable[[str | None], requests.Response]:
            return lambda sid: router.invoke(
                runtime, path, session_id=sid, data=body, headers=_JSON
            )

        def execute(fields: dict[str, object]) -> Callable[[str | None], requests.Response]:
            return lambda sid: router.execute(runtime, ["true"], session_id=sid, fields=fields)

        def get(route: str, **params: str) -> Callable[[str | None], requests.Response]:
            return lambda sid: router.invoke(
                runtime, route, session_id=sid, method="GET", params=params
            )

        return {
            BadRequest.MALFORMED_JSON: post("api/execute", b'{command: ["true"]}'),
            BadRequest.EMPTY_COMMAND: execute({"command": []}),
            BadRequest.BAD_TIMEOUT: execute({"timeout": "soon"}),
            BadRequest.BAD_BASE64: post("api/files", b'{"path": "a.txt", "content": "%%%"}'),
            BadRequest.LISTING_WITHOUT_PATH: get("api/files"),
            BadRequest.MISSING_FILE: lambda sid: router.download_file(
                runtime, "no-such-file.txt", session_id=sid
            ),
            BadRequest.MISSING_DIRECTORY: get("api/files", path="no-such-directory"),
            BadRequest.DIRECTORY_DOWNLOAD: self._download_a_directory,
            BadRequest.OVERSIZED_UPLOAD: lambda sid: post("api/files", _oversized_upload())(sid),
        }

    def _download_a_directory(self, session_id: str | None) -> requests.Response:
        assert session_id is not None
        router, runtime = self._world.router, self._world.session.runtime
        stored = router.upload_file(runtime, "folder/file.txt", b"x", session_id=session_id)
        assert_that(stored, matchers.succeeded("PicoD to store folder/file.txt"))
        return router.download_file(runtime, "folder", session_id=session_id)


def _oversized_upload() -> bytes:
    """A well-formed JSON upload whose base64 content alone exceeds the body limit."""
    content = base64.b64encode(b"\0" * (MAX_BODY_SIZE // 4 * 3 + 3))
    return b'{"path": "big.bin", "content": "' + content + b'"}'
