"""The Router's request signing: a short-lived RS256 JWT on every request to a sandbox.

The key pair lives in the state dir (private key 0600) so sandboxes started before a crash
still accept the restarted Router's tokens, as PicoD does with the key Secret upstream.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

ISSUER = "agentcube-router"
IDENTITY_HEADER = "X-AgentCube-User-Identity"
IDENTITY_AUDIENCE = "workloadmanager"
TOKEN_LIFETIME = 300.0
_REUSE_FOR = 60.0  # a token is re-signed once a minute, not on every request


class InvalidIdentity(ValueError):
    """An identity token the WorkloadManager must refuse."""


class RequestSigner:
    def __init__(self, state_dir: Path) -> None:
        key_file = state_dir / "router-private.pem"
        if key_file.exists():
            key = serialization.load_pem_private_key(key_file.read_bytes(), password=None)
            if not isinstance(key, rsa.RSAPrivateKey):
                raise ValueError(f"{key_file}: not the RSA key localcube writes")
            self._key = key
        else:
            self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            pem = self._key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
            descriptor = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "wb") as out:
                out.write(pem)
        self.public_key_pem = (
            self._key.public_key()
            .public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            .decode()
        )
        self._cache: dict[tuple[str, str | None], tuple[str, float]] = {}

    def private_key_pkcs1_pem(self) -> bytes:
        """The signing key as upstream's Router keeps it in its identity Secret: PKCS#1 PEM
        (pkg/router/jwt.go:121-131, 207-222)."""
        return self._key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )

    def identity_subject(self, token: str) -> str:
        """The caller a Router-signed identity token names, as upstream's WorkloadManager
        checks it: RS256 by this key, `exp` required, `aud` exactly `workloadmanager`, a
        `sub` (pkg/workloadmanager/identity.go:37-77)."""
        try:
            claims = jwt.decode(
                token,
                self._key.public_key(),
                algorithms=["RS256"],
                options={"require": ["exp"], "verify_aud": False},
            )
        except jwt.PyJWTError as error:
            raise InvalidIdentity(str(error)) from error
        if claims.get("aud") != IDENTITY_AUDIENCE:
            raise InvalidIdentity(f"invalid audience: {claims.get('aud')!r}")
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject:
            raise InvalidIdentity("missing sub claim")
        return subject

    def token_for(self, session_id: str, user_sub: str | None = None) -> str:
        """A token for requests of this session, with upstream's claims (`iss`, `iat`,
        `exp` in 5 minutes, `session_id`, and `user_sub` for an authenticated caller;
        pkg/router/jwt.go:81-94, handlers.go:285-294); re-signed when a minute old."""
        now = time.time()
        key = (session_id, user_sub)
        cached = self._cache.get(key)
        if cached and now - cached[1] < _REUSE_FOR:
            return cached[0]
        claims = {
            "iss": ISSUER,
            "session_id": session_id,
            "iat": int(now),
            "exp": int(now + TOKEN_LIFETIME),
        }
        if user_sub is not None:
            claims["user_sub"] = user_sub
        # Go marshals the claims map with its keys sorted (exp, iat, iss, session_id, ...).
        token = jwt.encode(dict(sorted(claims.items())), self._key, algorithm="RS256")
        if len(self._cache) > 1024:
            self._cache = {
                key: entry for key, entry in self._cache.items() if now - entry[1] < _REUSE_FOR
            }
        self._cache[key] = (token, now)
        return token
