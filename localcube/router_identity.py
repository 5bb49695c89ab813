"""The Router's identity, served as the Kubernetes API would serve it, over HTTPS on loopback.

Upstream's Router creates the Secret `picod-router-identity` through the in-cluster client
and, on 409 AlreadyExists, reads it back and signs with `data["private.pem"]`, a PKCS#1 RSA
key (pkg/router/jwt.go:133-222). localcube answers those two calls, and only those, with its
own signing key: sandboxes then accept the Router's JWTs, and localcube accepts its identity
headers. The in-cluster client's files (`token`, `ca.crt`, `namespace`) and the two
variables it reads (`kubernetes.env`) are written to a directory the user chooses.
"""

from __future__ import annotations

import base64
import datetime
import hmac
import ipaddress
import os
import secrets
import ssl
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from localcube.bearer_auth import Handler
from localcube.signing import RequestSigner

SECRET_NAME = "picod-router-identity"
SERVICE_ACCOUNT = "system:serviceaccount:default:agentcube-router"
_SECRETS = "/api/v1/namespaces/{namespace}/secrets"
_VALIDITY = datetime.timedelta(days=365)


@dataclass(frozen=True)
class IdentityCredentials:
    """What the Router's in-cluster client presents and trusts."""

    token: str
    ca_pem: bytes
    server_context: ssl.SSLContext


def status(code: int, reason: str, message: str, name: str | None = None) -> web.Response:
    """A Kubernetes `Status` failure, as client libraries decode it."""
    body: dict = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if name is not None:
        body["details"] = {"name": name, "kind": "secrets"}
    return web.json_response(body, status=code)


class RouterIdentity:
    def __init__(self, signer: RequestSigner, credentials: IdentityCredentials) -> None:
        self.signer = signer
        self.credentials = credentials

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._authenticate])
        app.add_routes(
            [
                web.post(_SECRETS, self.create),
                web.get(_SECRETS + "/{name}", self.read),
            ]
        )
        return app

    @web.middleware
    async def _authenticate(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        # The scheme in any case, as the API server takes it (Python's client sends "bearer").
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        expected = self.credentials.token.encode()
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.encode(), expected):
            return status(401, "Unauthorized", "Unauthorized")
        return await handler(request)

    async def create(self, request: web.Request) -> web.Response:
        """The identity Secret always exists already: the Router then reads it back."""
        try:
            body = await request.json()
            name = body["metadata"]["name"]
        except (ValueError, KeyError, TypeError):
            return status(400, "BadRequest", "the body is not a Secret")
        if name != SECRET_NAME:
            return status(403, "Forbidden", f'localcube serves only the Secret "{SECRET_NAME}"')
        return status(409, "AlreadyExists", f'secrets "{name}" already exists', name)

    async def read(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name != SECRET_NAME:
            return status(404, "NotFound", f'secrets "{name}" not found', name)
        public_pem = self.signer.public_key_pem.encode()
        return web.json_response(
            {
                "kind": "Secret",
                "apiVersion": "v1",
                "metadata": {
                    "name": SECRET_NAME,
                    "namespace": request.match_info["namespace"],
                    "labels": {"app": "agentcube", "component": "router"},
                },
                "type": "Opaque",
                "data": {
                    "private.pem": _b64(self.signer.private_key_pkcs1_pem()),
                    "public.pem": _b64(public_pem),
                },
            }
        )


async def serve_identity(
    signer: RequestSigner, state_dir: Path, directory: Path
) -> tuple[web.AppRunner, str]:
    """Serve the identity on a free loopback port and write the service-account files to
    `directory`; the runner (clean it up to stop) and the service-account token."""
    credentials = new_credentials(state_dir)
    runner = web.AppRunner(RouterIdentity(signer, credentials).app())
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=credentials.server_context).start()
    write_service_account(directory, credentials, runner.addresses[0][1])
    return runner, credentials.token


def new_credentials(state_dir: Path) -> IdentityCredentials:
    """A fresh token, and a CA with a server certificate for 127.0.0.1 (the key file lives
    only while the TLS context loads it)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localcube router identity CA")])
    ca = (
        _certificate(ca_name, ca_name, ca_key.public_key(), now)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    server_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    server_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    server = (
        _certificate(server_name, ca_name, server_key.public_key(), now)
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    key_file = state_dir / "router-identity-server.pem"
    descriptor = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as out:
        out.write(
            server_key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        out.write(server.public_bytes(serialization.Encoding.PEM))
    try:
        context.load_cert_chain(key_file)
    finally:
        key_file.unlink()
    ca_pem = ca.public_bytes(serialization.Encoding.PEM)
    return IdentityCredentials(secrets.token_urlsafe(32), ca_pem, context)


def write_service_account(directory: Path, credentials: IdentityCredentials, port: int) -> None:
    """The files the in-cluster client reads, and the variables it needs, in `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    _write(directory / "token", credentials.token.encode(), 0o600)
    _write(directory / "ca.crt", credentials.ca_pem, 0o644)
    _write(directory / "namespace", b"default", 0o644)
    env = f"KUBERNETES_SERVICE_HOST=127.0.0.1\nKUBERNETES_SERVICE_PORT={port}\n"
    _write(directory / "kubernetes.env", env.encode(), 0o644)


def _write(path: Path, data: bytes, mode: int) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(descriptor, "wb") as out:
        out.write(data)
    path.chmod(mode)


def _certificate(
    subject: x509.Name, issuer: x509.Name, key: rsa.RSAPublicKey, now: datetime.datetime
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + _VALIDITY)
    )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()
