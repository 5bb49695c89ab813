"""The cluster's PKI and credentials files."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest
import yaml

from onemachine.cluster.credentials import new_users, write_kubeconfig, write_token_file
from onemachine.cluster.pki import make_pki


def openssl(*arguments: str) -> str:
    return subprocess.run(
        ["openssl", *arguments], capture_output=True, text=True, check=True
    ).stdout


def test_the_serving_certificate_is_signed_by_the_ca_and_names_loopback(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    assert "OK" in openssl("verify", "-CAfile", str(pki.ca_cert), str(pki.serving_cert))
    names = openssl("x509", "-in", str(pki.serving_cert), "-noout", "-ext", "subjectAltName")
    assert "IP Address:127.0.0.1" in names
    assert "DNS:kubernetes.default.svc" in names
    for key in (pki.serving_key, pki.kubelet_key, pki.kubelet_client_key, pki.service_account_key):
        assert stat.S_IMODE(key.stat().st_mode) == 0o600
        assert "ASN1 OID: prime256v1" in openssl("pkey", "-in", str(key), "-noout", "-text")
    public = openssl("pkey", "-in", str(pki.service_account_key), "-pubout")
    assert public == pki.service_account_public_key.read_text()


def test_the_kubelet_api_pair_is_of_the_same_ca_one_to_serve_one_to_call(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    for cert in (pki.kubelet_cert, pki.kubelet_client_cert):
        assert "OK" in openssl("verify", "-CAfile", str(pki.ca_cert), str(cert))
    names = openssl("x509", "-in", str(pki.kubelet_cert), "-noout", "-ext", "subjectAltName")
    assert "IP Address:198.18.0.1" in names
    client = openssl(
        "x509",
        "-in",
        str(pki.kubelet_client_cert),
        "-noout",
        "-subject",
        "-ext",
        "extendedKeyUsage",
    )
    assert "subject=CN = kube-apiserver-kubelet-client\n" in client
    assert "TLS Web Client Authentication" in client


def test_a_directory_that_cannot_be_written_is_an_os_error_naming_the_file(
    tmp_path: Path,
) -> None:
    """The launcher reports an OSError as it is and stops before anything starts."""
    with pytest.raises(FileNotFoundError, match=r"missing/ca\.crt"):
        make_pki(tmp_path / "missing")


def test_tokens_are_in_private_files_only(tmp_path: Path) -> None:
    users = new_users()
    write_token_file(tmp_path / "tokens.csv", users)
    lines = (tmp_path / "tokens.csv").read_text().splitlines()
    assert f'{users["admin"].token},admin,admin,"system:masters"' in lines
    assert f'{users["acceptance"].token},acceptance,acceptance,"ci"' in lines
    assert len({user.token for user in users.values()}) == len(users)
    (tmp_path / "ca.crt").write_text("CA")
    write_kubeconfig(
        tmp_path / "k.yaml",
        "https://127.0.0.1:1",
        tmp_path / "ca.crt",
        "acceptance",
        users["acceptance"].token,
    )
    config = yaml.safe_load((tmp_path / "k.yaml").read_text())
    assert config["users"] == [{"name": "acceptance", "user": {"token": users["acceptance"].token}}]
    assert config["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:1"
    for path in (tmp_path / "tokens.csv", tmp_path / "k.yaml"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
