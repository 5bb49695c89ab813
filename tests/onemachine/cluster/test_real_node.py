"""The real node's wiring without the user's Kubernetes builds: which node the launcher
chooses, what it says when the real node cannot run, the kubelet's configuration and the
kubelet's and kube-scheduler's command lines (the flags and fields the v1.36 kubelet and
scheduler read: pkg/kubelet/apis/config, cmd/kube-scheduler/app/options)."""

from __future__ import annotations

import stat
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from onemachine.cluster import part_pods, parts, real_node
from onemachine.cluster.binaries import (
    BINARIES,
    REAL_NODE_BINARIES,
    SERVICE_NETWORK_BINARIES,
    MissingBinaries,
    choose_node,
    locate,
)
from onemachine.cluster.layout import NODE_NAME, StateDir
from onemachine.cluster.part_pods import ROUTER_IMAGE, WORKLOAD_MANAGER_IMAGE
from onemachine.cluster.pki import Pki

SOCKET = "unix:///state/containerd/containerd.sock"


def _program(directory: Path, name: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    program = directory / name
    program.write_text("#!/bin/sh\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    return program


@pytest.fixture
def real_bin_dir(tmp_path: Path) -> Path:
    """A bin-dir with every program of the cluster and the real node, containerd among them."""
    bin_dir = tmp_path / "bin"
    for binary in (*BINARIES, *REAL_NODE_BINARIES):
        _program(bin_dir, binary.name)
    _program(bin_dir, "containerd")
    return bin_dir


def _path_with_redis(tmp_path: Path) -> str:
    return str(_program(tmp_path / "path", "redis-server").parent)


def test_auto_chooses_the_real_node_where_its_programs_are_found_as_root(
    real_bin_dir: Path, tmp_path: Path
) -> None:
    choice = choose_node("auto", real_bin_dir, path=str(tmp_path / "empty"), is_root=True)
    assert choice.real, choice


def test_auto_falls_back_to_the_process_node_naming_what_is_missing(
    real_bin_dir: Path, tmp_path: Path
) -> None:
    (real_bin_dir / "kube-scheduler").unlink()
    (real_bin_dir / "containerd").unlink()
    choice = choose_node("auto", real_bin_dir, path=str(tmp_path / "empty"), is_root=True)
    assert not choice.real
    assert "kube-scheduler" in choice.why and "containerd" in choice.why, choice.why
    assert "kubelet" not in choice.why.replace("kube-scheduler", ""), choice.why


def test_auto_falls_back_to_the_process_node_without_root(real_bin_dir: Path) -> None:
    choice = choose_node("auto", real_bin_dir, is_root=False)
    assert not choice.real
    assert "root" in choice.why, choice.why


def test_containerd_is_taken_from_path_when_the_bin_dir_has_none(
    real_bin_dir: Path, tmp_path: Path
) -> None:
    (real_bin_dir / "containerd").unlink()
    on_path = _program(tmp_path / "path", "containerd")
    assert choose_node("auto", real_bin_dir, path=str(on_path.parent), is_root=True).real
    path = f"{on_path.parent}:{_path_with_redis(tmp_path)}"
    found = locate(real_bin_dir, path=path, real_node=True)
    assert found["containerd"] == on_path


def test_process_is_chosen_when_asked_even_where_the_real_node_could_run(
    real_bin_dir: Path,
) -> None:
    assert not choose_node("process", real_bin_dir, is_root=True).real


def test_real_names_each_missing_program_with_where_it_comes_from(
    real_bin_dir: Path, tmp_path: Path
) -> None:
    (real_bin_dir / "kubelet").unlink()
    (real_bin_dir / "containerd").unlink()
    with pytest.raises(MissingBinaries) as refused:
        choose_node("real", real_bin_dir, path=str(tmp_path / "empty"), is_root=True)
    message = str(refused.value)
    assert "nothing was started" in message
    assert f"{real_bin_dir / 'kubelet'}: `make WHAT=cmd/kubelet`" in message, message
    assert "apt-get install containerd runc containernetworking-plugins" in message, message
    assert "kube-scheduler" not in message, message


def test_real_without_root_says_so_and_names_the_process_node(real_bin_dir: Path) -> None:
    with pytest.raises(MissingBinaries) as refused:
        choose_node("real", real_bin_dir, is_root=False)
    assert "run as root, or give --node process" in str(refused.value)


def test_locate_for_the_real_node_adds_its_programs_to_the_clusters(
    real_bin_dir: Path, tmp_path: Path
) -> None:
    found = locate(real_bin_dir, path=_path_with_redis(tmp_path), real_node=True)
    assert {"kubelet", "kube-scheduler", "containerd", "kube-apiserver"} <= set(found)
    (real_bin_dir / "kubelet").unlink()
    assert "kubelet" not in locate(real_bin_dir, path=_path_with_redis(tmp_path))
    with pytest.raises(MissingBinaries, match="kubelet"):
        locate(real_bin_dir, path=_path_with_redis(tmp_path), real_node=True)


STATE = StateDir(Path("/state"))
CLUSTER = parts.Cluster(
    binaries={b.name: Path("/opt/bin") / b.name for b in (*BINARIES, *REAL_NODE_BINARIES)},
    state=STATE,
    pki=Pki(STATE.pki),
    real_node=True,
)


def test_locate_takes_the_services_network_where_found_and_runs_without_it(
    real_bin_dir: Path, tmp_path: Path
) -> None:
    found = locate(real_bin_dir, path=_path_with_redis(tmp_path), real_node=True)
    assert not {"kube-proxy", "coredns"} & set(found)
    for binary in SERVICE_NETWORK_BINARIES:
        _program(real_bin_dir, binary.name)
    found = locate(real_bin_dir, path=_path_with_redis(tmp_path), real_node=True)
    assert {"kube-proxy", "coredns"} <= set(found)
    assert "coredns" not in locate(real_bin_dir, path=_path_with_redis(tmp_path))


WITH_SERVICES = replace(
    CLUSTER,
    binaries=CLUSTER.binaries
    | {b.name: Path("/opt/bin") / b.name for b in SERVICE_NETWORK_BINARIES},
)


def test_without_coredns_the_pods_get_no_cluster_dns_and_no_service_network_starts() -> None:
    assert "clusterDNS" not in real_node.kubelet_configuration(CLUSTER, SOCKET, "/pods")
    assert real_node.service_network(CLUSTER) == []


def test_with_coredns_the_pods_ask_it_at_the_nodes_address(tmp_path: Path) -> None:
    config = real_node.kubelet_configuration(WITH_SERVICES, SOCKET, "/pods")
    assert (config["clusterDNS"], config["clusterDomain"]) == (["198.18.0.1"], "cluster.local")
    state = StateDir(tmp_path / "state")
    state.root.mkdir(parents=True)
    cluster = replace(WITH_SERVICES, state=state)
    assert [part.name for part in real_node.service_network(cluster)] == ["kube-proxy", "coredns"]
    corefile = (state.root / "Corefile").read_text()
    assert "bind 198.18.0.1" in corefile
    assert f"kubeconfig {state.kubeconfig('admin')} localcube" in corefile
    assert "forward" not in corefile, "no name server outside the namespace is asked"


def test_kube_proxy_runs_as_the_bootstrap_policys_user_leaving_conntrack_alone() -> None:
    part = real_node.kube_proxy(WITH_SERVICES)
    given = _flags(part)
    assert part.argv[0] == "/opt/bin/kube-proxy"
    assert given["kubeconfig"] == "/state/kubeconfigs/kube-proxy.yaml"
    assert given["proxy-mode"] == "iptables"
    assert given["nodeport-addresses"] == "198.18.0.1/32"
    assert given["healthz-bind-address"].startswith("127.0.0.1:")
    assert given["conntrack-max-per-core"] == "0"
    assert given["conntrack-tcp-timeout-established"] == "0"


def test_the_kubelet_configuration_is_what_this_kind_of_machine_needs() -> None:
    config = real_node.kubelet_configuration(CLUSTER, SOCKET, "/onemachine-x/pods")
    assert config["kind"] == "KubeletConfiguration"
    assert config["apiVersion"] == "kubelet.config.k8s.io/v1beta1"
    assert config["failCgroupV1"] is False  # 1.35+ refuses cgroup v1 otherwise
    assert config["cgroupDriver"] == "cgroupfs"
    assert config["cgroupRoot"] == "/onemachine-x/pods"
    assert config["failSwapOn"] is False
    assert config["protectKernelDefaults"] is False
    assert config["containerRuntimeEndpoint"] == config["imageServiceEndpoint"] == SOCKET
    assert config["oomScoreAdj"] == 0
    # no registry: imported images must never be collected
    assert (config["imageGCHighThresholdPercent"], config["imageGCLowThresholdPercent"]) == (
        100,
        99,
    )


def test_the_kubelet_listens_on_the_pod_bridge_only_and_trusts_the_cluster_ca() -> None:
    config = real_node.kubelet_configuration(CLUSTER, SOCKET, "/onemachine-x/pods")
    assert config["address"] == "198.18.0.1"
    assert config["readOnlyPort"] == 0
    assert config["healthzBindAddress"] == "127.0.0.1"
    assert config["tlsCertFile"] == "/state/pki/kubelet.crt"
    assert config["tlsPrivateKeyFile"] == "/state/pki/kubelet.key"
    assert config["authentication"] == {
        "anonymous": {"enabled": False},
        "webhook": {"enabled": True},
        "x509": {"clientCAFile": "/state/pki/ca.crt"},
    }
    assert config["authorization"] == {"mode": "Webhook"}


def test_the_kubelet_files_are_written_in_the_state_dir(tmp_path: Path) -> None:
    state = StateDir(tmp_path / "state")
    cluster = parts.Cluster(CLUSTER.binaries, state, Pki(state.pki), real_node=True)
    node = real_node.write_kubelet_files(cluster, SOCKET, "/onemachine-x/pods")
    written = yaml.safe_load(node.config.read_text())
    assert written == real_node.kubelet_configuration(cluster, SOCKET, "/onemachine-x/pods")
    assert written["podLogsDir"] == str(node.pod_logs) and node.pod_logs.is_dir()
    assert written["resolvConf"] == str(node.resolv_conf)
    assert "nameserver" not in node.resolv_conf.read_text()
    overrides = dict(
        (str(target), source.read_text()) for source, target in real_node.sysctl_overrides(node)
    )
    assert overrides == {
        "/proc/sys/vm/overcommit_memory": "1\n",
        "/proc/sys/kernel/panic": "10\n",
        "/proc/sys/kernel/panic_on_oops": "1\n",
    }


def _flags(part: parts.Part) -> dict[str, str]:
    return dict(a.removeprefix("--").split("=", 1) for a in part.argv if a.startswith("--"))


def test_the_kubelet_is_the_node_at_the_bridge_address_ready_when_its_node_is() -> None:
    part = real_node.kubelet(CLUSTER)
    assert part.argv[0] == "/opt/bin/kubelet"
    given = _flags(part)
    assert given["config"] == "/state/kubelet/config.yaml"
    assert given["kubeconfig"] == "/state/kubeconfigs/kubelet.yaml"
    assert given["hostname-override"] == NODE_NAME
    assert given["node-ip"] == "198.18.0.1"
    assert given["root-dir"] == "/state/kubelet/root"
    assert str(part.ready).startswith(f"GET https://127.0.0.1:6443/api/v1/nodes/{NODE_NAME}")


def test_the_scheduler_runs_on_loopback_as_the_bootstrap_policys_user() -> None:
    part = real_node.scheduler(CLUSTER)
    given = _flags(part)
    assert part.argv[0] == "/opt/bin/kube-scheduler"
    assert given["kubeconfig"] == "/state/kubeconfigs/kube-scheduler.yaml"
    assert given["bind-address"] == "127.0.0.1"
    assert given["leader-elect"] == "false"


def test_the_control_plane_authorizes_a_real_kubelet_as_its_node() -> None:
    assert _flags(parts.api_server(CLUSTER))["authorization-mode"] == "Node,RBAC"
    # node lifecycle lifts the not-ready taint the API server puts on a new Node
    assert _flags(parts.controller_manager(CLUSTER))["controllers"] == "*,-nodeipam"


def test_the_parts_pods_are_the_charts_deployments_on_the_host_network() -> None:
    for deployment, name, image, port in (
        (part_pods.workload_manager(CLUSTER), "workloadmanager", WORKLOAD_MANAGER_IMAGE, 8090),
        (part_pods.router(CLUSTER), "agentcube-router", ROUTER_IMAGE, 8080),
    ):
        spec = deployment["spec"]["template"]["spec"]
        container = spec["containers"][0]
        assert deployment["metadata"] == {
            "name": name,
            "namespace": "agentcube",
            "labels": {"app": name},
        }
        assert spec["serviceAccountName"] == name
        assert spec["hostNetwork"] is True
        assert deployment["spec"]["strategy"] == {"type": "Recreate"}
        assert container["image"] == image
        assert container["imagePullPolicy"] == "IfNotPresent"
        assert f"--port={port}" in container["args"]
        assert container["readinessProbe"]["httpGet"]["port"] == port
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert env["REDIS_ADDR"] == "127.0.0.1:6379"
        assert (env["KUBERNETES_SERVICE_HOST"], env["KUBERNETES_SERVICE_PORT"]) == (
            "127.0.0.1",
            "6443",
        )
        assert "AGENTCUBE_NAMESPACE" in env
        service = part_pods.service(name, port)
        assert service["spec"]["selector"] == {"app": name}
        assert service["spec"]["ports"] == [
            {"name": "http", "port": 8080, "targetPort": port, "protocol": "TCP"}
        ]


def test_the_router_pod_gets_the_processs_flags_and_reaches_the_workload_manager() -> None:
    container = part_pods.router(CLUSTER)["spec"]["template"]["spec"]["containers"][0]
    assert "--max-concurrent-requests=20" in container["args"]
    assert "--jwt-audience=agentcube-api" in container["args"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["WORKLOAD_MANAGER_URL"] == "http://127.0.0.1:8090"
    without_oidc = replace(CLUSTER, router_oidc=False)
    args = part_pods.router(without_oidc)["spec"]["template"]["spec"]["containers"][0]["args"]
    assert not [a for a in args if a.startswith("--jwt-")]


def test_the_images_of_the_parts_pods_come_from_the_checkouts_dockerfiles() -> None:
    # values.yaml's repositories and tag, the Dockerfiles' final stages, the user's builds
    assert part_pods.PART_IMAGES == (
        ("docker/Dockerfile", "workloadmanager", WORKLOAD_MANAGER_IMAGE),
        ("docker/Dockerfile.router", "agentcube-router", ROUTER_IMAGE),
    )
    assert WORKLOAD_MANAGER_IMAGE == "ghcr.io/volcano-sh/workloadmanager:latest"
    assert ROUTER_IMAGE == "ghcr.io/volcano-sh/agentcube-router:latest"
