"""Keycloak's part in run_e2e.sh, played by this repository's issuer: its clients as
run_e2e.sh configures Keycloak's chart, and the client-credentials tokens it asks for.

The clients and their realm roles are those of the chart's realm (upstream
manifests/charts/addons/keycloak/templates/realm-config.yaml at 939abb5): agentcube-app's
service account has sandbox:invoke, agentcube-admin's admin (which holds sandbox:manage,
which holds sandbox:invoke), and every user the realm's default role, which holds
sandbox:invoke; agentcube-app and agentcube-admin carry the audience agentcube-api.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import requests

REALM = "agentcube"
AUDIENCE = "agentcube-api"
DEFAULT_ROLE = f"default-roles-{REALM}"  # every user of the realm has it (its defaultRole)
COMPOSITES = {
    DEFAULT_ROLE: ["sandbox:invoke"],
    "sandbox:manage": ["sandbox:invoke"],
    "admin": ["sandbox:manage"],
}
CLIENTS = {
    # run_e2e.sh's name for the secret -> (client id, service account's realm roles, audience)
    "app": ("agentcube-app", (DEFAULT_ROLE, "sandbox:invoke"), AUDIENCE),
    "admin": ("agentcube-admin", (DEFAULT_ROLE, "admin"), AUDIENCE),
    "router": ("agentcube-router", (DEFAULT_ROLE,), None),
}
TIMEOUT = 10.0


class TokenError(Exception):
    """The token endpoint refused; the message has its answer (never the secret)."""


def write_clients_file(path: Path, secrets: dict[str, str]) -> Path:
    """The issuer's --clients-file, 0600 from its first byte."""
    clients = []
    for key, (client_id, roles, audience) in CLIENTS.items():
        client = {"id": client_id, "secret": secrets[key], "roles": list(roles)}
        clients.append(client | ({"audience": audience} if audience else {}))
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        json.dump({"composites": COMPOSITES, "clients": clients}, file, indent=2)
    return path


def token_url(issuer: str) -> str:
    return f"{issuer}/protocol/openid-connect/token"


def client_credentials_token(issuer: str, client_id: str, secret: str, host: str) -> str:
    """The access token run_e2e.sh's curl asks Keycloak for (run_e2e.sh:512-524): a form
    POST with the client's id and secret, and the Host header of Keycloak's Service."""
    answer = requests.post(
        token_url(issuer),
        data={"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret},
        headers={"Host": host},
        timeout=TIMEOUT,
    )
    if answer.status_code != 200 or "access_token" not in answer.text:
        raise TokenError(
            f"the issuer's token endpoint refused {client_id}: {answer.status_code} "
            f"{answer.text[:300]}"
        )
    return answer.json()["access_token"]
