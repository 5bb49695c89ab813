"""The real node's parts: the user's kubelet and kube-scheduler, beside containerd
(onemachine/containers), in the cluster's private namespaces.

The kubelet's configuration is what a kubelet needs on this kind of machine without
touching it (docs/one-machine-cluster.md, "The real node"): cgroup v1 allowed, the
cgroupfs driver under a cgroup root of the cluster's own, no swap check, the kernel's
settings left alone (three /proc/sys files it would rewrite are bind-mounted over in the
node's mount namespace: `sysctl_overrides`), no registry to pull an image back from (image
garbage collection off), a serving certificate from the cluster's CA, and the API server
authenticated by that CA and authorized by a SubjectAccessReview, as kubeadm sets it up.

Where the bin-dir holds kube-proxy and CoreDNS (binaries.SERVICE_NETWORK_BINARIES), the
pods reach Services as on any cluster: kube-proxy (iptables mode) gives ClusterIPs in the
private namespace, CoreDNS answers `cluster.local` names at the node's address (the
kubelet's clusterDNS) and nothing else (no upstream name server: nothing leaves the namespace).
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from onemachine.cluster.layout import LOOPBACK, NODE_ADDRESS, NODE_NAME, SERVICE_CIDR, StateDir
from onemachine.cluster.part_pods import PART_IMAGES
from onemachine.cluster.parts import Cluster, Part
from onemachine.cluster.readiness import HttpProbe, node_is_ready
from onemachine.cluster.supervisor import Supervisor
from onemachine.containers import cni
from onemachine.containers.containerd import ContainerdFailed
from onemachine.containers.image_builds import (
    ImageBuildFailed,
    dockerfile_image,
    pause_image,
    picod_image,
    python_image,
)
from onemachine.containers.image_cache import ImageCache
from onemachine.containers.runtime import PAUSE_IMAGE, ContainerRuntime, RuntimeSettings

KUBELET_PORT = 10250  # the kubelet API, where the API server reaches logs, exec, port-forward
KUBELET_HEALTHZ_PORT = 10248
SCHEDULER_PORT = 10259
KUBE_PROXY_HEALTHZ_PORT = 10256
KUBE_PROXY_METRICS_PORT = 10249
DNS_READY_PORT = 8181
CLUSTER_DOMAIN = "cluster.local"

# What the kubelet writes to these /proc/sys files at start unless they already hold it
# (pkg/kubelet/cm/container_manager_linux.go, setupKernelTunables): the node's mount
# namespace shows it files holding these values, so the machine's settings stay as they are.
KERNEL_TUNABLES: Mapping[str, str] = {
    "vm/overcommit_memory": "1",
    "kernel/panic": "10",
    "kernel/panic_on_oops": "1",
}


def kubelet_configuration(
    cluster: Cluster, runtime_endpoint: str, cgroup_root: str
) -> dict[str, Any]:
    """The KubeletConfiguration (kubelet.config.k8s.io/v1beta1) of the cluster's node: the
    pods' cgroups under `cgroup_root` (the runtime's own root in every hierarchy, emptied
    and removed at the stop), the runtime at `runtime_endpoint`."""
    pki, node = cluster.pki, NodeFiles(cluster.state)
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        # v1.35+ refuses cgroup v1 unless told; this kind of machine mounts v1 hierarchies.
        "failCgroupV1": False,
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": cgroup_root,
        "failSwapOn": False,
        "protectKernelDefaults": False,
        "containerRuntimeEndpoint": runtime_endpoint,
        "imageServiceEndpoint": runtime_endpoint,
        # Only the pod bridge's address of the private namespace, never the machine's.
        "address": NODE_ADDRESS,
        "port": KUBELET_PORT,
        "readOnlyPort": 0,
        "healthzBindAddress": LOOPBACK,
        "healthzPort": KUBELET_HEALTHZ_PORT,
        "tlsCertFile": str(pki.kubelet_cert),
        "tlsPrivateKeyFile": str(pki.kubelet_key),
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(pki.ca_cert)},
        },
        "authorization": {"mode": "Webhook"},
        "podLogsDir": str(node.pod_logs),
        "resolvConf": str(node.resolv_conf),
        "clusterDomain": CLUSTER_DOMAIN,
        **({"clusterDNS": [NODE_ADDRESS]} if "coredns" in cluster.binaries else {}),
        # No registry: an image imported here could never be pulled back.
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        # A shared machine's disk is not the node's to defend; memory as kubeadm's default.
        "evictionHard": {
            "memory.available": "100Mi",
            "nodefs.available": "1%",
            "nodefs.inodesFree": "1%",
            "imagefs.available": "1%",
        },
        # Root here lacks CAP_SYS_RESOURCE: a negative score adjustment is refused.
        "oomScoreAdj": 0,
        "enforceNodeAllocatable": ["pods"],
        "serializeImagePulls": False,
        "staticPodPath": "",
        "nodeStatusReportFrequency": "10s",
        "shutdownGracePeriod": "0s",
    }


class NodeFailed(Exception):
    """The container runtime or the node's mounts could not be set up; the message says
    what refused."""


# The agents' base images the manifests name: the suite's echo agent
# (fixtures/runtimes/echo-agent.yaml) and upstream's e2e echo agent
# (test/e2e/echo_agent.yaml: python:3.9-slim); both Debian's Python (image_builds.py).
PYTHON_IMAGES = ("docker.io/library/python:3.12-slim", "docker.io/library/python:3.9-slim")


def make_images(
    cluster: Cluster,
    agentcube_src: Path,
    dockerfiles: Sequence[tuple[str, str]] = (),
    cache: ImageCache | None = None,
) -> list[Path]:
    """The docker-archives of every image the cluster's pods name: the pause image, the
    agents' Python images, PicoD's, the WorkloadManager's and the Router's, each from the
    checkout's Dockerfile and the user's build, and each (name, Dockerfile) of
    `dockerfiles` (the e2e's MCP server) from the checkout alone.
    Made before the launcher leaves the machine's network (debootstrap reaches Debian's
    archive the first time), then cached; NodeFailed naming the image that failed."""
    cache = cache or ImageCache()
    try:
        return [
            pause_image(cache, PAUSE_IMAGE),
            *(python_image(cache, name) for name in PYTHON_IMAGES),
            picod_image(cache, agentcube_src, cluster.binaries["picod"]),
            *(
                dockerfile_image(
                    cache,
                    agentcube_src / dockerfile,
                    name,
                    {built: cluster.binaries[built]},
                    agentcube_src,
                )
                for dockerfile, built, name in PART_IMAGES
            ),
            *(
                dockerfile_image(cache, agentcube_src / dockerfile, name, {}, agentcube_src)
                for name, dockerfile in dockerfiles
            ),
        ]
    except (ImageBuildFailed, ValueError, OSError) as error:
        raise NodeFailed(f"the node's images: {error}") from error


def start(
    cluster: Cluster,
    supervisor: Supervisor,
    stack: ExitStack,
    timeout: float,
    images: Sequence[Path],
) -> None:
    """containerd in the cluster's network namespace (a mount namespace of the runtime's
    own), the pod bridge at the node's address, the `images` imported, then the kubelet in
    the runtime's namespaces, waited for until its Node is Ready. `stack` stops the runtime
    (every container, mount, cgroup and the bridge); the launcher closes it first."""
    containerd = cluster.binaries["containerd"]
    try:
        runtime = ContainerRuntime.start(
            RuntimeSettings(cluster.state.root, bin_dir=containerd.parent, network="inherit")
        )
    except (RuntimeError, OSError) as error:  # NamespaceFailed, ContainerdFailed, a program
        raise NodeFailed(f"the container runtime did not start: {error}") from error
    stack.callback(runtime.stop)
    try:
        for archive in images:
            runtime.containerd.import_archive(archive)
    except ContainerdFailed as error:
        raise NodeFailed(str(error)) from error
    node = write_kubelet_files(cluster, runtime.endpoint, runtime.pods_cgroup)
    # The kubelet checks that its node address is on an interface before any pod made the
    # bridge; the CNI bridge plugin takes a bridge that already has its gateway address.
    gateway = f"{cni.gateway(cni.POD_SUBNET)}/{cni.POD_SUBNET.prefixlen}"
    for command in (
        ["ip", "link", "add", cni.BRIDGE, "type", "bridge"],
        ["ip", "addr", "add", gateway, "dev", cni.BRIDGE],
        ["ip", "link", "set", cni.BRIDGE, "up"],
        # The namespace has no default route: without this one, the launcher's own
        # connections to a ClusterIP (the e2e's Service forwards) are unreachable before
        # kube-proxy's DNAT is ever reached. A pod's go through its gateway, the bridge.
        ["ip", "route", "add", SERVICE_CIDR, "dev", cni.BRIDGE, "src", NODE_ADDRESS],
        *(["mount", "--bind", str(source), str(target)] for source, target in _mounts(node)),
    ):
        _inside(runtime, command)
    part = kubelet(cluster)
    supervisor.start_ready(replace(part, argv=tuple(runtime.command(part.argv))), timeout)


def _mounts(node: NodeFiles) -> list[tuple[Path, Path]]:
    """The sysctl files, and a /var/log of the node's own (the kubelet links each
    container's log into /var/log/containers, a path no setting changes)."""
    node.var_log.mkdir(mode=0o755, exist_ok=True)
    return [*sysctl_overrides(node), (node.var_log, Path("/var/log"))]


