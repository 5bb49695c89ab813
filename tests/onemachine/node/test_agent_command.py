"""`python -m onemachine node` as a process: it runs pods until SIGTERM and then leaves none,
logs one line per event without the pods' secret values, and refuses bad input and a
network namespace that is not private with a message saying what to fix."""

from __future__ import annotations

import base64
import os
import signal
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from onemachine import netns
from tests.kubernetes.fake_api import FakeKubernetes
from tests.onemachine.node.agent_fixtures import (
    NS,
    PODS,
    PYTHON_IMAGE,
    container_status,
    kubelet_pki,
    node_kubeconfig,
    processes_with,
)
from tests.onemachine.node.test_kubelet_api import get
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[3]


def node(*arguments: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "onemachine", "node", *arguments],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )


def finished(process: subprocess.Popen, timeout: float = 20) -> tuple[int, str]:
    _, stderr = process.communicate(timeout=timeout)
    return process.returncode, stderr


def test_a_malformed_image_entry_is_refused(tmp_path: Path) -> None:
    code, stderr = finished(
        node("--kubeconfig", str(tmp_path / "k"), "--root", str(tmp_path), "--image", "python")
    )
    assert code == 2
    assert "--image 'python'" in stderr


def test_a_kubeconfig_that_is_not_there_is_refused(tmp_path: Path) -> None:
    code, stderr = finished(node("--kubeconfig", str(tmp_path / "nope"), "--root", str(tmp_path)))
    assert code == 2
    assert f"onemachine node: --kubeconfig {tmp_path / 'nope'}: no such file" in stderr


def test_a_namespace_with_another_interface_is_refused(tmp_path: Path, node_netns: int) -> None:
    subprocess.run(["ip", "link", "add", "other0", "type", "veth", "peer", "other1"], check=True)
    kubeconfig = node_kubeconfig(tmp_path / "k", "http://127.0.0.1:9")
    code, stderr = finished(node("--kubeconfig", str(kubeconfig), "--root", str(tmp_path)))
    assert code == 2
    assert "other0" in stderr
    assert "python -m onemachine cluster" in stderr


@pytest.mark.slow
def test_an_api_server_that_does_not_answer_stops_the_node(tmp_path: Path, node_netns: int) -> None:
    kubeconfig = node_kubeconfig(tmp_path / "k", "http://127.0.0.1:9")
    code, stderr = finished(node("--kubeconfig", str(kubeconfig), "--root", str(tmp_path)))
    assert code == 1
    assert "the Node could not be registered" in stderr


def test_the_node_runs_pods_until_sigterm_and_leaves_none(tmp_path: Path, node_netns: int) -> None:
    fake = FakeKubernetes()
    fake.start()
    marker = f"mark-{uuid.uuid4()}"
    secret = f"secret-{uuid.uuid4()}"
    fake.put(
        f"/api/v1/namespaces/{NS}/secrets",
        {"metadata": {"name": "s"}, "data": {"v": base64.b64encode(secret.encode()).decode()}},
    )
    kubeconfig = node_kubeconfig(tmp_path / "k", fake.url)
    pki = kubelet_pki(tmp_path / "pki")
    process = node(
        "--kubeconfig",
        str(kubeconfig),
        "--root",
        str(tmp_path / "root"),
        "--name",
        "cli-node",
        "--image",
        f"python:*={sys.executable}",
        "--heartbeat",
        "200ms",
        "--tls-cert-file",
        str(pki.tls.cert_file),
        "--tls-private-key-file",
        str(pki.tls.key_file),
        "--client-ca-file",
        str(pki.tls.client_ca_file),
    )
    try:
        env = [
            {"name": "TEST_MARK", "value": marker},
            {"name": "S", "valueFrom": {"secretKeyRef": {"name": "s", "key": "v"}}},
        ]
        code = "import time; print('serving', flush=True); time.sleep(60)"
        container = {"name": "c", "image": PYTHON_IMAGE, "command": ["python3", "-c", code]}
        fake.put(
            PODS, {"metadata": {"name": "p"}, "spec": {"containers": [{**container, "env": env}]}}
        )

        def running() -> bool:
            assert process.poll() is None, process.stderr.read()  # type: ignore[union-attr]
            return "running" in container_status(fake.get(PODS, "p")).get("state", {})

        wait_until(running, "pod p's container running")
        assert fake.get("/api/v1/nodes", "cli-node") is not None
        assert processes_with(marker)
        wait_until(
            lambda: get(pki, f"/containerLogs/{NS}/p/c") == (200, "serving\n"),
            "its log from the node's kubelet API",
        )
        process.send_signal(signal.SIGTERM)
        code_, stderr = finished(process)
    finally:
        if process.poll() is None:
            process.kill()
        fake.stop()
    assert code_ == 0, stderr
    assert processes_with(marker) == []
    assert "onemachine node cli-node ready" in stderr
    assert "pod agentcube/p: container c started" in stderr
    assert secret not in stderr and marker not in stderr
    assert os.listdir(tmp_path / "root" / "pods") == []


