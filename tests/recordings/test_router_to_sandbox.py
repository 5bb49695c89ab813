"""What upstream's Router sent a capture sandbox (router-to-sandbox.jsonl), against what
localcube's Router sends one for the same client call, and what each then answered.

The forwarded request must agree in its request line (path and query), the names of its
headers (so the hop-by-hop and `Connection`-named ones are absent both ways), the values
of `X-Forwarded-*`, `X-Agentcube-Session-Id`, `Accept-Encoding`, `Te`, the framing and the
body, and its `Authorization` must be a JWT with the recorded header, claims in the
recorded order, lifetime, and a signature by the key localcube serves.

Upstream: pkg/router/handlers.go:277-307 (the JWT), pkg/router/handlers.go:316-344 (the
Director), pkg/router/handlers.go:354-359 (the answer's session id), pkg/router/jwt.go:81-94.
"""

from __future__ import annotations

import base64
import json

import jwt
import pytest

from localcube import content_sniff
from tests.recordings import capture_sandbox
from tests.recordings.recorded import Exchange, judge, message, params
from tests.recordings.router_replay import (
    SESSION_PLACEHOLDER,
    Cube,
    answer_mismatches,
    bind_answer,
    cube_for,
    send,
    sessions_in,
    situation_of,
)

# the module's fixtures serve all its tests: one process runs them (pytest-xdist)
pytestmark = pytest.mark.xdist_group("router-to-sandbox")

FILE = "router-to-sandbox.jsonl"
COMPARED_VALUES = (
    "X-Forwarded-For",
    "X-Forwarded-Host",
    "X-Forwarded-Proto",
    "X-Agentcube-Session-Id",
    "Accept-Encoding",
    "Te",
    "Content-Length",
    "Transfer-Encoding",
    "Content-Type",
)


def filled(text: str, cube: Cube, sessions: dict[str, str]) -> str:
    text = text.replace("<ROUTER_PORT>", str(cube.port))
    return SESSION_PLACEHOLDER.sub(lambda found: sessions.get(found.group(), found.group()), text)


def token_mismatches(
    authorization: str | None, expected: dict, cube: Cube, sessions: dict[str, str]
) -> list[str]:
    scheme, _, token = (authorization or "").partition(" ")
    if scheme != expected["scheme"] or not token:
        return [f"Authorization {authorization!r}, upstream a {expected['scheme']} JWT"]
    found = []
    header = jwt.get_unverified_header(token)
    if header != expected["jose_header"]:
        found.append(f"JWT header {header}, upstream {expected['jose_header']}")
    claims = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
    if list(claims) != expected["claim_order_in_token"]:
        found.append(f"JWT claims {list(claims)}, upstream {expected['claim_order_in_token']}")
    for name in ("iss", "session_id"):
        wanted = filled(str(expected["claims"][name]), cube, sessions)
        if claims.get(name) != wanted:
            found.append(f"JWT {name} {claims.get(name)!r}, upstream {wanted!r}")
    if claims.get("exp", 0) - claims.get("iat", 0) != expected["exp_minus_iat_s"]:
        found.append(f"JWT lifetime {claims.get('exp', 0) - claims.get('iat', 0)} s")
    try:
        jwt.decode(token, cube.public_key_pem(), algorithms=["RS256"])
    except jwt.PyJWTError as refused:
        found.append(f"JWT does not verify with localcube's key: {refused}")
    return found


def forwarded_mismatches(
    exchange: Exchange, captured: dict | None, cube: Cube, sessions: dict[str, str]
) -> list[str]:
    if captured is None:
        return ["the sandbox received nothing"]
    recorded = exchange.request
    received = {name.lower(): value for name, value in captured["headers"]}
    found = []
    if captured["request_line"] != exchange.line["request_line"]:
        found.append(
            f"request line {captured['request_line']!r}, upstream {exchange.line['request_line']!r}"
        )
    names = {name for name, _ in captured["headers"]}  # as written: Go canonicalises them
    wanted = set(recorded.headers)
    if names != wanted:
        found.append(
            f"headers {sorted(names - wanted)} not sent upstream, {sorted(wanted - names)} missing"
        )
    for name in COMPARED_VALUES:
        expected = recorded.header(name)
        expected = None if expected is None else filled(expected, cube, sessions)
        if received.get(name.lower()) != expected:
            found.append(f"{name} {received.get(name.lower())!r}, upstream {expected!r}")
    found += token_mismatches(received.get("authorization"), exchange.line["jwt"], cube, sessions)
    body = base64.b64decode(captured["body_b64"])
    if body != (recorded.body or b""):
        found.append(f"body {body[:200]!r}, upstream {(recorded.body or b'')[:200]!r}")
    return found


