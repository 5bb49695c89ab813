"""The client-credentials grant at a realm's token endpoint, answered as Keycloak 26 answers
it, for the service accounts of the clients file (oidc_issuer/clients.py).

Keycloak's order and words (services/.../protocol/oidc/endpoints/TokenEndpoint.java,
authentication/authenticators/client/ClientIdAndSecretAuthenticator.java,
authentication/AuthenticationProcessor.java handleClientAuthException): a form body only
(the endpoint `@Consumes` application/x-www-form-urlencoded); `Cache-Control: no-store`
and `Pragma: no-cache` on every answer; the grant type checked first (400
`invalid_request` "Missing form parameter: grant_type", 400 `unsupported_grant_type`
"Unsupported grant_type"); then the client, from HTTP Basic or the form, the form winning
(400 `invalid_client` "Missing client_id parameter"; an unknown client 401 `invalid_client`,
a missing or wrong secret 401 `unauthorized_client`, both "Invalid client or Invalid client
credentials"); then a parameter given twice (400 `invalid_request` "duplicated parameter").

The token is a service account's access token as a realm like upstream's addon issues it:
its default client scopes (profile, email, roles, acr, basic, service_account) and no
refresh token (Keycloak's default for client credentials). The issuer's URL is fixed, as
Keycloak's with KC_HOSTNAME: no request header changes `iss`.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote_plus

from oidc_issuer.clients import Client, Clients
from oidc_issuer.issuer import Issuer

# Keycloak's default access token lifespan (realm setting accessTokenLifespan).
ACCESS_TOKEN_LIFESPAN = 300
# The scopes of the realm's default client scopes that put themselves in `scope`.
DEFAULT_SCOPES = ("profile", "email")
FORM = "application/x-www-form-urlencoded"
BAD_CLIENT = "Invalid client or Invalid client credentials"
NO_CACHE = (("Cache-Control", "no-store"), ("Pragma", "no-cache"))


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()


class TokenEndpoint:
    """The token endpoint of `realm` for `clients`, tokens signed by `issuer`."""

    def __init__(self, issuer: Issuer, clients: Clients, realm: str) -> None:
        self._issuer = issuer
        self._clients = clients
        self._realm = realm

    def answer(
        self,
        *,
        content_type: str | None,
        authorization: str | None,
        body: bytes,
        client_address: str,
    ) -> Reply:
        """The answer to a POST with this Content-Type, Authorization header and body."""
        if (content_type or "").split(";", 1)[0].strip().lower() != FORM:
            return Reply(415, headers=NO_CACHE)
        try:
            form = parse_qs(body.decode("utf-8"), keep_blank_values=True, strict_parsing=False)
        except UnicodeDecodeError:
            return _error(400, "invalid_request", "the form body is not UTF-8")
        grant_type = _first(form, "grant_type")
        if grant_type is None:
            return _error(400, "invalid_request", "Missing form parameter: grant_type")
        if grant_type != "client_credentials":
            return _error(400, "unsupported_grant_type", "Unsupported grant_type")
        client = self._authenticate(form, authorization)
        if isinstance(client, Reply):
            return client
        if any(len(values) != 1 for values in form.values()):
            return _error(400, "invalid_request", "duplicated parameter")
        requested = (_first(form, "scope") or "").split()
        unknown = [scope for scope in requested if scope not in DEFAULT_SCOPES]
        if unknown:
            return _error(400, "invalid_scope", "Invalid scopes: " + " ".join(requested))
        token = self._issuer.sign(self._claims(client, client_address))
        return _json(
            200,
            {
                "access_token": token,
                "expires_in": ACCESS_TOKEN_LIFESPAN,
                "refresh_expires_in": 0,
                "token_type": "Bearer",
                "not-before-policy": 0,
                "scope": " ".join(DEFAULT_SCOPES),
            },
        )

    def _authenticate(
        self, form: dict[str, list[str]], authorization: str | None
    ) -> Client | Reply:
        """The client, or the refusal; the form's fields win over the Basic header's."""
        client_id = secret = None
        if authorization is not None:
            basic = _basic(authorization)
            if basic is not None:
                client_id, secret = basic
            elif "client_id" not in form:
                challenge = ("WWW-Authenticate", f'Basic realm="{self._realm}"')
                return Reply(401, headers=(*NO_CACHE, challenge))
        if "client_id" in form:
            client_id = _first(form, "client_id")
        if "client_secret" in form:
            secret = _first(form, "client_secret")
        if client_id is None:
            return _error(400, "invalid_client", "Missing client_id parameter")
        client = self._clients.get(client_id)
        if client is None:
            return _error(401, "invalid_client", BAD_CLIENT)
        if secret is None or not client.secret_is(secret):
            return _error(401, "unauthorized_client", BAD_CLIENT)
        return client

    def _claims(self, client: Client, client_address: str) -> dict[str, Any]:
        issued = int(time.time())
        claims: dict[str, Any] = {
            "exp": issued + ACCESS_TOKEN_LIFESPAN,
            "iat": issued,
            "jti": str(uuid.uuid4()),
            "iss": self._issuer.url,
        }
        if client.audience is not None:
            claims["aud"] = client.audience
        claims.update(
            {
                "sub": service_account_id(self._issuer.url, client.id),
                "typ": "Bearer",
                "azp": client.id,
                "acr": "1",
                "realm_access": {"roles": self._clients.effective_roles(client)},
                "scope": " ".join(DEFAULT_SCOPES),
                "email_verified": False,
                "clientHost": client_address,
                "preferred_username": f"service-account-{client.id}",
                "clientAddress": client_address,
                "client_id": client.id,
            }
        )
        return claims


def service_account_id(issuer_url: str, client_id: str) -> str:
    """The service account user's id, Keycloak's `sub`: a uuid, the same for a client of a
    realm on every run (a session's owner is this id)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{issuer_url}#service-account-{client_id}"))


def _basic(authorization: str) -> tuple[str, str] | None:
    """`Basic base64(id:secret)`, each part form-decoded as RFC 6749 2.3.1 asks (Keycloak's
    BasicAuthHelper.RFC6749); None for any other header."""
    scheme, _, encoded = authorization.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    client_id, colon, secret = decoded.partition(":")
    if not colon:
        return None
    return unquote_plus(client_id), unquote_plus(secret)


def _first(form: dict[str, list[str]], name: str) -> str | None:
    values = form.get(name)
    return values[0] if values else None


def _error(status: int, error: str, description: str) -> Reply:
    return _json(status, {"error": error, "error_description": description})


def _json(status: int, document: dict[str, Any]) -> Reply:
    body = json.dumps(document).encode()
    return Reply(status, body, (("Content-Type", "application/json"), *NO_CACHE))
