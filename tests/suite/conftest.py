from __future__ import annotations

import http.client
import json
from collections.abc import Callable
from typing import Any

import pytest
import requests
from requests.structures import CaseInsensitiveDict

MakeAnswer = Callable[..., requests.Response]


@pytest.fixture
def answer() -> MakeAnswer:
    """Build a requests.Response as the transport would hand it over, without a server."""

    def make(
        status: int,
        body: Any = None,
        *,
        headers: dict[str, str] | None = None,
        method: str = "POST",
        url: str = "http://router.test/v1/namespaces/default/agent-runtimes/echo-agent/invocations/echo",
    ) -> requests.Response:
        response = requests.Response()
        response.status_code = status
        response.reason = http.client.responses.get(status, "")
        response._content = body if isinstance(body, bytes) else json.dumps(body).encode()
        response.headers = CaseInsensitiveDict(headers or {})
        response.request = requests.Request(method, url, json={"input": "hi"}).prepare()
        return response

    return make
