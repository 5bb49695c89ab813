"""The node's kubelet API: pods/log through the stand-in API server (which asks the real node
over TLS with its client certificate, as kube-apiserver does) read with the kubernetes
client's read_namespaced_pod_log, as the e2e runner and the suite's evidence read logs; and
a TLS client straight at https://198.18.0.1:10250, with the right certificate, none, or a
foreign CA's."""

from __future__ import annotations

import json
import socket
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from onemachine.cluster.pki import make_pki
from onemachine.node.kubelet_server import KubeletTls
from onemachine.node.pod_network import GATEWAY
from onemachine.node.pod_runtime import PodRuntime
from tests.kubernetes.fake_api import FakeKubernetes, KubeletClient
from tests.onemachine.node.agent_fixtures import (
    NS,
    Cluster,
    KubeletPki,
    cluster,
    container_status,
    kubelet_pki,
    phase,
    python,
)
from tests.waiting import wait_until

COUNTS = "import time\nfor n in range(5): print(f'line {n}', flush=True)\ntime.sleep(600)\n"
# Fails its first run, then runs on: an instance before, one now.
SECOND_TIME_LUCKY = (
    "import os, sys, time\n"
    "first = not os.path.exists('/tmp/ran')\n"
    "open('/tmp/ran', 'w').close()\n"
    "print('first run' if first else 'second run', flush=True)\n"
    "sys.exit(1) if first else time.sleep(600)\n"
)
BASE = f"https://{GATEWAY}:10250"


@pytest.fixture
def pki(tmp_path: Path) -> KubeletPki:
    return kubelet_pki(tmp_path / "pki")


@pytest.fixture
def running(tmp_path: Path, runtime: PodRuntime, pki: KubeletPki) -> Iterator[Cluster]:
    fake = FakeKubernetes(kubelet_client=pki.api_server, kubelet_address_types=("InternalIP",))
    with cluster(tmp_path, runtime, fake=fake, kubelet_api=pki.tls) as started:
        yield started


@pytest.fixture
def core(running: Cluster) -> Iterator[client.CoreV1Api]:
    api = client.CoreV1Api(config.new_client_from_config(config_file=str(running.kubeconfig)))
    yield api
    api.api_client.close()


def refusal(error: pytest.ExceptionInfo[ApiException]) -> tuple[int, str]:
    return error.value.status, json.loads(error.value.body)["message"]


def test_the_log_tail_and_timestamps_through_the_api_server(
    running: Cluster, core: client.CoreV1Api
) -> None:
    running.create("counts", python("main", COUNTS))
    running.running("counts")
    wanted = "".join(f"line {n}\n" for n in range(5))
    running.wait_pod(
        "counts", "logged", lambda _: core.read_namespaced_pod_log("counts", NS) == wanted
    )
    assert core.read_namespaced_pod_log("counts", NS, tail_lines=2) == "line 3\nline 4\n"
    assert core.read_namespaced_pod_log("counts", NS, tail_lines=0) == ""
    assert core.read_namespaced_pod_log("counts", NS, limit_bytes=8) == "line 0\nl"
    stamped = core.read_namespaced_pod_log("counts", NS, timestamps=True).splitlines()
    assert [line.split(" ", 1)[1] for line in stamped] == wanted.splitlines()
    stamp = stamped[0].split(" ")[0]
    assert len(stamp) == len("2026-12-02T06:00:00.123456789Z") and stamp.endswith("Z")
    assert core.read_namespaced_pod_log("counts", NS, since_seconds=600) == wanted
    assert core.read_namespaced_pod_log("counts", NS, container="main") == wanted


def test_previous_is_the_instance_before_the_restart(
    running: Cluster, core: client.CoreV1Api
) -> None:
    running.create("lucky", python("main", SECOND_TIME_LUCKY), restartPolicy="OnFailure")
    running.wait_pod(
        "lucky",
        "running again",
        lambda p: (
            container_status(p).get("restartCount") == 1
            and "running" in container_status(p)["state"]
        ),
    )
    running.wait_pod(
        "lucky", "logged", lambda _: core.read_namespaced_pod_log("lucky", NS) == "second run\n"
    )
    assert core.read_namespaced_pod_log("lucky", NS, previous=True) == "first run\n"


def test_previous_without_a_previous_instance_is_refused_as_the_kubelet_refuses_it(
    running: Cluster, core: client.CoreV1Api
) -> None:
    running.create("once", python("main", COUNTS))
    running.running("once")
    with pytest.raises(ApiException) as refused:
        core.read_namespaced_pod_log("once", NS, previous=True)
    assert refusal(refused) == (
        400,
        'previous terminated container "main" in pod "once" not found',
    )


