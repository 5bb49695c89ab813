"""Tokens anyone can forge from a caller's JWT without the issuer's key, which a Router
must refuse (upstream checks the algorithm before the signature, pkg/router/oidc.go:97-106,
236-258): the claims unsigned, signed by an unpublished key, or HMAC-signed with the
issuer's published public key as the secret (the algorithm-confusion attack).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Callable
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

DISCOVERY_PATH = "/.well-known/openid-configuration"
FetchJson = Callable[[str], Any]  # a URL's JSON document; raises on any failure


class NotAJwt(ValueError):
    """The caller's token is no JWT: nothing can be forged from it."""


def parts_of(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The header and claims of a JWT, unverified; raises NotAJwt."""
    try:
        header = jwt.get_unverified_header(token)
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError as error:
        raise NotAJwt(f"the caller's token is not a JWT ({error})") from None
    return header, claims


def unsigned(token: str) -> str:
    """The caller's claims under `alg: none`, with an empty signature."""
    header, claims = parts_of(token)
    return _joined({**header, "alg": "none"}, claims) + "."


def signed_by_unpublished_key(token: str) -> str:
    """The caller's claims and key id, RS256-signed by a key made here and never published."""
    header, claims = parts_of(token)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    extra = {name: value for name, value in header.items() if name not in ("alg", "typ")}
    return jwt.encode(claims, key, algorithm="RS256", headers=extra)


def hmac_signed_with_public_key(token: str, public_key_pem: bytes) -> str:
    """The caller's claims HS256-signed with the issuer's public key (PEM) as the secret.
    PyJWT rightly refuses to make this token, so it is put together here."""
    header, claims = parts_of(token)
    signing_input = _joined({**header, "alg": "HS256"}, claims)
    signature = hmac.new(public_key_pem, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{_b64(signature)}"


def published_public_key_pem(token: str, fetch_json: FetchJson) -> bytes:
    """The PEM of the key the issuer of this token publishes for it (by `kid`, else its
    first RSA key), read as go-oidc reads it. Raises NotAJwt, or ValueError naming what
    could not be read."""
    header, claims = parts_of(token)
    issuer = claims.get("iss")
    if not isinstance(issuer, str) or not issuer.startswith(("http://", "https://")):
        raise ValueError(f"the caller's token names no issuer URL (iss {issuer!r})")
    try:
        discovery = fetch_json(issuer.rstrip("/") + DISCOVERY_PATH)
        keys = jwt.PyJWKSet.from_dict(fetch_json(discovery["jwks_uri"])).keys
    except Exception as error:
        raise ValueError(f"the keys of issuer {issuer} could not be read: {error}") from None
    kid = header.get("kid")
    chosen = [key for key in keys if key.key_type == "RSA" and (kid is None or key.key_id == kid)]
    if not chosen:
        raise ValueError(f"issuer {issuer} publishes no RSA key with kid {kid!r}")
    pem: bytes = chosen[0].key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return pem


def _joined(header: dict[str, Any], claims: dict[str, Any]) -> str:
    return f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
