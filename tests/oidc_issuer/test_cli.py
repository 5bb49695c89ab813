"""`python -m oidc_issuer`: the tokens in 0600 files of a 0700 directory, none of them on
its output; bad input refused with a clear error."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import jwt
import requests

from oidc_issuer.subjects import SUBJECTS
from tests.oidc_issuer.realm_clients import SECRETS, write_clients_file

NAMES = {
    *SUBJECTS,
    "expired_api_token",
    "other_audience_api_token",
    "other_issuer_api_token",
}


def test_it_serves_and_writes_every_token_privately(tmp_path: Path) -> None:
    directory = tmp_path / "tokens"
    process = subprocess.Popen(
        [sys.executable, "-m", "oidc_issuer", "--token-dir", str(directory)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stdout.readline()
        url = line.split()[1]
        assert line.startswith("oidc_issuer: http://127.0.0.1:"), line
        discovery = requests.get(url + "/.well-known/openid-configuration", timeout=5).json()
        assert discovery["issuer"] == url
    finally:
        process.send_signal(signal.SIGTERM)
        output, errors = process.communicate(timeout=10)
    assert process.returncode == 0, errors
    assert {path.name for path in directory.iterdir()} == NAMES
    assert directory.stat().st_mode & 0o777 == 0o700
    tokens = [(directory / name).read_text().strip() for name in NAMES]
    for name in NAMES:
        assert (directory / name).stat().st_mode & 0o777 == 0o600, name
    for token in tokens:
        assert token.count(".") == 2
        assert token not in line + output + errors


def test_an_unwritable_token_directory_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = subprocess.run(
        [sys.executable, "-m", "oidc_issuer", "--token-dir", str(blocker / "tokens")],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 1
    assert "oidc_issuer: cannot write the tokens:" in result.stderr


def test_a_bad_port_is_refused_naming_it(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "oidc_issuer", "--token-dir", str(tmp_path), "--port", "70000"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert "--port 70000 is not a port" in result.stderr


def test_a_realm_with_clients_serves_the_token_endpoint_and_keeps_the_secrets_quiet(
    tmp_path: Path,
) -> None:
    clients = write_clients_file(tmp_path / "clients.json")
    command = [
        sys.executable,
        "-m",
        "oidc_issuer",
        "--token-dir",
        str(tmp_path / "tokens"),
        "--realm",
        "agentcube",
        "--clients-file",
        str(clients),
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()
        url = line.split()[1]
        assert url.startswith("http://127.0.0.1:") and url.endswith("/realms/agentcube"), line
        answer = requests.post(
            url + "/protocol/openid-connect/token",
            data={
                "grant_type": "client_credentials",
                "client_id": "agentcube-app",
                "client_secret": "e2e-app-secret",
            },
            timeout=5,
        )
        assert answer.status_code == 200, answer.text
        token = (tmp_path / "tokens" / "api_token").read_text().strip()
        assert jwt.decode(token, options={"verify_signature": False})["iss"] == url
    finally:
        process.send_signal(signal.SIGTERM)
        output, errors = process.communicate(timeout=10)
    assert process.returncode == 0, errors
    assert not any(secret in line + output + errors for secret in SECRETS)


def run_issuer(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "oidc_issuer", *arguments],
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_a_clients_file_others_may_read_is_refused(tmp_path: Path) -> None:
    clients = write_clients_file(tmp_path / "clients.json", mode=0o644)
    result = run_issuer(
        "--token-dir", str(tmp_path / "t"), "--realm", "agentcube", "--clients-file", str(clients)
    )
    assert result.returncode == 2
    assert f"oidc_issuer: the clients file {clients}: mode 0644" in result.stderr
    assert not any(secret in result.stderr + result.stdout for secret in SECRETS)
    assert not (tmp_path / "t").exists()


def test_a_clients_file_needs_a_realm(tmp_path: Path) -> None:
    clients = write_clients_file(tmp_path / "clients.json")
    result = run_issuer("--token-dir", str(tmp_path / "t"), "--clients-file", str(clients))
    assert result.returncode == 2
    assert "--clients-file needs --realm" in result.stderr


def test_a_realm_name_that_needs_escaping_is_refused(tmp_path: Path) -> None:
    result = run_issuer("--token-dir", str(tmp_path / "t"), "--realm", "a/b")
    assert result.returncode == 2
    assert "--realm 'a/b': only letters, digits" in result.stderr