@pytest.mark.parametrize("exchange", params(FILE))
def test_the_sandbox_receives_what_upstream_sent_it(
    exchange: Exchange, request: pytest.FixtureRequest
) -> None:
    """Upstream: pkg/router/handlers.go:277-359, pkg/router/jwt.go:81-94"""
    client_request = message(exchange.line["client_request"])
    answers_id = client_request.header("X-Rec-Id")
    cube = cube_for(answers_id, request)
    sessions = sessions_in(answers_id, client_request.headers, cube)
    router_answer = message(exchange.line["router_answer"])
    with situation_of(answers_id)(cube):
        answer = send(cube, client_request, sessions)
    bind_answer(router_answer, answer, sessions)
    mismatches = forwarded_mismatches(exchange, cube.captured(answers_id), cube, sessions)
    mismatches += answer_mismatches(router_answer, answer, sessions)
    if answer is not None:
        names = {name for name, _ in answer.headers}
        wanted = set(router_answer.headers)
        if names != wanted:
            mismatches.append(
                f"answer headers {sorted(names - wanted)} not upstream's, "
                f"{sorted(wanted - names)} missing"
            )
    judge(FILE, exchange, mismatches)


def test_a_range_request_is_not_asked_for_gzip(request: pytest.FixtureRequest) -> None:
    """Go's Transport adds `Accept-Encoding: gzip` only to a request that names neither
    Accept-Encoding nor Range (net/http transport.go): a range of a gzip body could not be
    decompressed. No recording has one, so it is checked here."""
    cube = request.getfixturevalue("main_cube")
    session = cube.open_session("agent-runtime", "echo-agent")
    answer = cube.client.agent(
        "echo-agent",
        json={},
        session=session,
        headers={"Range": "bytes=0-1", "Accept-Encoding": "", "X-Rec-Id": "range-request"},
    )
    assert answer.status_code == 200, answer.text
    received = dict(cube.captured("range-request")["headers"])
    assert received.get("Range") == "bytes=0-1", received
    assert received.get("Accept-Encoding", "") == "", f"asked for gzip: {received}"


@pytest.mark.parametrize(
    ("kind", "accept_encoding", "content_type", "content_encoding"),
    [
        ("text", "identity", content_sniff.TEXT, None),
        ("html", "identity", "text/html; charset=utf-8", None),
        ("binary", "identity", content_sniff.BINARY, None),
        ("empty", "identity", None, None),
        ("streamed", "identity", content_sniff.TEXT, None),
        ("text", "gzip", None, "gzip"),  # the client's gzip, passed on: not sniffed
        ("text", None, content_sniff.TEXT, None),  # the Router's, undone: sniffed once undone
    ],
)
def test_an_answer_naming_no_type_gets_the_one_gos_server_sniffs(
    kind: str,
    accept_encoding: str | None,
    content_type: str | None,
    content_encoding: str | None,
    request: pytest.FixtureRequest,
) -> None:
    """Go's ReverseProxy copies the sandbox's headers, then Go's server sniffs a type for
    a body with bytes and neither Content-Type nor Content-Encoding (net/http server.go
    `chunkWriter.writeHeader`, sniff.go `DetectContentType`); an empty body gets none."""
    cube = request.getfixturevalue("main_cube")
    answer = cube.client.agent(
        "echo-agent", f"/untyped/{kind}", headers={"Accept-Encoding": accept_encoding}
    )
    assert answer.status_code == 200, answer.text
    found = (answer.headers.get("Content-Type"), answer.headers.get("Content-Encoding"))
    assert found == (content_type, content_encoding), (
        f"expected a {kind} answer naming no type to reach the client with Content-Type "
        f"{content_type!r} and Content-Encoding {content_encoding!r}, got {found}"
    )
    assert answer.content == capture_sandbox.UNTYPED[kind], answer.content
