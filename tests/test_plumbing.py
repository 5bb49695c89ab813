"""The plumbing localcube, onemachine and the tests share (plumbing): the certificates of
the TLS servers they start and the argparse types of their command lines."""

from __future__ import annotations

import argparse
import ipaddress
import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from plumbing.arguments import positive_duration
from plumbing.certificates import serving_certificates, write_file


def test_a_positive_duration_flag_is_its_seconds() -> None:
    assert positive_duration("1m30s") == 90.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0s", "'0s' must be positive"),
        ("-1s", "'-1s' must be positive"),
        ("soon", 'time: invalid duration "soon"'),
    ],
)
def test_a_duration_flag_that_is_not_positive_is_refused_for_argparse_to_show(
    text: str, message: str
) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        positive_duration(text)
    assert str(refused.value) == message


def test_a_serving_certificate_is_signed_by_its_ca_for_each_name_as_ip_or_dns() -> None:
    served = serving_certificates("a CA", "a server", ["127.0.0.1", "kubernetes.default"])
    ca, cert = (
        x509.load_pem_x509_certificate(served.ca_cert),
        x509.load_pem_x509_certificate(served.cert),
    )
    cert.verify_directly_issued_by(ca)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    assert names.get_values_for_type(x509.DNSName) == ["kubernetes.default"]
    key = serialization.load_pem_private_key(served.key, password=None)
    assert key.public_key().public_numbers() == cert.public_key().public_numbers()


def test_a_file_written_is_never_wider_than_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "key.pem"
    path.write_bytes(b"old")
    path.chmod(0o644)
    write_file(path, b"secret", 0o600)
    assert (path.read_bytes(), stat.S_IMODE(path.stat().st_mode)) == (b"secret", 0o600)
