"""POST /api/run_code: code run in the sandbox's Jupyter kernel, a localcube extension named
and shaped after E2B's `run_code` (upstream PicoD has no such route; upstream issue #223).

The request: {"code": "...", "language": "python" (optional), "timeout": seconds
(optional, default 60)}. The answer: 200 with E2B's Execution ({"results", "logs":
{"stdout", "stderr"}, "error", "execution_count"}), an error raised by the code included;
400 for a request it cannot take; 500 when the kernel died, after which the sandbox ends.
"""

from __future__ import annotations

import json
import math
from typing import Any

from aiohttp import web

from localcube.picod.handlers import DEFAULT_TIMEOUT, error_response, json_response, read_body
from localcube.picod.kernel import Kernel, KernelDied

LANGUAGES = ("python",)


class RunCodeRefused(ValueError):
    """A request the route answers with 400 and this message."""


def parse_request(raw: bytes) -> tuple[str, float]:
    """The code and timeout of a run_code request; raises RunCodeRefused."""
    try:
        body: Any = json.loads(raw)
    except ValueError as error:
        raise RunCodeRefused(f"invalid JSON: {error}") from None
    if not isinstance(body, dict):
        raise RunCodeRefused("the request must be a JSON object")
    code = body.get("code")
    if not isinstance(code, str) or not code.strip():
        raise RunCodeRefused("code must be a non-empty string")
    language = body.get("language", "python")
    if language not in LANGUAGES:
        raise RunCodeRefused(f"language {language!r} is not supported: only python")
    timeout = body.get("timeout", DEFAULT_TIMEOUT)
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        raise RunCodeRefused("timeout must be a positive number of seconds")
    return code, float(timeout)


class RunCode:
    def __init__(self, kernel: Kernel) -> None:
        self._kernel = kernel

    async def handle(self, request: web.Request) -> web.Response:
        try:
            code, timeout = parse_request(await read_body(request))
        except ValueError as error:  # RunCodeRefused, or read_body's BadRequest
            return error_response(400, str(error))
        try:
            execution = await self._kernel.run(code, timeout)
        except KernelDied as death:
            return error_response(
                500, f"the session's kernel died ({death}): its state is lost, the sandbox ends"
            )
        return json_response(200, execution.to_json())
