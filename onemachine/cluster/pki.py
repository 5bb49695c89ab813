"""The cluster's certificates and keys: a CA, the API server's serving certificate
(plumbing.certificates), the service-account signing key pair, and the kubelet
API's pair: the node's serving certificate (for its address, 198.18.0.1) and the API
server's client certificate towards it, both of the same CA, which each side trusts for the
other (kube-apiserver's --kubelet-certificate-authority, the node's --client-ca-file).

Every key is ECDSA P-256: kube-apiserver serves with it, and signs service-account tokens
with ES256, as its --service-account-signing-key-file allows.

The serving certificate names 127.0.0.1 among its addresses, so TLS passes unchanged through
the relay from the host's 127.0.0.1 port, and the in-cluster names of the `kubernetes`
Service.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from onemachine.cluster.layout import LOOPBACK, NODE_NAME
from onemachine.node.pod_network import GATEWAY
from plumbing.certificates import (
    CertificateAuthority,
    new_key,
    private_pem,
    public_pem,
    write_file,
)

# kubeadm's name for the API server's client certificate towards the kubelets.
KUBELET_CLIENT = "kube-apiserver-kubelet-client"

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
    def kubelet_cert(self) -> Path:
        return self.directory / "kubelet.crt"

    @property
    def kubelet_key(self) -> Path:
        return self.directory / "kubelet.key"

    @property
    def kubelet_client_cert(self) -> Path:
        return self.directory / "apiserver-kubelet-client.crt"

    @property
    def kubelet_client_key(self) -> Path:
        return self.directory / "apiserver-kubelet-client.key"

    @property
    def service_account_key(self) -> Path:
        return self.directory / "service-account.key"

    @property
    def service_account_public_key(self) -> Path:
        return self.directory / "service-account.pub"


def make_pki(directory: Path) -> Pki:
    """Write a fresh CA, the certificates it signs and the service-account key pair to
    `directory` (an OSError where it cannot be written); the keys are readable by their
    owner only."""
    pki = Pki(directory)
    ca = CertificateAuthority.new("onemachine-cluster-ca")
    # kubeadm's name for it; no group: the API server's --client-ca-file is the same CA,
    # and this certificate is to give no rights there
    client = ca.client(KUBELET_CLIENT)
    service_account = new_key()
    write_file(pki.ca_cert, ca.cert_pem, 0o644)
    for cert, key, (cert_pem, key_pem) in (
        (pki.serving_cert, pki.serving_key, ca.serving("kube-apiserver", SERVING_NAMES)),
        (pki.kubelet_cert, pki.kubelet_key, ca.serving(NODE_NAME, (str(GATEWAY), NODE_NAME))),
        (pki.kubelet_client_cert, pki.kubelet_client_key, client),
    ):
        write_file(cert, cert_pem, 0o644)
        write_file(key, key_pem, 0o600)
    write_file(pki.service_account_key, private_pem(service_account), 0o600)
    write_file(pki.service_account_public_key, public_pem(service_account), 0o644)
    return pki