def test_a_container_that_never_started_has_no_log_yet(
    running: Cluster, core: client.CoreV1Api
) -> None:
    running.create("unmapped", {"name": "main", "image": "nowhere/unknown:1"})
    running.wait_pod(
        "unmapped",
        "ErrImagePull",
        lambda p: (
            container_status(p).get("state", {}).get("waiting", {}).get("reason") == "ErrImagePull"
        ),
    )
    with pytest.raises(ApiException) as refused:
        core.read_namespaced_pod_log("unmapped", NS)
    assert refusal(refused) == (
        400,
        'container "main" in pod "unmapped" is waiting to start: image can\'t be pulled',
    )


def test_follow_streams_until_the_container_ends(running: Cluster, core: client.CoreV1Api) -> None:
    slow = "import time\nprint('a', flush=True)\ntime.sleep(1.5)\nprint('b', flush=True)\n"
    running.create("slow", python("main", slow), restartPolicy="Never")
    running.running("slow")
    began = time.monotonic()
    answer = core.read_namespaced_pod_log("slow", NS, follow=True, _preload_content=False)
    try:
        arrived = [(chunk, time.monotonic() - began) for chunk in answer.stream(1)]
    finally:
        answer.release_conn()
    assert b"".join(chunk for chunk, _ in arrived) == b"a\nb\n"
    assert arrived[0][1] < 1.0, f"the first line came only with the last: {arrived}"
    assert arrived[-1][1] >= 1.0, f"the stream ended before the container's last line: {arrived}"


def test_a_pod_whose_containers_ended_keeps_its_log_until_it_is_deleted(
    running: Cluster, core: client.CoreV1Api, runtime: PodRuntime
) -> None:
    running.create("done", python("main", "print('did it')"), restartPolicy="Never")
    pod = running.wait_pod("done", "Succeeded", lambda p: phase(p) == "Succeeded")
    assert core.read_namespaced_pod_log("done", NS) == "did it\n"
    logs = runtime.log_directory(NS, "done", pod["metadata"]["uid"])
    assert (logs / "main" / "0.log").exists()
    running.delete("done")
    running.wait_gone("done")
    wait_until(lambda: not logs.exists(), "the deleted pod's logs removed")


# Straight at the node, as kube-apiserver connects.


def _node_context(pki: KubeletPki, cert: str | None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(pki.path("ca.crt")))
    if cert:
        context.load_cert_chain(pki.path(f"{cert}.crt"), pki.path(f"{cert}.key"))
    return context


def get(pki: KubeletPki, path: str, cert: str | None = "client") -> tuple[int, str]:
    try:
        with urllib.request.urlopen(
            f"{BASE}{path}", context=_node_context(pki, cert), timeout=5
        ) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_the_node_answers_the_api_servers_certificate(running: Cluster, pki: KubeletPki) -> None:
    running.create("direct", python("main", COUNTS))
    running.running("direct")
    running.wait_pod(
        "direct",
        "logged",
        lambda _: get(pki, f"/containerLogs/{NS}/direct/main?tailLines=1")[1] == "line 4\n",
    )
    assert get(pki, f"/containerLogs/{NS}/direct/main?tailLines=1") == (200, "line 4\n")


def raw_exchange(pki: KubeletPki, cert: str | None, version: ssl.TLSVersion) -> bytes:
    """A request on a bare TLS connection of `version` at most: the first bytes answered
    (b"" if the node closed the connection; ssl.SSLError if the handshake failed)."""
    context = _node_context(pki, cert)
    context.maximum_version = version
    with (
        socket.create_connection((str(GATEWAY), 10250), 5) as raw,
        context.wrap_socket(raw, server_hostname=str(GATEWAY)) as tls,
    ):
        tls.sendall(b"GET /containerLogs/agentcube/any/main HTTP/1.1\r\nHost: node\r\n\r\n")
        return tls.recv(100)


@pytest.mark.parametrize("cert", [None, "foreign"], ids=["no certificate", "a foreign CA's"])
def test_a_client_without_a_certificate_of_the_client_ca_is_refused_at_the_handshake(
    running: Cluster, pki: KubeletPki, cert: str | None
) -> None:
    """TLS 1.2 fails the handshake itself; TLS 1.3 lets the client finish first, then the
    node closes the connection unanswered. The API server's certificate gets an answer."""
    with pytest.raises(ssl.SSLError):
        raw_exchange(pki, cert, ssl.TLSVersion.TLSv1_2)
    assert raw_exchange(pki, cert, ssl.TLSVersion.TLSv1_3) == b""
    for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
        assert raw_exchange(pki, "client", version).startswith(b"HTTP/1.1 404 ")