def _inside(runtime: ContainerRuntime, argv: Sequence[str]) -> None:
    result = subprocess.run(runtime.command(argv), capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise NodeFailed(f"{' '.join(argv)} in the node's namespace: {result.stderr.strip()}")


class NodeFiles:
    """The kubelet's files in the state directory."""

    def __init__(self, state: StateDir) -> None:
        self.root = state.root / "kubelet"

    @property
    def config(self) -> Path:
        return self.root / "config.yaml"

    @property
    def root_dir(self) -> Path:
        """The kubelet's --root-dir (pods' volumes, plugins, its checkpoint)."""
        return self.root / "root"

    @property
    def pod_logs(self) -> Path:
        return self.root / "pod-logs"

    @property
    def resolv_conf(self) -> Path:
        return self.root / "resolv.conf"

    @property
    def var_log(self) -> Path:
        """/var/log in the node's mount namespace."""
        return self.root / "var-log"

    @property
    def sysctls(self) -> Path:
        """One file per KERNEL_TUNABLES entry, bind-mounted over /proc/sys in the namespace."""
        return self.root / "sysctl"


# The node's own name servers: none. A pod's lookups of names outside the cluster fail at
# once (nothing outside the namespace is asked); with CoreDNS (clusterDNS) the kubelet puts
# it first in the pods' resolv.conf, for the cluster's names.
RESOLV_CONF = "# onemachine: no cluster DNS and no name server\noptions timeout:1 attempts:1\n"


def write_kubelet_files(cluster: Cluster, runtime_endpoint: str, cgroup_root: str) -> NodeFiles:
    """The configuration, the resolv.conf the pods get, and the sysctl files."""
    node = NodeFiles(cluster.state)
    for directory in (node.root, node.root_dir, node.pod_logs, node.sysctls):
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    config = kubelet_configuration(cluster, runtime_endpoint, cgroup_root)
    node.config.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    node.resolv_conf.write_text(RESOLV_CONF, encoding="utf-8")
    for name, value in KERNEL_TUNABLES.items():
        (node.sysctls / name.replace("/", ".")).write_text(value + "\n", encoding="ascii")
    return node


def sysctl_overrides(node: NodeFiles) -> list[tuple[Path, Path]]:
    """(file, /proc/sys target) pairs to bind-mount in the node's mount namespace."""
    return [
        (node.sysctls / name.replace("/", "."), Path("/proc/sys") / name)
        for name in KERNEL_TUNABLES
    ]


def kubelet(cluster: Cluster) -> Part:
    """The user's kubelet, as the node `onemachine-node` at the pod bridge's address,
    authenticating as that node (group system:nodes; the API server's Node authorizer and
    NodeRestriction hold it to its own pods), ready when its Node is Ready."""
    node = NodeFiles(cluster.state)
    return Part(
        "kubelet",
        (
            str(cluster.binaries["kubelet"]),
            f"--config={node.config}",
            f"--kubeconfig={cluster.kubeconfig('kubelet')}",
            f"--root-dir={node.root_dir}",
            f"--hostname-override={NODE_NAME}",
            f"--node-ip={NODE_ADDRESS}",
            "--v=1",
        ),
        HttpProbe(
            f"{cluster.ports.api_server_url}/api/v1/nodes/{NODE_NAME}",
            ca=cluster.pki.ca_cert,
            token_file=cluster.state.admin_token,
            accept=node_is_ready,
        ),
    )


def scheduler(cluster: Cluster) -> Part:
    """The user's kube-scheduler as the user the bootstrap RBAC policy names
    (system:kube-scheduler), on loopback; one replica, so no election."""
    kubeconfig = cluster.kubeconfig("kube-scheduler")
    return Part(
        "kube-scheduler",
        (
            str(cluster.binaries["kube-scheduler"]),
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            f"--bind-address={LOOPBACK}",
            f"--secure-port={SCHEDULER_PORT}",
            "--leader-elect=false",
        ),
        HttpProbe(f"https://{LOOPBACK}:{SCHEDULER_PORT}/readyz", verify=False),
    )


def service_network(cluster: Cluster) -> list[Part]:
    """kube-proxy and CoreDNS where the bin-dir holds them, to start after the kubelet (the
    pod bridge holds the node's address CoreDNS listens on)."""
    return [
        part(cluster)
        for name, part in (("kube-proxy", kube_proxy), ("coredns", cluster_dns))
        if name in cluster.binaries
    ]


def kube_proxy(cluster: Cluster) -> Part:
    """The user's kube-proxy as system:kube-proxy, in iptables mode in the private
    namespace, NodePorts on the node's address only, the machine's conntrack settings left
    alone (zero leaves each as it is)."""
    return Part(
        "kube-proxy",
        (
            str(cluster.binaries["kube-proxy"]),
            f"--kubeconfig={cluster.kubeconfig('kube-proxy')}",
            f"--hostname-override={NODE_NAME}",
            "--proxy-mode=iptables",
            f"--cluster-cidr={cni.POD_SUBNET}",
            f"--nodeport-addresses={NODE_ADDRESS}/32",
            f"--healthz-bind-address={LOOPBACK}:{KUBE_PROXY_HEALTHZ_PORT}",
            f"--metrics-bind-address={LOOPBACK}:{KUBE_PROXY_METRICS_PORT}",
            "--conntrack-max-per-core=0",
            "--conntrack-tcp-timeout-established=0",
            "--conntrack-tcp-timeout-close-wait=0",
        ),
        HttpProbe(f"http://{LOOPBACK}:{KUBE_PROXY_HEALTHZ_PORT}/healthz"),
    )


def corefile(kubeconfig: str) -> str:
    """CoreDNS's configuration: the cluster's names at the node's address, nothing
    forwarded anywhere, ready on loopback."""
    return (
        ".:53 {\n"
        f"    bind {NODE_ADDRESS}\n"
        "    errors\n"
        f"    ready {LOOPBACK}:{DNS_READY_PORT}\n"
        f"    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{\n"
        f"        kubeconfig {kubeconfig} localcube\n"
        "        pods insecure\n"
        "    }\n"
        "}\n"
    )


def cluster_dns(cluster: Cluster) -> Part:
    """CoreDNS reading Services through the admin's kubeconfig (no role of the bootstrap
    policy covers what it lists: Services, EndpointSlices, Namespaces)."""
    config = cluster.state.root / "Corefile"
    config.write_text(corefile(cluster.kubeconfig("admin")), encoding="utf-8")
    return Part(
        "coredns",
        (str(cluster.binaries["coredns"]), "-conf", str(config)),
        HttpProbe(f"http://{LOOPBACK}:{DNS_READY_PORT}/ready"),
    )
