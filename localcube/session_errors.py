"""Why a session cannot be opened or found, and what each HTTP surface answers, as upstream.

The WorkloadManager answers `{"message": ...}` (pkg/workloadmanager/utils.go:36-41):
runtime missing 404 `agent runtime not found` / `code interpreter not found`, sandbox not
ready in time 504 `sandbox creation timed out`, any other failure (a store that cannot
record the session among them) 500 `internal server error`
(pkg/workloadmanager/handlers.go:179-186, 243-266, 392-398). The Router opens sessions
through the WorkloadManager and answers `{"error": ...}`: the WorkloadManager's 404 becomes
404 naming the resource as Kubernetes does, any other status 500 `internal server error`
(pkg/router/session_manager.go:205-215, pkg/router/handlers.go:131-151).
"""

from __future__ import annotations

import logging

from aiohttp import web

from agentcube_contract.session import SESSION_NOT_FOUND
from localcube.manifests import CODE_INTERPRETER, PLURALS
from localcube.picod.gocompat import gin_json
from localcube.sandboxing.launcher import SandboxNotReady, SandboxStartError
from localcube.store import StoreError

RESOURCE_GROUP = "agentcube.volcano.sh"
log = logging.getLogger("localcube.sessions")


class RuntimeNotFound(LookupError):
    """No AgentRuntime or CodeInterpreter of that namespace and name is configured."""

    def __init__(self, kind: str, namespace: str, name: str) -> None:
        self.kind, self.namespace, self.name = kind, namespace, name
        super().__init__(f'{PLURALS[kind]}.{RESOURCE_GROUP} "{namespace}/{name}" not found')

    @property
    def workload_manager_message(self) -> str:
        """Upstream's wording (pkg/api/errors.go:43-47)."""
        if self.kind == CODE_INTERPRETER:
            return "code interpreter not found"
        return "agent runtime not found"


CreationFailure = RuntimeNotFound | SandboxStartError | StoreError
CREATION_FAILURES = (RuntimeNotFound, SandboxStartError, StoreError)


def workload_manager_status(failure: CreationFailure) -> tuple[int, str]:
    """The WorkloadManager's status and message for a session it could not open."""
    if isinstance(failure, RuntimeNotFound):
        return 404, failure.workload_manager_message
    if isinstance(failure, SandboxNotReady):
        return 504, "sandbox creation timed out"
    return 500, "internal server error"


def workload_manager_refusal(failure: CreationFailure) -> web.Response:
    _log(failure)
    status, message = workload_manager_status(failure)
    return gin_json(status, {"message": message})


def router_refusal(failure: CreationFailure) -> web.Response:
    """What the Router answers when the WorkloadManager answered `failure`'s status."""
    _log(failure)
    status, _ = workload_manager_status(failure)
    if status == 404:
        return gin_json(404, {"error": str(failure)})
    return gin_json(500, {"error": "internal server error"})


def session_not_found(session_id: str) -> web.Response:
    """The Router's answer for an unknown session (pkg/api/errors.go:56-58)."""
    return gin_json(
        404,
        {
            "error": f'sessions.{RESOURCE_GROUP} "{session_id}" not found',
            "code": SESSION_NOT_FOUND,
        },
    )


def _log(failure: CreationFailure) -> None:
    if isinstance(failure, SandboxStartError | StoreError):
        log.error("session not opened: %s", failure)
