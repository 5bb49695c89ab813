"""The command line: ready line, loopback default, refusals with a one-line reason."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.localcube.support import FIXTURES


def run_cli(*arguments: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "localcube", *arguments],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=Path(__file__).resolve().parents[2],
    )


def test_it_binds_loopback_and_says_where(start_localcube) -> None:
    cube = start_localcube()
    assert cube.url.startswith("http://127.0.0.1:")


def test_a_port_in_use_is_a_one_line_refusal() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_cli("serve", "--manifests", str(FIXTURES), "--port", str(port))
    assert result.returncode == 1
    assert result.stdout == ""
    assert (
        result.stderr.strip()
        == f"localcube: cannot listen on 127.0.0.1:{port}: address already in use"
    )


def resource(kind: str, name: str, spec: str) -> str:
    api = "runtime.agentcube.volcano.sh/v1alpha1"
    return f"apiVersion: {api}\nkind: {kind}\nmetadata: {{name: {name}}}\nspec: {spec}\n"


NO_COMMAND = "{targetPort: [{port: 8080}], podTemplate: {spec: {containers: [{image: i}]}}}"


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (
            resource("AgentRuntime", "Bad_Name", "{}"),
            "AgentRuntime default/Bad_Name: metadata.name must be a DNS subdomain",
        ),
        (
            resource("AgentRuntime", "a", "{}").replace("{name: a}", "{name: a, namespace: a.b}"),
            "AgentRuntime a.b/a: metadata.namespace must be a DNS label",
        ),
        (
            resource("CodeInterpreter", "ci", "{template: {image: x}, sessionTimeout: soon}"),
            'CodeInterpreter default/ci: spec.sessionTimeout: time: invalid duration "soon"',
        ),
        (
            resource("CodeInterpreter", "ci", "{template: {image: x}, warmPoolSize: -1}"),
            "CodeInterpreter default/ci: spec.warmPoolSize must be a whole number from 0 to 100",
        ),
        (
            resource("AgentRuntime", "a", NO_COMMAND),
            "AgentRuntime default/a: spec.podTemplate.spec.containers[0].command is required",
        ),
        ("kind: AgentRuntime\n: - broken", "not valid YAML"),
    ],
)
def test_an_invalid_manifest_is_refused_naming_file_resource_and_field(
    tmp_path: Path, document, expected
) -> None:
    manifest = tmp_path / "broken.yaml"
    manifest.write_text(document)
    result = run_cli("serve", "--manifests", str(manifest), "--port", "0")
    assert result.returncode == 2
    assert str(manifest) in result.stderr
    assert expected in result.stderr


def test_a_missing_manifest_path_is_refused(tmp_path: Path) -> None:
    result = run_cli("serve", "--manifests", str(tmp_path / "absent"), "--port", "0")
    assert result.returncode == 2
    assert "absent: no such file or directory" in result.stderr


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--gc-interval", "soon"),
        ("--gc-interval", "0s"),
        ("--gc-min-idle-lookback", "-1s"),
        ("--gc-min-idle-lookback", "a minute"),
        ("--port", "70000"),
        ("--max-concurrent-requests", "0"),
    ],
)
def test_bad_options_are_refused(option: str, value: str) -> None:
    result = run_cli("serve", "--manifests", str(FIXTURES), option, value)
    assert result.returncode == 2
    assert option in result.stderr


def test_a_malformed_token_entry_is_refused_without_echoing_it(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("no-separator-secret\n")
    result = run_cli("serve", "--manifests", str(FIXTURES), "--token-file", str(tokens))
    assert result.returncode == 2
    assert f"{tokens}:1: expected SUBJECT=TOKEN" in result.stderr
    assert "no-separator-secret" not in result.stderr


def test_pr_433_workload_manager_auth_without_tokens_is_refused() -> None:
    result = run_cli("serve", "--manifests", str(FIXTURES), "--pr-433-workload-manager-auth")
    assert result.returncode == 2
    assert "localcube: --pr-433-workload-manager-auth admits service-account tokens only" in (
        result.stderr
    )


def test_an_unknown_placeholder_in_the_picod_command_is_refused() -> None:
    result = run_cli(
        "serve", "--manifests", str(FIXTURES), "--picod-command", "picod --port {prot}"
    )
    assert result.returncode == 2
    assert (
        "argument --picod-command: unknown placeholder {prot} in '{prot}': "
        "the placeholders are {port} and {workspace}"
    ) in result.stderr
