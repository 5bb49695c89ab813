"""Who calls and how: a caller as a value, and the calls to one runtime it makes, in a
session or opening one. Each call goes one way: sent (again, while a runtime just applied
is not served yet), then handed finished to whoever records it (the World)."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import requests
from hamcrest import is_not

from acceptance.core import matchers
from acceptance.core.clients import Router
from acceptance.core.polling import eventually
from acceptance.core.runtimes import Runtime, RuntimeKind
from acceptance.core.settings import Settings

# What `touch` sends to an agent: a call that only keeps its session active.
TOUCH_TEXT = "still there?"


@dataclass(frozen=True)
class Caller:
    """Who makes a call, as a value: the Router it calls, the bearer token it presents
    (None: none), and the environment variable a user holds that token in (for the curl
    lines of a kept session)."""

    router: Router
    token: str | None
    token_variable: str = "AGENTCUBE_API_TOKEN"


@dataclass(frozen=True)
class Call:
    """One call through the Router (or to the WorkloadManager, opening a session), finished:
    who made it, where it went, the session it presented, the answer, when it was sent and
    answered (time.monotonic), the sessions the scenario knew before it (set as recorded)."""

    caller: Caller
    runtime: Runtime
    sent_session_id: str | None
    response: requests.Response
    sent_at: float
    answered_at: float
    known_before: tuple[str, ...] = field(default=(), repr=False)

    @property
    def presented_session_id(self) -> str:
        """The session id the call presented; a step that needs one fails without it."""
        if self.sent_session_id is None:
            raise AssertionError("the last call presented no session id")
        return self.sent_session_id


@dataclass(frozen=True)
class Calls:
    """Calls to one runtime by one caller, presenting one session id or none (a call that
    opens a session), each handed to `record` once answered. A first call to a runtime in
    `unserved` (applied, not yet served: a WorkloadManager finds runtimes through a cached
    watch) is sent again while the target answers that the runtime does not exist."""

    runtime: Runtime
    session_id: str | None
    caller: Caller
    record: Callable[[Call], None]
    unserved: set[Runtime]
    settings: Settings

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
        return self.invoke("api/execute", json={"command": command, **(fields or {})}, timeout=wait)

    def run_code(self, code: str) -> requests.Response:
        """Run code in the session's kernel: a stateful interpreter's POST /api/run_code,
        shaped after E2B's (a localcube extension)."""
        return self.invoke("api/run_code", json={"code": code})

    def touch(self) -> requests.Response:
        """A harmless call of the runtime's kind: an echo, or a Python no-op."""
        if self.runtime.kind is RuntimeKind.AGENT_RUNTIME:
            return self.echo(TOUCH_TEXT)
        return self.execute(["python3", "-c", "pass"])

    def upload_file(self, path: str, content: bytes) -> requests.Response:
        body = {"path": path, "content": base64.b64encode(content).decode("ascii")}
        return self.invoke("api/files", json=body)

    def list_files(self, directory: str) -> requests.Response:
        return self.invoke("api/files", method="GET", params={"path": directory})

    def download_file(self, path: str) -> requests.Response:
        return self.invoke(f"api/files/{_literal_path(path)}", method="GET")

    def invoke(self, path: str, **options: Any) -> requests.Response:
        """Any call under the runtime's invocations/ path (the Router's invoke options), made
        as this caller in this session, and recorded."""
        caller = self.caller

        def send() -> requests.Response:
            sent.append(time.monotonic())
            return caller.router.invoke(
                self.runtime, path, session_id=self.session_id, token=caller.token, **options
            )

        sent: list[float] = []
        runtime = self.runtime
        if self.session_id is None and runtime in self.unserved:
            # A refusal that the runtime does not exist opens nothing; served once, it is
            # served from then on.
            response = eventually(
                send,
                is_not(matchers.refused_because_runtime_not_found(runtime)),
                timeout=self.settings.ready_timeout,
                poll=self.settings.poll_interval,
                waiting_for=(
                    f"{runtime}, just applied, to be served (a WorkloadManager finds runtimes "
                    "through a cached watch, so its first calls may not find one yet; "
                    "ready_timeout / AGENTCUBE_READY_TIMEOUT)"
                ),
            )
            self.unserved.discard(runtime)
        else:
            response = send()
        self.record(Call(caller, runtime, self.session_id, response, sent[-1], time.monotonic()))
        return response


def _literal_path(path: str) -> str:
    """The path percent-encoded so that it arrives as written: HTTP clients resolve "." and
    ".." segments before sending, which would hide a path that tries to leave the workspace."""
    dots = {".": "%2E", "..": "%2E%2E"}
    return "/".join(dots.get(segment) or quote(segment) for segment in path.split("/"))