@pytest.mark.parametrize(
    ("path", "answer"),
    [
        (f"/containerLogs/{NS}/nope/main", (404, 'pod "nope" does not exist')),
        (f"/containerLogs/{NS}/known/other", (404, 'container "other" not found in pod "known"')),
        (
            f"/containerLogs/{NS}/known/main?tailLines=x",
            (400, '{"message": "Unable to decode query."}'),
        ),
        (f"/containerLogs/{NS}/known/main?tailLines=-1", (422, '{"message": "Invalid request."}')),
        (f"/exec/{NS}/known/main?command=ls", (405, "Debug endpoints are disabled.\n")),
        (f"/portForward/{NS}/known", (405, "Debug endpoints are disabled.\n")),
        ("/pods", (404, "404 page not found\n")),
    ],
    ids=[
        "unknown pod",
        "unknown container",
        "undecodable",
        "invalid",
        "exec",
        "port-forward",
        "other",
    ],
)
def test_what_the_node_does_not_serve_is_answered_as_a_kubelet_answers_it(
    running: Cluster, pki: KubeletPki, path: str, answer: tuple[int, str]
) -> None:
    running.create("known", python("main", COUNTS))
    running.running("known")
    assert get(pki, path) == answer


def _read_through(
    tmp_path: Path, runtime: PodRuntime, fake: FakeKubernetes, kubelet_api: KubeletTls | None
) -> tuple[int, str]:
    with cluster(tmp_path, runtime, fake=fake, kubelet_api=kubelet_api) as started:
        started.create("quiet", python("main", COUNTS))
        started.running("quiet")
        api = client.CoreV1Api(config.new_client_from_config(config_file=str(started.kubeconfig)))
        try:
            with pytest.raises(ApiException) as refused:
                api.read_namespaced_pod_log("quiet", NS)
        finally:
            api.api_client.close()
    return refusal(refused)


def test_a_node_without_its_kubelet_api_is_an_api_server_error(
    tmp_path: Path, runtime: PodRuntime, pki: KubeletPki
) -> None:
    fake = FakeKubernetes(kubelet_client=pki.api_server, kubelet_address_types=("InternalIP",))
    assert _read_through(tmp_path, runtime, fake, None) == (
        500,
        f'Get "{BASE}/containerLogs/{NS}/quiet/main?": '
        f"dial tcp {GATEWAY}:10250: connect: connection refused",
    )


def test_a_kubelet_certificate_of_another_ca_is_not_trusted(
    tmp_path: Path, runtime: PodRuntime, pki: KubeletPki
) -> None:
    distrusting = KubeletClient(
        pki.path("client.crt"), pki.path("client.key"), pki.path("foreign.crt")
    )
    fake = FakeKubernetes(kubelet_client=distrusting, kubelet_address_types=("InternalIP",))
    status, message = _read_through(tmp_path, runtime, fake, pki.tls)
    assert status == 500
    assert message.startswith(f'Get "{BASE}/containerLogs/{NS}/quiet/main?": ')
    assert "certificate verify failed" in message


def test_the_launchers_certificates_serve_the_node_and_call_it(
    tmp_path: Path, runtime: PodRuntime
) -> None:
    """The files the launcher gives kube-apiserver (--kubelet-client-*) and the node
    (--tls-*, --client-ca-file), used by the stand-in and the node as those flags use them."""
    (tmp_path / "cluster-pki").mkdir()
    made = make_pki(tmp_path / "cluster-pki")
    caller = KubeletClient(made.kubelet_client_cert, made.kubelet_client_key, made.ca_cert)
    fake = FakeKubernetes(kubelet_client=caller, kubelet_address_types=("InternalIP",))
    serving = KubeletTls(made.kubelet_cert, made.kubelet_key, made.ca_cert)
    with cluster(tmp_path, runtime, fake=fake, kubelet_api=serving) as started:
        started.create("launched", python("main", COUNTS))
        started.running("launched")
        api = client.CoreV1Api(config.new_client_from_config(config_file=str(started.kubeconfig)))
        try:
            started.wait_pod(
                "launched",
                "logged",
                lambda _: api.read_namespaced_pod_log("launched", NS, tail_lines=1) == "line 4\n",
            )
        finally:
            api.api_client.close()


def test_a_follower_that_leaves_ends_its_stream_quietly(
    running: Cluster, pki: KubeletPki, caplog: pytest.LogCaptureFixture
) -> None:
    ticks = "import time\nwhile True:\n    print('tick', flush=True)\n    time.sleep(0.05)\n"
    running.create("ticking", python("main", ticks))
    running.running("ticking")
    url = f"{BASE}/containerLogs/{NS}/ticking/main?follow=true"
    with urllib.request.urlopen(url, context=_node_context(pki, "client"), timeout=5) as answer:
        assert answer.read(5) == b"tick\n"
    time.sleep(0.5)  # ticks written meanwhile: the stream's next write finds the caller gone
    assert get(pki, f"/containerLogs/{NS}/ticking/main?tailLines=1") == (200, "tick\n")
    assert [r.getMessage() for r in caplog.records if r.name == "aiohttp.server"] == []
