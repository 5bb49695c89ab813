"""The realm's token endpoint as upstream's e2e asks Keycloak for tokens (curl in
test/e2e/run_e2e.sh:512-524, sdk-python agentcube/auth.py ServiceAccountAuth: a form POST
of grant_type, client_id and client_secret, reading access_token and expires_in), with a
real HTTP client; each token verified by another JOSE library (joserfc) against the keys
the discovery document names, and read as the Router reads it (pkg/router/oidc.go:92-161)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from joserfc import jwt
from joserfc.jwk import KeySet

from oidc_issuer.clients import load_clients
from oidc_issuer.server import IssuerServer
from tests.oidc_issuer.realm_clients import SECRETS, write_clients_file

REALM = "agentcube"
# What run_e2e.sh and test_oidc_auth.py send: the in-cluster name of the Keycloak Service.
KEYCLOAK_HOST = "keycloak.agentcube.svc.cluster.local:8080"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IssuerServer]:
    path = write_clients_file(tmp_path_factory.mktemp("clients") / "clients.json")
    with IssuerServer(realm=REALM, clients=load_clients(path)) as server:
        yield server


@pytest.fixture(scope="module")
def discovery(served: IssuerServer) -> dict:
    answer = requests.get(served.url + "/.well-known/openid-configuration", timeout=5)
    assert answer.status_code == 200
    return answer.json()


@pytest.fixture(scope="module")
def keys(discovery: dict) -> KeySet:
    return KeySet.import_key_set(requests.get(discovery["jwks_uri"], timeout=5).json())


def ask(discovery: dict, data: object = None, **options: object) -> requests.Response:
    return requests.post(discovery["token_endpoint"], data=data, timeout=5, **options)


def credentials(client_id: str, secret: str) -> dict[str, str]:
    return {"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret}


def verified(token: str, keys: KeySet, issuer: str) -> dict:
    claims = jwt.decode(token, keys, algorithms=["RS256"]).claims
    jwt.JWTClaimsRegistry(
        leeway=30,
        iss={"essential": True, "value": issuer},
        sub={"essential": True},
        exp={"essential": True},
        aud={"essential": True, "value": "agentcube-api"},
    ).validate(claims)
    return claims


def test_the_realm_s_urls_are_keycloak_s(served: IssuerServer, discovery: dict) -> None:
    issuer = f"http://127.0.0.1:{served.port}/realms/agentcube"
    assert served.url == discovery["issuer"] == issuer
    assert discovery["jwks_uri"] == issuer + "/protocol/openid-connect/certs"
    assert discovery["token_endpoint"] == issuer + "/protocol/openid-connect/token"
    assert discovery["grant_types_supported"] == ["client_credentials"]


def test_the_app_client_gets_keycloak_s_token_response(discovery: dict) -> None:
    answer = ask(discovery, credentials("agentcube-app", "e2e-app-secret"))
    assert answer.status_code == 200, answer.text
    assert answer.headers["Content-Type"] == "application/json"
    assert answer.headers["Cache-Control"] == "no-store"
    assert answer.headers["Pragma"] == "no-cache"
    body = answer.json()
    assert set(body) == {
        "access_token",
        "expires_in",
        "refresh_expires_in",
        "token_type",
        "not-before-policy",
        "scope",
    }
    assert (body["expires_in"], body["refresh_expires_in"], body["not-before-policy"]) == (
        300,
        0,
        0,
    )
    assert (body["token_type"], body["scope"]) == ("Bearer", "profile email")


def test_the_app_token_is_a_service_account_s_with_the_audience_and_role(
    served: IssuerServer, discovery: dict, keys: KeySet
) -> None:
    token = ask(discovery, credentials("agentcube-app", "e2e-app-secret")).json()["access_token"]
    claims = verified(token, keys, served.url)
    assert claims["aud"] == "agentcube-api"
    assert claims["realm_access"] == {"roles": ["sandbox:invoke"]}
    assert (claims["azp"], claims["client_id"], claims["typ"]) == (
        "agentcube-app",
        "agentcube-app",
        "Bearer",
    )
    assert claims["preferred_username"] == "service-account-agentcube-app"
    assert claims["scope"] == "profile email"
    assert claims["exp"] - claims["iat"] == 300
    assert claims["iat"] <= time.time() + 1
    assert uuid.UUID(claims["sub"]) and uuid.UUID(claims["jti"])
    assert claims["clientAddress"] == claims["clientHost"] == "127.0.0.1"


def test_the_admin_token_holds_admin_and_the_roles_it_includes(
    served: IssuerServer, discovery: dict, keys: KeySet
) -> None:
    """realm-config.yaml: admin includes sandbox:manage, which includes sandbox:invoke; the
    Router wants sandbox:invoke of every caller and lets admin use any session
    (pkg/router/handlers.go:102-105)."""
    body = ask(discovery, credentials("agentcube-admin", "e2e-admin-secret")).json()
    roles = verified(body["access_token"], keys, served.url)["realm_access"]["roles"]
    assert sorted(roles) == ["admin", "sandbox:invoke", "sandbox:manage"]


def test_a_client_without_an_audience_mapper_gets_no_aud(discovery: dict, keys: KeySet) -> None:
    body = ask(discovery, credentials("agentcube-router", "e2e-router-secret")).json()
    claims = jwt.decode(body["access_token"], keys, algorithms=["RS256"]).claims
    assert "aud" not in claims
    assert claims["realm_access"]["roles"] == ["default-roles-agentcube", "sandbox:invoke"]


def test_each_client_s_subject_is_its_own_and_the_same_every_time(
    discovery: dict, keys: KeySet
) -> None:
    def claims(client_id: str, secret: str) -> dict:
        token = ask(discovery, credentials(client_id, secret)).json()["access_token"]
        return jwt.decode(token, keys, algorithms=["RS256"]).claims

    first = claims("agentcube-app", "e2e-app-secret")
    again = claims("agentcube-app", "e2e-app-secret")
    admin = claims("agentcube-admin", "e2e-admin-secret")
    assert first["sub"] == again["sub"] != admin["sub"]
    assert first["jti"] != again["jti"]


def test_a_host_header_does_not_change_the_issuer(
    served: IssuerServer, discovery: dict, keys: KeySet
) -> None:
    """run_e2e.sh sends Keycloak's in-cluster Host; Keycloak with a fixed hostname (and this
    issuer) still names its one URL, the one the Router is given."""
    answer = ask(
        discovery, credentials("agentcube-app", "e2e-app-secret"), headers={"Host": KEYCLOAK_HOST}
    )
    assert verified(answer.json()["access_token"], keys, served.url)["iss"] == served.url
    document = requests.get(
        served.url + "/.well-known/openid-configuration", headers={"Host": KEYCLOAK_HOST}, timeout=5
    ).json()
    assert document["issuer"] == served.url


def test_http_basic_authenticates_the_client_form_decoded(discovery: dict, keys: KeySet) -> None:
    answer = ask(
        discovery, {"grant_type": "client_credentials"}, auth=("agentcube-app", "e2e-app-secret")
    )
    assert answer.status_code == 200, answer.text
    # RFC 6749 2.3.1: id and secret are form-encoded before Basic encoding.
    odd = requests.utils.quote("a:b%c+d é", safe="")
    answer = ask(discovery, {"grant_type": "client_credentials"}, auth=("odd+client", odd))
    assert answer.status_code == 200, answer.text


def test_the_form_s_client_wins_over_the_basic_header(discovery: dict) -> None:
    answer = ask(
        discovery,
        credentials("agentcube-app", "e2e-app-secret"),
        auth=("agentcube-admin", "wrong"),
    )
    assert answer.status_code == 200, answer.text


def test_a_default_scope_may_be_asked_for(discovery: dict) -> None:
    answer = ask(discovery, {**credentials("agentcube-app", "e2e-app-secret"), "scope": "email"})
    assert answer.json()["scope"] == "profile email"


@pytest.mark.parametrize(
    ("data", "status", "error", "description"),
    [
        (
            credentials("nobody", "e2e-app-secret"),
            401,
            "invalid_client",
            "Invalid client or Invalid client credentials",
        ),
        (
            credentials("agentcube-app", "e2e-admin-secret"),
            401,
            "unauthorized_client",
            "Invalid client or Invalid client credentials",
        ),
        (
            {"grant_type": "client_credentials", "client_id": "agentcube-app"},
            401,
            "unauthorized_client",
            "Invalid client or Invalid client credentials",
        ),
        (
            {"grant_type": "client_credentials", "client_secret": "e2e-app-secret"},
            400,
            "invalid_client",
            "Missing client_id parameter",
        ),
        (
            {"client_id": "agentcube-app", "client_secret": "e2e-app-secret"},
            400,
            "invalid_request",
            "Missing form parameter: grant_type",
        ),
        (
            {**credentials("agentcube-app", "e2e-app-secret"), "grant_type": "password"},
            400,
            "unsupported_grant_type",
            "Unsupported grant_type",
        ),
        (
            [*credentials("agentcube-app", "e2e-app-secret").items(), ("client_id", "x")],
            400,
            "invalid_request",
            "duplicated parameter",
        ),
        (
            {**credentials("agentcube-app", "e2e-app-secret"), "scope": "openid phone"},
            400,
            "invalid_scope",
            "Invalid scopes: openid phone",
        ),
    ],
    ids=[
        "unknown-client",
        "wrong-secret",
        "no-secret",
        "no-client-id",
        "no-grant-type",
        "unsupported-grant-type",
        "duplicated-parameter",
        "unknown-scope",
    ],
)
def test_a_bad_request_is_refused_as_keycloak_refuses_it(
    discovery: dict, data: object, status: int, error: str, description: str
) -> None:
    answer = ask(discovery, data)
    assert answer.status_code == status
    assert answer.json() == {"error": error, "error_description": description}
    assert answer.headers["Cache-Control"] == "no-store"
    assert not any(secret in answer.text for secret in SECRETS)


def test_a_wrong_secret_by_basic_is_refused_too(discovery: dict) -> None:
    answer = ask(discovery, {"grant_type": "client_credentials"}, auth=("agentcube-app", "nope"))
    assert (answer.status_code, answer.json()["error"]) == (401, "unauthorized_client")


def test_another_authorization_scheme_without_a_client_id_is_challenged(discovery: dict) -> None:
    answer = ask(
        discovery, {"grant_type": "client_credentials"}, headers={"Authorization": "Bearer x"}
    )
    assert answer.status_code == 401
    assert answer.headers["WWW-Authenticate"] == 'Basic realm="agentcube"'


def test_only_a_form_body_is_taken(discovery: dict) -> None:
    answer = ask(discovery, json=credentials("agentcube-app", "e2e-app-secret"))
    assert answer.status_code == 415
    assert "access_token" not in answer.text


def test_only_post_is_taken(discovery: dict) -> None:
    answer = requests.get(discovery["token_endpoint"], timeout=5)
    assert answer.status_code == 405
    assert answer.headers["Allow"] == "POST"


def test_without_clients_a_realm_has_no_token_endpoint(tmp_path: Path) -> None:
    with IssuerServer(realm=REALM) as server:
        document = requests.get(server.url + "/.well-known/openid-configuration", timeout=5)
        assert "token_endpoint" not in document.json()
        answer = requests.post(
            server.url + "/protocol/openid-connect/token",
            data=credentials("agentcube-app", "e2e-app-secret"),
            timeout=5,
        )
        assert answer.status_code == 404


def test_clients_without_a_realm_are_refused(tmp_path: Path) -> None:
    clients = load_clients(write_clients_file(tmp_path / "clients.json"))
    with pytest.raises(ValueError, match="clients need a realm"):
        IssuerServer(clients=clients)


def test_a_realm_name_that_needs_escaping_is_refused() -> None:
    with pytest.raises(ValueError, match="only letters, digits"):
        IssuerServer(realm="a/b")
