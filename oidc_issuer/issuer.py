"""The issuer: one RSA key, the documents go-oidc reads, and tokens signed with the key.

go-oidc's NewProvider fetches `<issuer>/.well-known/openid-configuration` and refuses a
document whose `issuer` differs from the URL it was given by a single character
(go-oidc v3 oidc.go, "issuer did not match"); upstream then verifies tokens against the
keys at its `jwks_uri` (pkg/router/oidc.go:66-89, 102-106).
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

DISCOVERY_PATH = "/.well-known/openid-configuration"
JWKS_PATH = "/keys"
# Keycloak's paths under a realm's issuer URL `{base}/realms/{realm}` (its discovery
# document names them as jwks_uri and token_endpoint).
REALM_PATH = "/realms/"
REALM_JWKS_PATH = "/protocol/openid-connect/certs"
TOKEN_PATH = "/protocol/openid-connect/token"
ALGORITHM = "RS256"
# Upstream's default `--jwt-audience` (cmd/router/main.go:51).
DEFAULT_AUDIENCE = "agentcube-api"
# The role claim path of Keycloak's access tokens, the IdP upstream's e2e runs
# (test/e2e/run_e2e.sh:460); upstream reads any dot path (pkg/router/oidc.go:163-199).
DEFAULT_ROLE_CLAIM = "realm_access.roles"
# The role upstream's e2e requires of every caller (test/e2e/run_e2e.sh:461), and the role
# whose holder may use any session (pkg/router/handlers.go:102-105).
DEFAULT_REQUIRED_ROLE = "sandbox:invoke"
ADMIN_ROLE = "admin"


@dataclass(frozen=True)
class TokenPolicy:
    """What the Router is told to expect: its `--jwt-audience`, `--jwt-role-claim` and
    `--jwt-required-role` (cmd/router/main.go:50-53)."""

    audience: str = DEFAULT_AUDIENCE
    role_claim: str = DEFAULT_ROLE_CLAIM
    required_role: str = DEFAULT_REQUIRED_ROLE


class Issuer:
    """Signs for `url`, which must be exactly the URL the Router is given; its keys at
    `url + jwks_path`, its token endpoint (when it has one) at `url + token_path`."""

    def __init__(
        self, url: str, *, jwks_path: str = JWKS_PATH, token_path: str | None = None
    ) -> None:
        self.url = url
        self.jwks_path = jwks_path
        self.token_path = token_path
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        public_jwk = json.loads(RSAAlgorithm.to_jwk(self._key.public_key()))
        self.key_id = _thumbprint(public_jwk)
        self._public_jwk = {**public_jwk, "kid": self.key_id, "use": "sig", "alg": ALGORITHM}

    def discovery(self) -> dict[str, Any]:
        """The discovery document: the fields go-oidc reads (oidc.go providerJSON) and the
        ones OpenID Connect Discovery 1.0 requires of a provider that has them."""
        document: dict[str, Any] = {
            "issuer": self.url,
            "jwks_uri": self.url + self.jwks_path,
            "id_token_signing_alg_values_supported": [ALGORITHM],
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "claims_supported": ["iss", "sub", "aud", "exp", "iat"],
        }
        if self.token_path is not None:
            document["token_endpoint"] = self.url + self.token_path
            document["grant_types_supported"] = ["client_credentials"]
            document["token_endpoint_auth_methods_supported"] = [
                "client_secret_basic",
                "client_secret_post",
            ]
        return document

    def jwks(self) -> dict[str, Any]:
        return {"keys": [dict(self._public_jwk)]}

    def public_key_pem(self) -> bytes:
        return self._key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def private_key_pem(self) -> bytes:
        """For the tests that prove it never reaches a log or a report."""
        return self._key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    def mint(
        self,
        subject: str,
        roles: Iterable[str],
        policy: TokenPolicy,
        *,
        lifetime: float,
        issued_ago: float = 0.0,
        audience: str | None = None,
        issuer: str | None = None,
    ) -> str:
        """An access token for `subject` holding `roles` at the policy's claim path, valid
        for `lifetime` seconds from its issue, `issued_ago` seconds back; `audience` and
        `issuer` replace the policy's audience and this issuer's URL."""
        issued = int(time.time() - issued_ago)
        claims: dict[str, Any] = {
            "iss": issuer if issuer is not None else self.url,
            "sub": subject,
            "aud": audience if audience is not None else policy.audience,
            "iat": issued,
            "exp": int(issued + lifetime),
        }
        _place(claims, policy.role_claim, list(roles))
        return self.sign(claims)

    def sign(self, claims: dict[str, Any]) -> str:
        """These claims, exactly, RS256-signed with this issuer's key and its `kid`."""
        return jwt.encode(claims, self._key, algorithm=ALGORITHM, headers={"kid": self.key_id})


def _place(claims: dict[str, Any], path: str, value: list[str]) -> None:
    """Put `value` at a dot path, as upstream reads it (pkg/router/oidc.go:169-184)."""
    *parents, last = path.split(".")
    node = claims
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value


def _thumbprint(jwk: dict[str, Any]) -> str:
    """The key's RFC 7638 thumbprint, its `kid`: stable for the key, unique to it."""
    canonical = json.dumps({k: jwk[k] for k in ("e", "kty", "n")}, separators=(",", ":"))
    digest = hashlib.sha256(canonical.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
