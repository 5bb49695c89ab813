"""The cluster's certificates and keys, made with `openssl`: a CA, the API server's serving
certificate, and the service-account signing key pair.

Every key is ECDSA P-256 (openssl makes one in milliseconds, an RSA-2048 one in about half a
second): kube-apiserver serves with it, and signs service-account tokens with ES256, as its
--service-account-signing-key-file allows.

The serving certificate names 127.0.0.1 among its addresses, so TLS passes unchanged through
the relay from the host's 127.0.0.1 port, and the in-cluster names of the `kubernetes`
Service.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from onemachine.cluster.layout import LOOPBACK

SERVING_NAMES = (
    f"IP:{LOOPBACK}",
    "IP:198.19.0.1",
    "DNS:localhost",
    "DNS:kubernetes",
    "DNS:kubernetes.default",
    "DNS:kubernetes.default.svc",
    "DNS:kubernetes.default.svc.cluster.local",
)
DAYS = "365"
NEW_KEY = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1")


class PkiError(Exception):
    """openssl refused; the message names the step and openssl's own words."""


@dataclass(frozen=True)
class Pki:
    """The files, all in one directory."""

    directory: Path

    @property
    def ca_cert(self) -> Path:
        return self.directory / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.directory / "ca.key"

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
    """Write a fresh CA, serving certificate and service-account key pair to `directory`."""
    pki = Pki(directory)
    _openssl(
        "the CA",
        "req",
        "-x509",
        *NEW_KEY,
        "-nodes",
        "-days",
        DAYS,
        "-keyout",
        pki.ca_key,
        "-out",
        pki.ca_cert,
        "-subj",
        "/CN=localcube-cluster-ca",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
    )
    request = directory / "apiserver.csr"
    _openssl(
        "the API server's key",
        "req",
        *NEW_KEY,
        "-nodes",
        "-keyout",
        pki.serving_key,
        "-out",
        request,
        "-subj",
        "/CN=kube-apiserver",
    )
    extensions = directory / "apiserver.ext"
    extensions.write_text(
        f"subjectAltName={','.join(SERVING_NAMES)}\n"
        "extendedKeyUsage=serverAuth\n"
        "keyUsage=critical,digitalSignature\n",
        encoding="utf-8",
    )
    _openssl(
        "the API server's certificate",
        "x509",
        "-req",
        "-in",
        request,
        "-CA",
        pki.ca_cert,
        "-CAkey",
        pki.ca_key,
        "-CAcreateserial",
        "-days",
        DAYS,
        "-extfile",
        extensions,
        "-out",
        pki.serving_cert,
    )
    _openssl(
        "the service-account key",
        "genpkey",
        "-algorithm",
        "EC",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-out",
        pki.service_account_key,
    )
    _openssl(
        "the service-account public key",
        "pkey",
        "-in",
        pki.service_account_key,
        "-pubout",
        "-out",
        pki.service_account_public_key,
    )
    for key in (pki.ca_key, pki.serving_key, pki.service_account_key):
        key.chmod(0o600)
    return pki


def _openssl(step: str, *arguments: str | Path) -> None:
    try:
        result = subprocess.run(
            ["openssl", *map(str, arguments)], capture_output=True, text=True, check=False
        )
    except FileNotFoundError as error:
        raise PkiError(f"cannot make {step}: openssl is not on PATH") from error
    if result.returncode != 0:
        raise PkiError(f"cannot make {step}: openssl: {result.stderr.strip()}")
