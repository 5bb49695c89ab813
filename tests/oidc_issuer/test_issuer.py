"""The issuer as a Router reads it, through a JOSE library other than the one that signs
(joserfc, not PyJWT): the discovery document go-oidc fetches, the keys at its jwks_uri, and
each of the run's tokens verified or refused for the reason it was minted for."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import requests
from joserfc import jwt
from joserfc.errors import (
    ExpiredTokenError,
    InvalidClaimError,
    InvalidKeyIdError,
)
from joserfc.jwk import KeySet

from oidc_issuer.issuer import DISCOVERY_PATH, Issuer, TokenPolicy
from oidc_issuer.server import IssuerServer
from oidc_issuer.subjects import ANOTHER_AUDIENCE, SUBJECTS, run_tokens

POLICY = TokenPolicy()
# go-oidc's leeway is upstream's too (pkg/router/oidc.go:31): an expired token must be
# expired by more.
LEEWAY = 30


@pytest.fixture(scope="module")
def served() -> Iterator[IssuerServer]:
    with IssuerServer() as server:
        yield server


@pytest.fixture(scope="module")
def tokens(served: IssuerServer) -> dict[str, str]:
    return run_tokens(served.issuer, POLICY, lifetime=3600)


@pytest.fixture(scope="module")
def discovery(served: IssuerServer) -> dict:
    """Fetched as go-oidc's NewProvider does: the issuer URL plus the well-known path."""
    answer = requests.get(served.url.rstrip("/") + DISCOVERY_PATH, timeout=5)
    assert answer.status_code == 200
    assert answer.headers["Content-Type"] == "application/json"
    return answer.json()


@pytest.fixture(scope="module")
def keys(discovery: dict) -> KeySet:
    answer = requests.get(discovery["jwks_uri"], timeout=5)
    assert answer.status_code == 200
    return KeySet.import_key_set(answer.json())


def verified_claims(token: str, keys: KeySet) -> dict:
    return jwt.decode(token, keys, algorithms=["RS256"]).claims


def registry(url: str) -> jwt.JWTClaimsRegistry:
    """What upstream checks (pkg/router/oidc.go:123-151): iss exactly, sub, exp with its
    leeway, the audience."""
    return jwt.JWTClaimsRegistry(
        leeway=LEEWAY,
        iss={"essential": True, "value": url},
        sub={"essential": True},
        exp={"essential": True},
        aud={"essential": True, "value": POLICY.audience},
    )


def test_the_discovery_document_names_the_issuer_exactly_as_given(
    served: IssuerServer, discovery: dict
) -> None:
    assert discovery["issuer"] == served.url  # go-oidc refuses any other
    assert discovery["jwks_uri"] == served.url + "/keys"
    assert discovery["id_token_signing_alg_values_supported"] == ["RS256"]


def test_the_keys_are_public_rsa_signing_keys_with_ids(keys: KeySet, served: IssuerServer) -> None:
    (key,) = keys.keys
    assert key.key_type == "RSA"
    assert key.kid == served.issuer.key_id
    assert not key.is_private
    assert key.get("use") == "sig" and key.get("alg") == "RS256"


@pytest.mark.parametrize("name", sorted(SUBJECTS))
def test_each_subject_s_token_verifies_with_the_published_key(
    name: str, tokens: dict[str, str], keys: KeySet, served: IssuerServer
) -> None:
    claims = verified_claims(tokens[name], keys)
    registry(served.url).validate(claims)
    assert claims["sub"] == SUBJECTS[name]
    assert claims["iat"] <= time.time() < claims["exp"]


@pytest.mark.parametrize(
    ("name", "roles"),
    [
        ("api_token", ["sandbox:invoke"]),
        ("second_api_token", ["sandbox:invoke"]),
        ("admin_api_token", ["sandbox:invoke", "admin"]),
        ("no_role_api_token", []),
    ],
)
def test_the_roles_stand_at_the_claim_path(
    name: str, roles: list[str], tokens: dict[str, str], keys: KeySet
) -> None:
    claims = verified_claims(tokens[name], keys)
    assert claims["realm_access"]["roles"] == roles


def test_a_flat_role_claim_is_a_top_level_list(served: IssuerServer, keys: KeySet) -> None:
    policy = TokenPolicy(role_claim="roles", required_role="invoke")
    token = run_tokens(served.issuer, policy, lifetime=60)["api_token"]
    assert verified_claims(token, keys)["roles"] == ["invoke"]


def test_the_expired_token_is_refused_as_expired_beyond_the_leeway(
    tokens: dict[str, str], keys: KeySet, served: IssuerServer
) -> None:
    claims = verified_claims(tokens["expired_api_token"], keys)
    with pytest.raises(ExpiredTokenError):
        registry(served.url).validate(claims)


def test_the_other_audience_token_is_refused_for_its_audience(
    tokens: dict[str, str], keys: KeySet, served: IssuerServer
) -> None:
    claims = verified_claims(tokens["other_audience_api_token"], keys)
    assert claims["aud"] == ANOTHER_AUDIENCE
    with pytest.raises(InvalidClaimError, match="aud"):
        registry(served.url).validate(claims)


def test_the_other_issuer_token_is_refused_for_its_issuer(
    tokens: dict[str, str], keys: KeySet, served: IssuerServer
) -> None:
    claims = verified_claims(tokens["other_issuer_api_token"], keys)
    with pytest.raises(InvalidClaimError, match="iss"):
        registry(served.url).validate(claims)


def test_another_issuer_s_key_does_not_verify(tokens: dict[str, str], keys: KeySet) -> None:
    stranger = Issuer("http://127.0.0.1:1")
    forged = stranger.mint("acceptance-suite", ["sandbox:invoke"], POLICY, lifetime=60)
    with pytest.raises(InvalidKeyIdError):
        verified_claims(forged, keys)


def test_an_unknown_path_is_not_found(served: IssuerServer) -> None:
    assert requests.get(served.url + "/token", timeout=5).status_code == 404


def test_an_issuer_never_started_closes_at_once() -> None:
    """Bound (its URL known, for the tokens) but not yet serving: closing it waits for no
    serving loop."""
    server = IssuerServer()
    assert server.url.startswith("http://127.0.0.1:")
    server.close()