def test_the_kubelet_apis_tls_files_come_all_three_or_none(tmp_path: Path) -> None:
    code, stderr = finished(
        node("--kubeconfig", "k", "--root", str(tmp_path), "--tls-cert-file", "c.crt")
    )
    assert code == 2
    assert (
        "onemachine node: the kubelet API needs --tls-private-key-file and --client-ca-file too"
        in stderr
    )


def test_unreadable_tls_files_are_refused(tmp_path: Path) -> None:
    files = zip(
        ("--tls-cert-file", "--tls-private-key-file", "--client-ca-file"),
        (str(tmp_path / name) for name in ("c.crt", "c.key", "ca.crt")),
        strict=True,
    )
    flags = [word for pair in files for word in pair]
    code, stderr = finished(node("--kubeconfig", "k", "--root", str(tmp_path), *flags))
    assert code == 2
    assert "onemachine node: the kubelet API's TLS files:" in stderr


@pytest.mark.parametrize("flag", ["--heartbeat", "--restart-backoff"])
def test_durations_must_be_positive(tmp_path: Path, flag: str) -> None:
    code, stderr = finished(node("--kubeconfig", "k", "--root", str(tmp_path), flag, "0s"))
    assert code == 2
    assert "must be positive" in stderr


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("10.96.0.0/12", "must lie inside 198.19.0.0/16"),
        ("198.18.0.0/24", "must lie inside 198.19.0.0/16"),  # the pods' own network
        ("198.19.0.1/24", "has host bits set"),
    ],
)
def test_a_service_cidr_off_the_benchmarking_block_is_refused(
    tmp_path: Path, value: str, reason: str
) -> None:
    code, stderr = finished(
        node("--kubeconfig", "k", "--root", str(tmp_path), "--service-cidr", value)
    )
    assert code == 2
    assert f"argument --service-cidr: {value!r}: " in stderr and reason in stderr


@pytest.mark.slow
def test_with_a_service_cidr_the_node_proxies_services_until_sigterm(
    tmp_path: Path, node_netns: int
) -> None:
    """The command's wiring of the Service proxy: a ClusterIP answers from the node's
    namespace (the launcher's), and the proxy's link goes with the node."""
    fake = FakeKubernetes()
    fake.start()
    fake.put(
        f"/api/v1/namespaces/{NS}/services",
        {
            "metadata": {"name": "wm"},
            "spec": {"clusterIP": "198.19.0.40", "ports": [{"name": "http", "port": 8080}]},
        },
    )
    fake.put(
        f"/apis/discovery.k8s.io/v1/namespaces/{NS}/endpointslices",
        {
            "metadata": {"name": "wm-process", "labels": {"kubernetes.io/service-name": "wm"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["198.18.0.1"]}],
            "ports": [{"name": "http", "port": 8090}],
        },
    )
    kubeconfig = node_kubeconfig(tmp_path / "k", fake.url)
    process = node(
        "--kubeconfig",
        str(kubeconfig),
        "--root",
        str(tmp_path / "root"),
        "--service-cidr",
        "198.19.0.0/24",
        "--heartbeat",
        "200ms",
    )
    server = socket.create_server(("0.0.0.0", 8090))
    server.settimeout(5)  # a proxy that never dials fails the test, not hangs it
    try:

        def answered() -> bytes:
            assert process.poll() is None, process.stderr.read()  # type: ignore[union-attr]
            try:
                client = socket.create_connection(("198.19.0.40", 8080), timeout=2)
            except OSError:
                return b""
            with client, server.accept()[0] as accepted:
                accepted.sendall(b"the workloadmanager")
                return client.recv(100)

        assert wait_until(answered, "the ClusterIP to answer") == b"the workloadmanager"
        assert "lcvservices" in netns.interfaces()
        process.send_signal(signal.SIGTERM)
        code, stderr = finished(process)
    finally:
        server.close()
        if process.poll() is None:
            process.kill()
        fake.stop()
    assert code == 0, stderr
    assert wait_until(lambda: "lcvservices" not in netns.interfaces(), "the proxy's link gone")
