"""The tokens the suite forges from a caller's token, and the capabilities the run's tokens
bring: a kind of bad token the run cannot get makes its scenarios skip with the reason,
never fail."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Iterator

import jwt
import pytest

from acceptance.core import forgeries
from acceptance.core.settings import load_settings
from acceptance.platforms.base import (
    EXPIRED_TOKEN,
    FORGED_TOKENS,
    NO_ROLE_SUBJECT,
    OTHER_AUDIENCE_TOKEN,
    OTHER_ISSUER_TOKEN,
    configured_capabilities,
    configured_refused_tokens,
    fetch_json,
)
from oidc_issuer.issuer import Issuer, TokenPolicy
from oidc_issuer.server import IssuerServer
from oidc_issuer.subjects import run_tokens

CREDENTIAL_CAPABILITIES = {
    FORGED_TOKENS,
    NO_ROLE_SUBJECT,
    EXPIRED_TOKEN,
    OTHER_AUDIENCE_TOKEN,
    OTHER_ISSUER_TOKEN,
}


@pytest.fixture(scope="module")
def served() -> Iterator[IssuerServer]:
    with IssuerServer() as server:
        yield server


@pytest.fixture(scope="module")
def caller(served: IssuerServer) -> str:
    return run_tokens(served.issuer, TokenPolicy(), lifetime=600)["api_token"]


def _segments(token: str) -> list[dict]:
    return [
        json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
        for part in token.split(".")[:2]
    ]


def test_the_unsigned_forgery_keeps_the_claims_under_alg_none(caller: str) -> None:
    forged = forgeries.unsigned(caller)
    header, claims = _segments(forged)
    assert header["alg"] == "none" and forged.endswith(".")
    assert claims == jwt.decode(caller, options={"verify_signature": False})


def test_the_unpublished_key_forgery_keeps_the_kid_and_fails_the_published_key(
    caller: str, served: IssuerServer
) -> None:
    forged = forgeries.signed_by_unpublished_key(caller)
    assert jwt.get_unverified_header(forged)["kid"] == served.issuer.key_id
    with pytest.raises(jwt.InvalidSignatureError):
        jwt.decode(
            forged, served.issuer.public_key_pem(), algorithms=["RS256"], audience="agentcube-api"
        )


def test_the_hmac_forgery_is_signed_with_the_published_public_key(
    caller: str, served: IssuerServer
) -> None:
    pem = forgeries.published_public_key_pem(caller, lambda url: fetch_json(url, 5))
    assert pem == served.issuer.public_key_pem()
    forged = forgeries.hmac_signed_with_public_key(caller, pem)
    signing_input, _, signature = forged.rpartition(".")
    expected = hmac.new(pem, signing_input.encode(), hashlib.sha256).digest()
    assert base64.urlsafe_b64encode(expected).rstrip(b"=").decode() == signature
    assert _segments(forged)[0]["alg"] == "HS256"


def test_an_opaque_token_is_no_jwt_to_forge_from() -> None:
    with pytest.raises(forgeries.NotAJwt):
        forgeries.unsigned("opaque-token")


def test_an_issuer_whose_keys_cannot_be_read_is_named() -> None:
    token = Issuer("http://127.0.0.1:9").mint("x", [], TokenPolicy(), lifetime=60)
    with pytest.raises(ValueError, match=r"the keys of issuer http://127\.0\.0\.1:9 could not"):
        forgeries.published_public_key_pem(token, lambda url: fetch_json(url, 5))


def _capabilities(environ: dict[str, str]) -> frozenset[str]:
    settings = load_settings({"router_url": "http://router.test"}, environ)
    return configured_capabilities(frozenset(), settings) & CREDENTIAL_CAPABILITIES


def test_an_oidc_caller_s_token_and_the_issuer_s_bad_tokens_bring_every_capability(
    served: IssuerServer,
) -> None:
    tokens = run_tokens(served.issuer, TokenPolicy(), lifetime=600)
    environ = {f"AGENTCUBE_{name.upper()}": token for name, token in tokens.items()}
    assert _capabilities(environ) == CREDENTIAL_CAPABILITIES
    settings = load_settings({"router_url": "http://router.test"}, environ)
    assert set(configured_refused_tokens(settings)) == {
        "no_role_api_token",
        "expired_api_token",
        "other_audience_api_token",
        "other_issuer_api_token",
    }


def test_without_such_tokens_their_scenarios_have_no_capability_to_run() -> None:
    """An opaque caller's token, or a JWT of an issuer the suite cannot reach (a real
    deployment's IdP behind its network): the scenarios are skipped, not failed."""
    assert _capabilities({"AGENTCUBE_API_TOKEN": "opaque-token"}) == frozenset()
    unreachable = Issuer("http://127.0.0.1:9").mint("x", [], TokenPolicy(), lifetime=60)
    assert _capabilities({"AGENTCUBE_API_TOKEN": unreachable}) == frozenset()
    # A bad token given without the caller's token proves nothing: no capability either.
    assert _capabilities({"AGENTCUBE_EXPIRED_API_TOKEN": "expired"}) == frozenset()
