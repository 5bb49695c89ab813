"""The admin API starts processes on request, so it answers only callers on this machine.

Tests cannot call from another address here (only loopback may be used), so the
middleware is driven with requests built in memory, carrying a remote address."""

from __future__ import annotations

import asyncio
import json
from unittest import mock

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from localcube.admin import loopback_only


async def served(_: web.Request) -> web.Response:
    return web.json_response({"served": True})


def answer(path: str, remote: str) -> web.Response:
    transport = mock.Mock()
    transport.get_extra_info.side_effect = lambda name, default=None: (
        (remote, 40000) if name == "peername" else default
    )
    request = make_mocked_request("GET", path, transport=transport)
    return asyncio.run(loopback_only(request, served))


@pytest.mark.parametrize("remote", ["127.0.0.1", "127.8.9.10", "::1"])
def test_local_callers_reach_the_admin_api(remote: str) -> None:
    assert answer("/localcube/v1/sandboxes", remote).status == 200


def test_a_remote_caller_is_refused_the_admin_api() -> None:
    refused = answer("/localcube/v1/runtimes", "192.0.2.7")
    assert refused.status == 403
    assert json.loads(refused.body) == {
        "error": "the admin API answers only callers on this machine"
    }


def test_a_remote_caller_still_reaches_the_router_routes() -> None:
    assert answer("/health/ready", "192.0.2.7").status == 200
