"""`--picod-command`: code-interpreter sandboxes run with a PicoD of one's own, here
localcube's daemon behind a wrapper that records how it was started."""

from __future__ import annotations

from pathlib import Path

import pytest
import requests

from agentcube_contract.picod_command import PicodCommand, PicodCommandError
from tests.localcube.picod_process import own_picod_command
from tests.localcube.support import FIXTURES, SESSION_HEADER, Client, derived_manifest


def test_words_are_split_as_a_shell_would_and_placeholders_filled() -> None:
    command = PicodCommand.parse("'/opt/my picod' --port={port} --workspace {workspace} {{x}}")
    assert command.argv(8080, Path("/w s")) == [
        "/opt/my picod",
        "--port=8080",
        "--workspace",
        "/w s",
        "{x}",
    ]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("picod --port {prot}", "unknown placeholder {prot} in '{prot}'"),
        ("picod {}", "unknown placeholder {}"),
        ("picod {port:d}", "a placeholder takes no format or conversion; write {port}"),
        ("picod {workspace!r}", "a placeholder takes no format or conversion"),
        ("picod {port", "expected '}' before end of string"),
        ("picod 'unbalanced", "No closing quotation"),
        ("  ", "the command is empty"),
    ],
)
def test_a_command_localcube_cannot_run_is_refused(text: str, reason: str) -> None:
    with pytest.raises(PicodCommandError) as refused:
        PicodCommand.parse(text)
    assert reason in str(refused.value)


def test_every_interpreter_sandbox_runs_the_given_command_with_the_routers_key(
    tmp_path: Path, start_localcube
) -> None:
    """As upstream, the key is given only with authMode `picod`.

    Upstream: pkg/workloadmanager/workload_builder.go:313-324"""
    records = tmp_path / "records"
    without_auth = derived_manifest(tmp_path, "python-interpreter", "no-auth", authMode="none")
    command = own_picod_command(tmp_path, records)
    cube = start_localcube([FIXTURES, without_auth], extra_arguments=["--picod-command", command])
    client = Client(cube.url)

    answer = client.execute("python-interpreter", ["echo", "hi"])
    assert answer.status_code == 200, answer.text
    assert answer.json()["stdout"] == "hi\n"
    sandbox = client.sandbox_of(answer.headers[SESSION_HEADER])
    port = sandbox["endpoint"].rsplit(":", 1)[1]
    assert (records / str(sandbox["pid"])).read_text().splitlines() == [
        "--port",
        port,
        "--workspace",
        sandbox["workspace"],
        "key=given",
    ]
    unsigned = requests.post(f"http://127.0.0.1:{port}/api/execute", json={}, timeout=10)
    assert unsigned.status_code == 401, "the daemon verifies the Router's tokens with the key"

    unprotected = client.execute("no-auth", ["echo", "hi"])
    assert unprotected.status_code == 200, unprotected.text
    pid = client.sandbox_of(unprotected.headers[SESSION_HEADER])["pid"]
    assert (records / str(pid)).read_text().splitlines()[-1] == "key="


def test_a_command_that_cannot_start_fails_the_session(tmp_path: Path, start_localcube) -> None:
    cube = start_localcube(
        extra_arguments=["--picod-command", f"{tmp_path / 'absent'} --port {{port}}"]
    )
    answer = Client(cube.url).execute("python-interpreter", ["echo", "hi"])
    assert answer.status_code == 500
    assert answer.json() == {"error": "internal server error"}
    assert f"cannot start {tmp_path / 'absent'}" in cube.log()
