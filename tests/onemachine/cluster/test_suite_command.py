"""The suite's command line the launcher prints: settings the suite knows, values it accepts."""

from __future__ import annotations

import shlex
from pathlib import Path

from acceptance.core.settings import load_settings
from acceptance.platforms.target import read_settings
from oidc_issuer.issuer import Issuer, TokenPolicy
from oidc_issuer.subjects import run_tokens, write_tokens
from onemachine.cluster.suite_command import suite_command


def test_the_suite_reaches_the_cluster_through_the_relay_ports_without_port_forwards() -> None:
    line = suite_command(
        Path("/state dir/suite.kubeconfig"), 41001, 41002, Path("/state dir/oidc-tokens")
    )
    words = shlex.split(line)
    assert words[:2] == ["./dev", "suite"]
    assert words[2::2] == ["-D"] * (len(words[2:]) // 2)
    given = dict(word.split("=", 1) for word in words[3::2])
    assert given == {
        "platform": "kubernetes",
        "kubeconfig": "/state dir/suite.kubeconfig",
        "router_url": "http://127.0.0.1:41001",
        "workload_manager_url": "http://127.0.0.1:41002",
        "port_forward": "false",
        "neighbour_namespace": "agentcube-neighbour",
        "max_concurrent_requests": "20",
        "token_dir": "/state dir/oidc-tokens",
    }
    run = read_settings({k: v for k, v in given.items() if k != "token_dir"}, {})
    suite, kubernetes = run.suite, run.adapter_settings
    assert suite.platform == "kubernetes"
    assert kubernetes.kubeconfig == Path("/state dir/suite.kubeconfig")
    assert kubernetes.port_forward is False


def test_the_suite_reads_the_issuer_s_tokens_from_their_files_none_on_the_line(
    tmp_path: Path,
) -> None:
    """The issuer's files fill every token setting the credential scenarios need."""
    tokens = run_tokens(Issuer("http://127.0.0.1:8070"), TokenPolicy(), lifetime=60)
    write_tokens(tokens, tmp_path / "tokens")
    line = suite_command(tmp_path / "k", 1, 2, tmp_path / "tokens")
    assert not any(token in line for token in tokens.values())
    given = dict(word.split("=", 1) for word in shlex.split(line)[3::2])
    settings = load_settings({"token_dir": given["token_dir"]}, {})
    for name, token in tokens.items():
        assert getattr(settings, name) == token, name


def test_on_the_real_node_the_suite_forwards_to_the_parts_services_itself() -> None:
    """The Router and the WorkloadManager are pods there: the suite opens port forwards
    through the kubelet, so the line names no URL (the adapter refuses both at once)."""
    line = suite_command(Path("/s/k"), 41001, 41002, Path("/s/t"), port_forward=True)
    given = dict(word.split("=", 1) for word in shlex.split(line)[3::2])
    assert given["port_forward"] == "true"
    assert "router_url" not in given and "workload_manager_url" not in given
    suite_line = {k: v for k, v in given.items() if k != "token_dir"}
    kubernetes = read_settings(suite_line, {}).adapter_settings
    assert kubernetes.port_forward is True
