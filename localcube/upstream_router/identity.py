"""The Router's identity, served as the Kubernetes API would serve it, over HTTPS on loopback.

Upstream's Router creates the Secret `picod-router-identity` through the in-cluster client
and, on 409 AlreadyExists, reads it back and signs with `data["private.pem"]`, a PKCS#1 RSA
key (pkg/router/jwt.go:136-205). localcube answers those two calls, and only those, with its
own signing key: sandboxes then accept the Router's JWTs, and localcube accepts its identity
headers. client-go sends the Secret as protobuf, so both protobuf (kube_protobuf) and JSON
are read; each answer, a failure's `Status` too, is in JSON, which client-go's `Accept`
lists after protobuf and which it decodes as well. The in-cluster client's files (`token`, `ca.crt`,
`namespace`) and the two variables it reads (`kubernetes.env`) are written to a directory
the user chooses.
"""

from __future__ import annotations

import base64
import datetime
import hmac
import json
import secrets
import ssl
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from localcube.bearer_auth import Handler
from localcube.signing import RequestSigner
from localcube.upstream_router import kube_protobuf
from plumbing.certificates import serving_certificates, write_file

SECRET_NAME = "picod-router-identity"
SERVICE_ACCOUNT = "system:serviceaccount:default:agentcube-router"
_SECRETS = "/api/v1/namespaces/{namespace}/secrets"
_NAMES = ("127.0.0.1", "localhost")
JSON = "application/json"
READ = (JSON, kube_protobuf.MEDIA_TYPE)  # the bodies a create may come in


@dataclass(frozen=True)
class IdentityCredentials:
    """What the Router's in-cluster client presents and trusts."""

    token: str
    ca_pem: bytes
    server_context: ssl.SSLContext


class Refusal(Exception):
    """A call answered with a Kubernetes `Status` failure."""

    def __init__(self, code: int, reason: str, message: str, name: str | None = None) -> None:
        super().__init__(message)
        self.status = status_object(code, reason, message, name)


