"""The e2e's clients file is one the issuer takes, and its tokens are those upstream's OIDC
tests need: agentcube-app may invoke, agentcube-admin is admin, both for agentcube-api."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

import jwt
import pytest

from oidc_issuer.clients import load_clients
from oidc_issuer.server import IssuerServer
from onemachine.e2e import oidc

SECRETS = {"app": "s3cret-app", "admin": "s3cret-admin", "router": "s3cret-router"}
HOST = "keycloak.agentcube.svc.cluster.local:8080"


@pytest.fixture
def issuer(tmp_path: Path) -> Iterator[IssuerServer]:
    clients = oidc.write_clients_file(tmp_path / "clients.json", SECRETS)
    with IssuerServer(realm=oidc.REALM, clients=load_clients(clients)) as server:
        yield server


def claims(token: str) -> dict:
    return jwt.decode(token, options={"verify_signature": False})


def test_the_clients_file_is_private_and_never_overwritten(tmp_path: Path) -> None:
    path = oidc.write_clients_file(tmp_path / "clients.json", SECRETS)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with pytest.raises(FileExistsError):  # O_EXCL: a file already there is nobody's to reuse
        oidc.write_clients_file(path, SECRETS)


def test_the_app_token_may_invoke_and_names_the_api_audience(issuer: IssuerServer) -> None:
    token = oidc.client_credentials_token(issuer.url, "agentcube-app", SECRETS["app"], HOST)
    got = claims(token)
    assert got["iss"] == issuer.url and got["iss"].endswith("/realms/agentcube")
    assert got["aud"] == "agentcube-api"
    assert "sandbox:invoke" in got["realm_access"]["roles"]
    assert "admin" not in got["realm_access"]["roles"]


def test_the_admin_token_is_admin_and_another_subject(issuer: IssuerServer) -> None:
    app = claims(oidc.client_credentials_token(issuer.url, "agentcube-app", SECRETS["app"], HOST))
    admin = claims(
        oidc.client_credentials_token(issuer.url, "agentcube-admin", SECRETS["admin"], HOST)
    )
    assert {"admin", "sandbox:invoke"} <= set(admin["realm_access"]["roles"])
    assert admin["sub"] != app["sub"]


def test_a_refused_client_is_named_with_the_answer_and_never_the_secret(
    issuer: IssuerServer,
) -> None:
    with pytest.raises(oidc.TokenError) as refused:
        oidc.client_credentials_token(issuer.url, "agentcube-app", "wrong-secret", HOST)
    message = str(refused.value)
    assert message.startswith("the issuer's token endpoint refused agentcube-app: 401")
    assert "unauthorized_client" in message
    assert "wrong-secret" not in message
