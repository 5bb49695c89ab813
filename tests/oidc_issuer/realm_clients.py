"""The clients of upstream's Keycloak addon as the e2e deploys them
(manifests/charts/addons/keycloak/templates/realm-config.yaml, the secrets of
test/e2e/run_e2e.sh:449-451), written as a clients file."""

from __future__ import annotations

import json
import os
from pathlib import Path

COMPOSITES = {
    "default-roles-agentcube": ["sandbox:invoke"],
    "sandbox:manage": ["sandbox:invoke"],
    "admin": ["sandbox:manage"],
}
CLIENTS = [
    {
        "id": "agentcube-app",
        "secret": "e2e-app-secret",
        "roles": ["sandbox:invoke"],
        "audience": "agentcube-api",
    },
    {
        "id": "agentcube-admin",
        "secret": "e2e-admin-secret",
        "roles": ["admin"],
        "audience": "agentcube-api",
    },
    # No audience mapper; the service account Keycloak makes on import has the default role.
    {"id": "agentcube-router", "secret": "e2e-router-secret", "roles": ["default-roles-agentcube"]},
    # A secret with the characters RFC 6749 2.3.1 form-encodes in a Basic header.
    {"id": "odd client", "secret": "a:b%c+d é", "roles": []},
]
SECRETS = [client["secret"] for client in CLIENTS]


def write_clients_file(path: Path, document: object | None = None, mode: int = 0o600) -> Path:
    """The document (the realm's clients by default) in a new file of this mode."""
    text = json.dumps(document if document is not None else realm_document())
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        out.write(text)
    path.chmod(mode)
    return path


def realm_document() -> dict:
    return {"composites": COMPOSITES, "clients": CLIENTS}