def status_object(code: int, reason: str, message: str, name: str | None = None) -> dict[str, Any]:
    """A `Status` failure as the API server writes it (details only for a named Secret)."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    }
    if name is not None:
        body["details"] = {"name": name, "kind": "secrets"}
    body["code"] = code
    return body


def accepts_json(accept: str) -> bool:
    """Whether `Accept` takes JSON, the one media type answered: named, `*/*`,
    `application/*`, or no Accept at all. client-go lists JSON after protobuf and decodes
    either (the recorded k8s-json409 exchange: the Router went on with JSON answers)."""
    if not accept.strip():
        return True
    for item in accept.split(","):
        media_range, *parameters = (part.strip() for part in item.split(";"))
        quality = 1.0
        for parameter in parameters:
            name, _, value = parameter.partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if quality > 0 and media_range.lower() in (JSON, "*/*", "application/*"):
            return True
    return False


class RouterIdentity:
    def __init__(self, signer: RequestSigner, credentials: IdentityCredentials) -> None:
        self.signer = signer
        self.credentials = credentials
        # What an API server keeps of the Secret: it exists since localcube started.
        self.uid = str(uuid.uuid4())
        self.created = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._negotiate])
        app.add_routes(
            [
                web.post(_SECRETS, self.create),
                web.get(_SECRETS + "/{name}", self.read),
            ]
        )
        return app

    @web.middleware
    async def _negotiate(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Every answer in JSON, a failure as a `Status` too; callers without the
        service-account token are refused before anything is read."""
        if not accepts_json(request.headers.get("Accept", "")):
            message = f"only the following media types are accepted: {JSON}"
            return _answer(status_object(406, "NotAcceptable", message))
        try:
            self._authenticate(request)
            return await handler(request)
        except Refusal as refusal:
            return _answer(refusal.status)
        except web.HTTPMethodNotAllowed:
            message = "the server does not allow this method on the requested resource"
            return _answer(status_object(405, "MethodNotAllowed", message))
        except web.HTTPNotFound:
            message = "the server could not find the requested resource"
            return _answer(status_object(404, "NotFound", message))

    def _authenticate(self, request: web.Request) -> None:
        # The scheme in any case, as the API server takes it (Python's client sends "bearer").
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        expected = self.credentials.token.encode()
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.encode(), expected):
            raise Refusal(401, "Unauthorized", "Unauthorized")

    async def create(self, request: web.Request) -> web.Response:
        """The identity Secret always exists already: the Router then reads it back."""
        # No Content-Type is JSON, the API server's first media type
        # (k8s.io/apiserver pkg/endpoints/handlers/negotiation/negotiate.go:82-86).
        media_type = request.content_type if request.headers.get("Content-Type") else JSON
        name = _secret_name(await request.read(), media_type)
        if name != SECRET_NAME:
            raise Refusal(403, "Forbidden", f'localcube serves only the Secret "{SECRET_NAME}"')
        raise Refusal(409, "AlreadyExists", f'secrets "{name}" already exists', name)

    async def read(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name != SECRET_NAME:
            raise Refusal(404, "NotFound", f'secrets "{name}" not found', name)
        public_pem = self.signer.public_key_pem.encode()
        secret = {
            "kind": "Secret",
            "apiVersion": "v1",
            "metadata": {
                "name": SECRET_NAME,
                "namespace": request.match_info["namespace"],
                "uid": self.uid,
                "resourceVersion": "1",
                "creationTimestamp": self.created,
                "labels": {"app": "agentcube", "component": "router"},
            },
            "data": {
                "private.pem": _b64(self.signer.private_key_pkcs1_pem()),
                "public.pem": _b64(public_pem),
            },
            "type": "Opaque",
        }
        return _answer(secret, 200)


def _secret_name(body: bytes, media_type: str) -> str:
    """The name of the Secret a create's body holds, in JSON or protobuf. A body it cannot
    take gets the API server's words, naming the media type, never the body (a key)."""
    if media_type not in READ:
        accepted = ", ".join(READ)
        raise Refusal(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types "
            f"include: {accepted}",
        )
    try:
        secret = json.loads(body) if media_type == JSON else kube_protobuf.decode(body)
    except ValueError as error:  # bad JSON, bad UTF-8 and ProtobufError alike
        raise _unrecognized(str(error), media_type) from None
    if not isinstance(secret, dict) or secret.get("kind", "Secret") != "Secret":
        kind = secret.get("kind") if isinstance(secret, dict) else type(secret).__name__
        raise _unrecognized(f"it is a {kind}", media_type)
    metadata = secret.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if not isinstance(name, str) or not name:
        raise _unrecognized("it has no metadata.name", media_type)
    return name


def _unrecognized(reason: str, media_type: str) -> Refusal:
    return Refusal(
        400,
        "BadRequest",
        f"the object provided is unrecognized (must be of type Secret): {reason} "
        f"(a body of {media_type})",
    )


def _answer(obj: dict[str, Any], code: int | None = None) -> web.Response:
    body = json.dumps(obj, separators=(",", ":")).encode() + b"\n"
    return web.Response(body=body, status=code or obj["code"], content_type=JSON)


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
    served = serving_certificates("localcube router identity CA", "127.0.0.1", _NAMES)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    key_file = state_dir / "router-identity-server.pem"
    write_file(key_file, served.key + served.cert, 0o600)
    try:
        context.load_cert_chain(key_file)
    finally:
        key_file.unlink()
    return IdentityCredentials(secrets.token_urlsafe(32), served.ca_cert, context)


def write_service_account(directory: Path, credentials: IdentityCredentials, port: int) -> None:
    """The files the in-cluster client reads, and the variables it needs, in `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    write_file(directory / "token", credentials.token.encode(), 0o600)
    write_file(directory / "ca.crt", credentials.ca_pem, 0o644)
    write_file(directory / "namespace", b"default", 0o644)
    env = f"KUBERNETES_SERVICE_HOST=127.0.0.1\nKUBERNETES_SERVICE_PORT={port}\n"
    write_file(directory / "kubernetes.env", env.encode(), 0o644)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()
