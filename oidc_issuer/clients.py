"""The confidential clients of the token endpoint, read from a file only its owner may read.

The file is JSON, the shape of the parts of a Keycloak realm that make a service account's
token (upstream's manifests/charts/addons/keycloak/templates/realm-config.yaml): each client's
id, secret, the realm roles its service account is given, and the audience its audience
mapper adds; and the realm's composite roles, each naming the roles it includes, so a
token holds the effective roles as Keycloak expands them::

    {
      "composites": {"admin": ["sandbox:manage"], "sandbox:manage": ["sandbox:invoke"]},
      "clients": [
        {"id": "agentcube-app", "secret": "...", "roles": ["sandbox:invoke"],
         "audience": "agentcube-api"}
      ]
    }

No error names or quotes a secret: a bad file is named by its path and the field at fault.
"""

from __future__ import annotations

import hmac
import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class ClientsFileError(ValueError):
    """The clients file cannot be used; the message names the file and what is wrong."""


@dataclass(frozen=True)
class Client:
    id: str
    secret: str
    roles: tuple[str, ...]
    audience: str | None = None

    def __repr__(self) -> str:  # never the secret, whatever prints a client
        return f"Client(id={self.id!r}, roles={self.roles!r}, audience={self.audience!r})"

    def secret_is(self, candidate: str) -> bool:
        return hmac.compare_digest(self.secret.encode(), candidate.encode())


@dataclass(frozen=True)
class Clients:
    by_id: Mapping[str, Client]
    composites: Mapping[str, tuple[str, ...]]

    def get(self, client_id: str) -> Client | None:
        return self.by_id.get(client_id)

    def effective_roles(self, client: Client) -> list[str]:
        """The client's roles and every role their composites include, transitively, each
        once, the assigned ones first (Keycloak's list is a set: its order is not kept)."""
        seen: list[str] = []
        pending = list(client.roles)
        while pending:
            role = pending.pop(0)
            if role not in seen:
                seen.append(role)
                pending.extend(self.composites.get(role, ()))
        return seen


def load_clients(path: Path) -> Clients:
    """The clients of `path`, refused unless only its owner may read or write it."""
    try:
        mode = path.stat().st_mode
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise ClientsFileError(
                f"{path}: mode {stat.S_IMODE(mode):04o} lets others read it; "
                "it holds secrets, so it must be 0600 or stricter (chmod 600)"
            )
        descriptor = os.open(path, os.O_RDONLY)
        with os.fdopen(descriptor, encoding="utf-8") as source:
            document = json.load(source)
    except OSError as error:
        raise ClientsFileError(f"{path}: cannot read it: {error.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        # The message of JSONDecodeError carries no document text, only where it failed.
        reason = error.msg if isinstance(error, json.JSONDecodeError) else "not UTF-8"
        raise ClientsFileError(f"{path}: not JSON: {reason}") from None
    return _parse(document, path)


def _parse(document: Any, path: Path) -> Clients:
    if not isinstance(document, dict):
        raise ClientsFileError(f"{path}: must be a JSON object with a 'clients' list")
    unknown = set(document) - {"clients", "composites"}
    if unknown:
        raise ClientsFileError(f"{path}: unknown fields {sorted(unknown)}")
    composites = document.get("composites", {})
    if not isinstance(composites, dict):
        raise ClientsFileError(f"{path}: 'composites' must map a role to the roles it includes")
    expanded = {
        role: _names(included, f"{path}: composites[{role!r}]")
        for role, included in composites.items()
    }
    listed = document.get("clients")
    if not isinstance(listed, list) or not listed:
        raise ClientsFileError(f"{path}: 'clients' must be a non-empty list")
    by_id: dict[str, Client] = {}
    for index, entry in enumerate(listed):
        client = _client(entry, f"{path}: clients[{index}]")
        if client.id in by_id:
            raise ClientsFileError(f"{path}: client {client.id!r} is defined twice")
        by_id[client.id] = client
    return Clients(by_id, expanded)


def _client(entry: Any, where: str) -> Client:
    if not isinstance(entry, dict):
        raise ClientsFileError(f"{where}: must be an object with id, secret, roles")
    unknown = set(entry) - {"id", "secret", "roles", "audience"}
    if unknown:
        raise ClientsFileError(f"{where}: unknown fields {sorted(unknown)}")
    for field in ("id", "secret"):
        if not isinstance(entry.get(field), str) or not entry[field]:
            raise ClientsFileError(f"{where}: '{field}' must be a non-empty string")
    audience = entry.get("audience")
    if audience is not None and (not isinstance(audience, str) or not audience):
        raise ClientsFileError(f"{where}: 'audience' must be a non-empty string when given")
    return Client(
        entry["id"], entry["secret"], _names(entry.get("roles", []), f"{where}: roles"), audience
    )


def _names(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ClientsFileError(f"{where} must be a list of role names")
    return tuple(value)
