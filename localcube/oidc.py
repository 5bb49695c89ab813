"""The Router's OIDC validation of a caller's token, as upstream's (pkg/router/oidc.go at
939abb5): the issuer's discovery document and keys read once at start, the algorithm
checked before the signature, then the issuer, subject, expiry and not-before (each with
30 s of leeway) and the audience; the roles read from a dot path of the claims.

Every reason for refusing comes back as OIDCError; the middleware answers each with the one
401 upstream gives (pkg/router/auth.go:74-84), and logs none of them with the token.
"""

from __future__ import annotations

import base64
import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

import jwt

DISCOVERY_PATH = "/.well-known/openid-configuration"
CLOCK_SKEW_LEEWAY = 30.0  # pkg/router/oidc.go:31
# pkg/router/oidc.go:221-233: asymmetric algorithms only; `none` and HMAC never.
ALLOWED_ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256", "PS384", "PS512", "EdDSA"}
)
_FETCH_TIMEOUT = 10.0


class OIDCError(ValueError):
    """A token the Router must refuse, or an issuer it cannot start with."""


@dataclass(frozen=True)
class OIDCClaims:
    """What a valid token tells (pkg/router/oidc.go:45-55)."""

    subject: str
    roles: frozenset[str]


@dataclass(frozen=True)
class OIDCConfig:
    """`--jwt-issuer-url`, `--jwt-audience`, `--jwt-role-claim` (cmd/router/main.go:50-52)."""

    issuer_url: str
    audience: str
    role_claim: str


class OIDCValidator:
    def __init__(self, config: OIDCConfig, keys: jwt.PyJWKSet) -> None:
        self._config = config
        self._keys = keys

    @classmethod
    def discover(cls, config: OIDCConfig) -> OIDCValidator:
        """Read the issuer's discovery document and keys, as go-oidc's NewProvider and
        NewRemoteKeySet do (pkg/router/oidc.go:66-89): the document's `issuer` must be the
        URL given exactly. Raises OIDCError naming what failed."""
        url = config.issuer_url.rstrip("/") + DISCOVERY_PATH
        document = _fetch_json(url, "failed to discover OIDC provider at " + config.issuer_url)
        if document.get("issuer") != config.issuer_url:
            raise OIDCError(
                f"failed to discover OIDC provider at {config.issuer_url}: oidc: issuer did "
                f"not match the issuer returned by provider, expected {config.issuer_url!r} "
                f"got {document.get('issuer')!r}"
            )
        jwks_uri = document.get("jwks_uri")
        if not isinstance(jwks_uri, str) or not jwks_uri:
            raise OIDCError(f"the discovery document at {url} names no jwks_uri")
        keys = _fetch_json(jwks_uri, "failed to fetch the issuer's keys")
        try:
            key_set = jwt.PyJWKSet.from_dict(keys)
        except jwt.PyJWTError as error:
            raise OIDCError(f"the keys at {jwks_uri} are not a usable JWKS: {error}") from None
        return cls(config, key_set)

    def validate(self, token: str) -> OIDCClaims:
        """The claims of a valid token; raises OIDCError (pkg/router/oidc.go:92-161)."""
        if not token:
            raise OIDCError("empty token")
        _check_algorithm(token)
        payload = self._verified_payload(token)
        issuer = _string(payload.get("iss"))
        subject = _string(payload.get("sub"))
        expiry = _number(payload.get("exp"))
        not_before = _number(payload.get("nbf"))
        if issuer != self._config.issuer_url:
            raise OIDCError(f"invalid issuer: got {issuer!r}")
        if not subject:
            raise OIDCError("token missing required sub claim")
        if expiry == 0:
            raise OIDCError("token missing required exp claim")
        now = time.time()
        if now > int(expiry) + CLOCK_SKEW_LEEWAY:
            raise OIDCError("token has expired")
        if not_before and now < int(not_before) - CLOCK_SKEW_LEEWAY:
            raise OIDCError("token is not yet valid")
        audience = self._config.audience
        if audience and audience not in _audiences(payload.get("aud")):
            raise OIDCError("invalid audience")
        return OIDCClaims(subject, frozenset(roles_at(payload, self._config.role_claim)))

    def _verified_payload(self, token: str) -> dict[str, Any]:
        """The payload once a published key verifies the signature: the keys with the
        token's `kid`, or every key when it names none (go-oidc's RemoteKeySet)."""
        try:
            key_id = jwt.get_unverified_header(token).get("kid")
        except jwt.PyJWTError as error:
            raise OIDCError(f"malformed JWT: {error}") from None
        candidates = [key for key in self._keys.keys if key_id is None or key.key_id == key_id]
        for key in candidates:
            try:
                return jwt.decode(
                    token,
                    key.key,
                    algorithms=sorted(ALLOWED_ALGORITHMS),
                    options={
                        "verify_signature": True,
                        "verify_exp": False,
                        "verify_nbf": False,
                        "verify_iat": False,
                        "verify_aud": False,
                        "verify_iss": False,
                    },
                )
            except (jwt.PyJWTError, ValueError, TypeError):
                continue
        raise OIDCError("token signature verification failed")


def roles_at(claims: dict[str, Any], path: str) -> list[str]:
    """The strings of the list at a dot path; a claim named by the whole path, dots and all,
    wins (pkg/router/oidc.go:163-199). Anything else: no roles."""
    if not path:
        return []
    parts = [path] if path in claims else path.split(".")
    current: Any = claims
    for part in parts:
        if not isinstance(current, dict) or part not in current:
            return []
        current = current[part]
    if not isinstance(current, list):
        return []
    return [value for value in current if isinstance(value, str)]


def _check_algorithm(token: str) -> None:
    """pkg/router/oidc.go:236-258: three parts, a JSON header, an allowed `alg`."""
    parts = token.split(".", 2)
    if len(parts) != 3:
        raise OIDCError(f"malformed JWT: expected 3 parts, got {len(parts)}")
    try:
        header = json.loads(base64.urlsafe_b64decode(parts[0] + "=" * (-len(parts[0]) % 4)))
    except ValueError as error:
        raise OIDCError(f"malformed JWT header: {error}") from None
    algorithm = header.get("alg") if isinstance(header, dict) else None
    if algorithm not in ALLOWED_ALGORITHMS:
        raise OIDCError(f"signing algorithm not supported: {algorithm!r}")


def _string(value: object) -> str:
    return value if isinstance(value, str) else ""


def _number(value: object) -> float:
    """Go's `.(float64)` of a JSON value: numbers only, anything else 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value)


def _audiences(value: object) -> list[str]:
    """A string or a list of strings (pkg/router/oidc.go:201-219)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return []


def _fetch_json(url: str, failure: str) -> dict[str, Any]:
    try:
        with urllib.request.urlopen(url, timeout=_FETCH_TIMEOUT) as answer:
            document = json.load(answer)
    except (urllib.error.URLError, OSError, ValueError) as error:
        raise OIDCError(f"{failure}: {error}") from None
    if not isinstance(document, dict):
        raise OIDCError(f"{failure}: {url} did not answer a JSON object")
    return document
