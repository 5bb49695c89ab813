"""Who calls and how: a caller as a value (its Router and WorkloadManager clients, the
token they present), and the calls to one runtime that such a caller makes, in a session
or opening one, each handed to the World to record."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import requests

from acceptance.core.clients import Router, WorkloadManager
from acceptance.core.runtimes import Runtime, RuntimeKind

# A call as the World sends it (again, while a runtime just applied is not served yet).
Send = Callable[[], requests.Response]
# What `touch` sends to an agent: a call that only keeps its session active.
TOUCH_TEXT = "still there?"


@dataclass(frozen=True)
class Caller:
    """Who makes a call, as a value: the Router and WorkloadManager clients presenting one
    subject's bearer token, and the environment variable a user holds that token in (for
    the curl lines of a kept session)."""

    router: Router
    workload_manager: WorkloadManager
    token_variable: str = "AGENTCUBE_API_TOKEN"


class Calls:
    """Calls to one runtime by one caller, presenting one session id or none (a call that
    opens a session); the World records each (`World.calls`, `World.in_session`)."""

    def __init__(
        self,
        record: Callable[[Runtime, str | None, Caller, Send], requests.Response],
        runtime: Runtime,
        session_id: str | None,
        caller: Caller,
    ) -> None:
        self._record = record
        self._runtime = runtime
        self._session_id = session_id
        self._caller = caller

    def invoke(self, path: str, **options: Any) -> requests.Response:
        """Any call under the runtime's invocations/ path (the Router's invoke options)."""
        return self._send(
            lambda router, sid: router.invoke(self._runtime, path, session_id=sid, **options)
        )

    def echo(self, text: str) -> requests.Response:
        return self.invoke("echo", json={"input": text})

    def execute(
        self,
        command: list[str],
        *,
        fields: Mapping[str, Any] | None = None,
        wait: float | None = None,
    ) -> requests.Response:
        """Run a command (PicoD's other `fields`; `wait`: a longer wait for the answer)."""
        return self._send(
            lambda router, sid: router.execute(
                self._runtime, command, session_id=sid, fields=fields, wait=wait
            )
        )

    def run_code(self, code: str) -> requests.Response:
        """Run code in the session's kernel (a stateful interpreter)."""
        return self._send(lambda router, sid: router.run_code(self._runtime, code, session_id=sid))

    def touch(self) -> requests.Response:
        """A harmless call of the runtime's kind: an echo, or a Python no-op."""
        if self._runtime.kind is RuntimeKind.AGENT_RUNTIME:
            return self.echo(TOUCH_TEXT)
        return self.execute(["python3", "-c", "pass"])

    def upload_file(self, path: str, content: bytes) -> requests.Response:
        return self._send(
            lambda router, sid: router.upload_file(self._runtime, path, content, session_id=sid)
        )

    def list_files(self, directory: str) -> requests.Response:
        return self._send(
            lambda router, sid: router.list_files(self._runtime, directory, session_id=sid)
        )

    def download_file(self, path: str) -> requests.Response:
        return self._send(
            lambda router, sid: router.download_file(self._runtime, path, session_id=sid)
        )

    def _send(self, request: Callable[[Router, Any], requests.Response]) -> requests.Response:
        return self._record(
            self._runtime,
            self._session_id,
            self._caller,
            lambda: request(self._caller.router, self._session_id),
        )
