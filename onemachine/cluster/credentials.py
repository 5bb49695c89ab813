"""Who may call the API server: the static token file and the kubeconfigs that use it.

Tokens are random, written only to files readable by the user (the token file, the
kubeconfigs), never to a process's arguments or a log.
"""

from __future__ import annotations

import base64
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import yaml

from onemachine.cluster.layout import NODE_NAME


@dataclass(frozen=True)
class User:
    """One line of the API server's --token-auth-file."""

    name: str
    groups: tuple[str, ...]
    token: str


# The suite runs as `acceptance` (group `ci`), bound only by docs/examples/rbac.yaml's role;
# the controller-manager and the scheduler as the users the bootstrap RBAC policy grants
# their rights to; the real node's kubelet as its node (the Node authorizer's user and group).
ADMIN = "admin"
SUITE_USER = "acceptance"
CONTROLLER_MANAGER = "system:kube-controller-manager"
SCHEDULER = "system:kube-scheduler"
KUBE_PROXY = "system:kube-proxy"  # bound to system:node-proxier by the bootstrap policy
KUBELET = f"system:node:{NODE_NAME}"
_GROUPS = {
    ADMIN: ("system:masters",),
    SUITE_USER: ("ci",),
    CONTROLLER_MANAGER: (),
    SCHEDULER: (),
    KUBE_PROXY: (),
    KUBELET: ("system:nodes",),
}


def new_users() -> dict[str, User]:
    """A fresh token for each static user."""
    return {name: User(name, groups, secrets.token_hex(24)) for name, groups in _GROUPS.items()}


def write_token_file(path: Path, users: dict[str, User]) -> None:
    """The API server's static token file: `token,user,uid,"group,group"` a line."""
    lines = [
        f'{user.token},{user.name},{user.name},"{",".join(user.groups)}"' for user in users.values()
    ]
    write_private(path, "\n".join(lines) + "\n")


def write_kubeconfig(path: Path, server: str, ca_cert: Path, user: str, token: str) -> None:
    """A kubeconfig of one cluster, one user and one current context named `localcube`."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "localcube",
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca_cert.read_bytes()).decode(),
                },
            }
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": "localcube", "context": {"cluster": "localcube", "user": user}}],
        "current-context": "localcube",
    }
    write_private(path, yaml.safe_dump(config, sort_keys=False))


def write_private(path: Path, text: str) -> None:
    """Write `text` to a file only its owner can read, created so from the start."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write(text)
