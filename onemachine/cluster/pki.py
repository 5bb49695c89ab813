"""The cluster's certificates and keys: a CA, the API server's serving certificate
(agentcube_contract.certificates), and the service-account signing key pair.

Every key is ECDSA P-256: kube-apiserver serves with it, and signs service-account tokens
with ES256, as its --service-account-signing-key-file allows.

The serving certificate names 127.0.0.1 among its addresses, so TLS passes unchanged through
the relay from the host's 127.0.0.1 port, and the in-cluster names of the `kubernetes`
Service.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agentcube_contract.certificates import (
    new_key,
    private_pem,
    public_pem,
    serving_certificates,
    write_file,
)
from onemachine.cluster.layout import LOOPBACK

SERVING_NAMES = (
    LOOPBACK,
    "198.19.0.1",
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)


@dataclass(frozen=True)
class Pki:
    """The files, all in one directory."""

    directory: Path

    @property
    def ca_cert(self) -> Path:
        return self.directory / "ca.crt"

    @property
    def serving_cert(self) -> Path:
        return self.directory / "apiserver.crt"

    @property
    def serving_key(self) -> Path:
        return self.directory / "apiserver.key"

    @property
    def service_account_key(self) -> Path:
        return self.directory / "service-account.key"

    @property
    def service_account_public_key(self) -> Path:
        return self.directory / "service-account.pub"


def make_pki(directory: Path) -> Pki:
    """Write a fresh CA, serving certificate and service-account key pair to `directory`
    (an OSError where it cannot be written); the keys are readable by their owner only."""
    pki = Pki(directory)
    serving = serving_certificates("onemachine-cluster-ca", "kube-apiserver", SERVING_NAMES)
    service_account = new_key()
    write_file(pki.ca_cert, serving.ca_cert, 0o644)
    write_file(pki.serving_cert, serving.cert, 0o644)
    write_file(pki.serving_key, serving.key, 0o600)
    write_file(pki.service_account_key, private_pem(service_account), 0o600)
    write_file(pki.service_account_public_key, public_pem(service_account), 0o644)
    return pki
