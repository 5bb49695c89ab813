"""The replay's comparisons can fail: each names what a Router answering or forwarding
otherwise than upstream did would show."""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.recordings.recorded import Exchange, load
from tests.recordings.router_replay import Answer, answer_mismatches
from tests.recordings.test_router_to_sandbox import forwarded_mismatches

KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)


@dataclass
class SignedBy:
    """What forwarded_mismatches asks of a localcube: its port and the key it signs with."""

    port: int = 8081

    def public_key_pem(self) -> bytes:
        return KEY.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )


def exchange(file_name: str, exchange_id: str) -> Exchange:
    return next(found for found in load(file_name) if found.id == exchange_id)


def test_an_answer_with_spaces_a_wrong_type_or_a_session_header_differs() -> None:
    recorded = exchange("router-answers.jsonl", "unknown-agent-runtime").response
    loose = Answer(
        404,
        [("Content-Type", "application/json"), ("X-Agentcube-Session-Id", "x")],
        b'{"error": "agentruntimes.agentcube.volcano.sh \\"default/nope\\" not found"}',
    )
    found = " ".join(answer_mismatches(recorded, loose, {}))
    assert "Content-Type" in found and "session header" in found and "body" in found, found
    exact = Answer(404, [("Content-Type", "application/json; charset=utf-8")], recorded.body)
    assert answer_mismatches(recorded, exact, {}) == []


def test_an_answer_where_upstream_gave_none_differs() -> None:
    recorded = exchange("router-answers.jsonl", "sandbox-silent").response
    assert answer_mismatches(recorded, None, {}) == []
    assert answer_mismatches(recorded, Answer(504, [], b""), {}), "an answer upstream never gave"


def forwarded_as_recorded(recorded: Exchange, claims: dict, extra: list[tuple[str, str]]) -> dict:
    """What a capture sandbox would have captured of the recorded request, signed with
    `claims`, with `extra` headers besides."""
    signed = {"Authorization": f"Bearer {jwt.encode(claims, KEY, algorithm='RS256')}"}
    headers = [
        (name, signed.get(name, value.replace("<ROUTER_PORT>", "8081")))
        for name, value in recorded.request.headers.items()
    ]
    return {
        "request_line": recorded.line["request_line"],
        "headers": headers + extra,
        "body_b64": base64.b64encode(recorded.request.body or b"").decode(),
    }


def test_a_hop_by_hop_header_or_claims_out_of_gos_order_differ() -> None:
    recorded = exchange("router-to-sandbox.jsonl", "sandbox-16-ci-echo-new-session")
    now = int(time.time())
    sorted_claims = {"exp": now + 300, "iat": now, "iss": "agentcube-router", "session_id": "s-1"}
    sessions = {"<SESSION_ID_4>": "s-1"}
    same = forwarded_as_recorded(recorded, sorted_claims, [])
    assert forwarded_mismatches(recorded, same, SignedBy(), sessions) == []
    hop = forwarded_as_recorded(recorded, sorted_claims, [("Proxy-Authorization", "Basic x")])
    found = forwarded_mismatches(recorded, hop, SignedBy(), sessions)
    assert any("Proxy-Authorization" in line for line in found), found
    unsorted = dict(reversed(list(sorted_claims.items())))
    found = forwarded_mismatches(
        recorded, forwarded_as_recorded(recorded, unsorted, []), SignedBy(), sessions
    )
    assert any("JWT claims" in line for line in found), found
