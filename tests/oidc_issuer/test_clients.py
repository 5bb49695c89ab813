"""The clients file: read only when its owner alone may read it, every malformed part
refused naming the file and the field, never a secret."""

from __future__ import annotations

from pathlib import Path

import pytest

from oidc_issuer.clients import ClientsFileError, load_clients
from tests.oidc_issuer.realm_clients import SECRETS, write_clients_file


def test_the_realm_s_clients_are_read_with_their_effective_roles(tmp_path: Path) -> None:
    clients = load_clients(write_clients_file(tmp_path / "clients.json"))
    admin = clients.get("agentcube-admin")
    assert admin is not None and admin.audience == "agentcube-api"
    assert clients.effective_roles(admin) == ["admin", "sandbox:manage", "sandbox:invoke"]
    assert clients.get("nobody") is None
    assert "e2e-admin-secret" not in repr(admin)


def test_composites_that_include_each_other_are_expanded_once(tmp_path: Path) -> None:
    document = {
        "composites": {"a": ["b"], "b": ["a", "c"]},
        "clients": [{"id": "x", "secret": "s", "roles": ["a"]}],
    }
    clients = load_clients(write_clients_file(tmp_path / "clients.json", document))
    assert clients.effective_roles(clients.by_id["x"]) == ["a", "b", "c"]


@pytest.mark.parametrize("mode", [0o600, 0o400])
def test_a_file_only_its_owner_may_read_is_taken(tmp_path: Path, mode: int) -> None:
    assert load_clients(write_clients_file(tmp_path / "clients.json", mode=mode)).by_id


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o644, 0o660])
def test_a_file_others_may_read_is_refused_naming_its_mode(tmp_path: Path, mode: int) -> None:
    path = write_clients_file(tmp_path / "clients.json", mode=mode)
    with pytest.raises(ClientsFileError, match=f"mode {mode:04o} lets others read it") as caught:
        load_clients(path)
    assert not any(secret in str(caught.value) for secret in SECRETS)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ClientsFileError, match=r"nowhere\.json: cannot read it"):
        load_clients(tmp_path / "nowhere.json")


def test_a_file_that_is_not_json_is_refused_without_quoting_it(tmp_path: Path) -> None:
    path = tmp_path / "clients.json"
    path.write_text('{"clients": [{"id": "x", "secret": "hunter2-secret" ')
    path.chmod(0o600)
    with pytest.raises(ClientsFileError, match="not JSON") as caught:
        load_clients(path)
    assert "hunter2" not in str(caught.value)


CLIENT = {"id": "x", "secret": "hunter2-secret", "roles": []}


@pytest.mark.parametrize(
    ("document", "words"),
    [
        ([CLIENT], "must be a JSON object"),
        ({"clients": []}, "'clients' must be a non-empty list"),
        ({"clients": [CLIENT], "realm": "x"}, "unknown fields ['realm']"),
        ({"clients": [CLIENT], "composites": ["a"]}, "'composites' must map a role"),
        ({"clients": [CLIENT], "composites": {"a": "b"}}, "composites['a'] must be a list"),
        ({"clients": ["x"]}, "clients[0]: must be an object"),
        ({"clients": [{**CLIENT, "id": ""}]}, "clients[0]: 'id' must be a non-empty string"),
        ({"clients": [{"id": "x", "roles": []}]}, "'secret' must be a non-empty string"),
        ({"clients": [{**CLIENT, "roles": "admin"}]}, "clients[0]: roles must be a list"),
        ({"clients": [{**CLIENT, "audience": 3}]}, "'audience' must be a non-empty string"),
        ({"clients": [{**CLIENT, "scope": "x"}]}, "clients[0]: unknown fields ['scope']"),
        ({"clients": [CLIENT, CLIENT]}, "client 'x' is defined twice"),
    ],
)
def test_a_malformed_file_is_refused_naming_the_field(
    tmp_path: Path, document: object, words: str
) -> None:
    path = write_clients_file(tmp_path / "clients.json", document)
    with pytest.raises(ClientsFileError) as caught:
        load_clients(path)
    assert words in str(caught.value)
    assert str(path) in str(caught.value)
    assert "hunter2" not in str(caught.value)
