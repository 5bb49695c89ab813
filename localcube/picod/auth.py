"""Upstream's JWT authentication: the public key from the environment, the bearer check."""

import base64
import re
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey
from cryptography.hazmat.primitives.serialization import load_pem_public_key

from localcube.picod.binding import BadRequest, go_unmarshal_object

PUBLIC_KEY_ENV = "PICOD_AUTH_PUBLIC_KEY"

_JWT_ALGORITHMS = ["RS256", "RS384", "RS512"]
_JWT_LEEWAY = 60
# Algorithms golang-jwt knows: a token using one of them but not RSA is "unexpected".
_GO_JWT_METHODS = (
    *("HS256", "HS384", "HS512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512"),
    *("ES256", "ES384", "ES512", "EdDSA", "none"),
)


def load_public_key(pem: str | None) -> RSAPublicKey:
    """The RSA key in PICOD_AUTH_PUBLIC_KEY; ValueError with upstream's wording otherwise."""
    if not pem:
        raise ValueError(f"environment variable {PUBLIC_KEY_ENV} is not set")
    if "-----BEGIN" not in pem:
        raise ValueError(f"failed to decode PEM block from {PUBLIC_KEY_ENV}")
    try:
        key = load_pem_public_key(pem.encode())
    except (ValueError, TypeError) as error:
        raise ValueError(f"failed to parse public key: {error}") from None
    if not isinstance(key, RSAPublicKey):
        raise ValueError("key is not an RSA public key")
    return key


_NOT_RAW_URL_BASE64 = re.compile(r"[^A-Za-z0-9_\-\r\n]")


def _raw_url_base64(segment: str) -> bytes:
    """base64.RawURLEncoding.DecodeString (CR and LF skipped); ValueError with Go's text."""
    bad = _NOT_RAW_URL_BASE64.search(segment)
    data = segment.replace("\r", "").replace("\n", "")
    if bad is None and len(data) % 4 == 1:
        bad = re.search(".$", segment)
    if bad is not None:
        raise ValueError(f"illegal base64 data at input byte {bad.start()}")
    return base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))


def _go_malformed(token: str) -> str | None:
    """golang-jwt v5's ParseUnverified: what is malformed in the token's header or claims,
    in its words, checked before any signature or claim (so before what PyJWT checks)."""
    header, claims, _ = token.split(".")
    for segment, name, go_type in (
        (header, "header", "map[string]interface {}"),
        (claims, "claim", "jwt.MapClaims"),
    ):
        try:
            data = _raw_url_base64(segment)
        except ValueError as error:
            return f"token is malformed: could not base64 decode {name}: {error}"
        try:
            go_unmarshal_object(data, go_type)
        except BadRequest as error:
            return f"token is malformed: could not JSON decode {name}: {error}"
    return None


def _go_jwt_error(token: str, error: jwt.PyJWTError) -> str:
    """The golang-jwt v5 error text for the check PyJWT failed."""
    if token.count(".") != 2:
        return "token is malformed: token contains an invalid number of segments"
    malformed = _go_malformed(token)
    if malformed is not None:
        return malformed
    if isinstance(error, jwt.InvalidAlgorithmError):
        algorithm = jwt.get_unverified_header(token).get("alg")
        if algorithm in _GO_JWT_METHODS:
            return (
                "token is unverifiable: error while executing keyfunc: "
                f"unexpected signing method: {algorithm}"
            )
        return "token is unverifiable: signing method (alg) is unavailable"
    if isinstance(error, jwt.InvalidSignatureError):
        return "token signature is invalid: crypto/rsa: verification error"
    if isinstance(error, jwt.DecodeError):
        return f"token is malformed: {error}"
    if isinstance(error, jwt.ExpiredSignatureError):
        claims = "token is expired"
    elif isinstance(error, jwt.MissingRequiredClaimError):
        claims = f"token is missing required claim: {error.claim} claim is required"
    elif isinstance(error, jwt.ImmatureSignatureError):
        claims = "token used before issued" if "iat" in str(error) else "token is not valid yet"
    else:
        claims = str(error)
    return f"token has invalid claims: {claims}"


def check_authorization(header: str, key: RSAPublicKey) -> dict[str, Any] | None:
    """Upstream's AuthMiddleware: None when the bearer JWT is valid, else the 401's body.

    exp is required, iat is checked when present (golang-jwt's WithIssuedAt does not require
    it), both with a minute of leeway; only RSA PKCS#1 v1.5 algorithms are accepted.
    """
    if not header:
        return {
            "code": 401,
            "detail": "Request requires JWT authentication",
            "error": "Missing Authorization header",
        }
    parts = header.split(" ")
    if len(parts) != 2 or parts[0] != "Bearer":
        return {
            "code": 401,
            "detail": "Use Bearer <token>",
            "error": "Invalid Authorization header format",
        }
    try:
        jwt.decode(
            parts[1],
            key,
            algorithms=_JWT_ALGORITHMS,
            leeway=_JWT_LEEWAY,
            options={
                "require": ["exp"],
                "verify_aud": False,
                "verify_iss": False,
                "verify_sub": False,
                "verify_jti": False,
            },
        )
    except jwt.PyJWTError as error:
        detail = f"JWT verification failed: {_go_jwt_error(parts[1], error)}"
        return {"code": 401, "detail": detail, "error": "Invalid token"}
    return None
