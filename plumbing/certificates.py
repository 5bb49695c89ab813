"""The TLS a Kubernetes API server presents to its in-cluster clients, the Router's client-go
among them: a CA the client trusts (`ca.crt`) and a serving certificate it signs for the
server's names. localcube's identity endpoint and the one-machine cluster's kube-apiserver
both play that server, so both make their certificates here.

Keys are ECDSA P-256: made in a millisecond (an RSA-2048 key takes about half a second),
and accepted by Go's TLS and by kube-apiserver.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=365)
_CLOCK_SKEW = datetime.timedelta(minutes=5)


@dataclass(frozen=True)
class ServingCertificates:
    """PEM bytes; the keys unencrypted PKCS#8, for the files a server loads."""

    ca_cert: bytes
    cert: bytes
    key: bytes


def new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def private_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def public_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def write_file(path: Path, data: bytes, mode: int) -> None:
    """`data` in `path` with `mode` from its creation on: a key is never readable by others,
    not even for a moment."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(descriptor, "wb") as out:
        out.write(data)
    path.chmod(mode)


@dataclass(frozen=True)
class CertificateAuthority:
    """A CA whose key is kept, to sign more than one certificate (a server's and the
    clients' of a cluster)."""

    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @classmethod
    def new(cls, name: str) -> CertificateAuthority:
        key = new_key()
        subject = _name(name)
        cert = (
            _builder(subject, subject, key, key, datetime.datetime.now(datetime.UTC))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(_key_usage(key_cert_sign=True, crl_sign=True), critical=True)
            .sign(key, hashes.SHA256())
        )
        return cls(cert, key)

    @property
    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def serving(self, server_name: str, names: Sequence[str]) -> tuple[bytes, bytes]:
        """A serving certificate for `names` (IP addresses and DNS names alike, each taken as
        an address where it parses as one) and its key, PEM."""
        san = x509.SubjectAlternativeName([_general_name(n) for n in names])
        return self._sign(_name(server_name), ExtendedKeyUsageOID.SERVER_AUTH, san)

    def client(self, common_name: str, organization: str | None = None) -> tuple[bytes, bytes]:
        """A client certificate for user `common_name` (in group `organization`, as
        Kubernetes reads a certificate's O) and its key, PEM."""
        attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
        if organization:
            attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
        return self._sign(x509.Name(attributes), ExtendedKeyUsageOID.CLIENT_AUTH)

    def _sign(
        self, subject: x509.Name, usage: x509.ObjectIdentifier, *extra: x509.ExtensionType
    ) -> tuple[bytes, bytes]:
        key = new_key()
        now = datetime.datetime.now(datetime.UTC)
        builder = _builder(subject, self.cert.subject, key, self.key, now)
        for extension in extra:
            builder = builder.add_extension(extension, critical=False)
        cert = (
            builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(_key_usage(digital_signature=True), critical=True)
            .sign(self.key, hashes.SHA256())
        )
        return cert.public_bytes(serialization.Encoding.PEM), private_pem(key)


def serving_certificates(
    ca_name: str, server_name: str, names: Sequence[str]
) -> ServingCertificates:
    """A fresh CA, and a certificate it signs for `names`. The CA's key is not kept."""
    ca = CertificateAuthority.new(ca_name)
    cert, key = ca.serving(server_name, names)
    return ServingCertificates(ca_cert=ca.cert_pem, cert=cert, key=key)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _general_name(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def _key_usage(**granted: bool) -> x509.KeyUsage:
    usages = dict.fromkeys(
        (
            "digital_signature",
            "content_commitment",
            "key_encipherment",
            "data_encipherment",
            "key_agreement",
            "key_cert_sign",
            "crl_sign",
            "encipher_only",
            "decipher_only",
        ),
        False,
    )
    return x509.KeyUsage(**{**usages, **granted})


def _builder(
    subject: x509.Name,
    issuer: x509.Name,
    key: ec.EllipticCurvePrivateKey,
    issuer_key: ec.EllipticCurvePrivateKey,
    now: datetime.datetime,
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _CLOCK_SKEW)
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), False
        )
    )
