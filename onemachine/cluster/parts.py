"""Each part's command line, environment and readiness probe.

The flags follow how each program is deployed upstream, with what a single network
namespace changes (ports, addresses, files instead of in-cluster mounts); the sources are
cited at each part.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from onemachine.cluster.layout import (
    AGENT_SANDBOX_HEALTH_PORT,
    API_SERVER_PORT,
    CONTROLLER_MANAGER_PORT,
    ETCD_CLIENT_PORT,
    ETCD_PEER_PORT,
    LOOPBACK,
    NODE_NAME,
    OIDC_ISSUER_PORT,
    REDIS_PORT,
    ROUTER_PORT,
    SERVICE_CIDR,
    SYSTEM_NAMESPACE,
    WORKLOAD_MANAGER_PORT,
    StateDir,
)
from onemachine.cluster.pki import Pki
from onemachine.cluster.readiness import HttpProbe, RedisProbe, node_is_ready

REPOSITORY = Path(__file__).resolve().parents[2]

# The Router's concurrency limit, given to the suite as max_concurrent_requests: the
# overload scenario holds that many calls at once (upstream's default is 1000,
# cmd/router/main.go:40).
ROUTER_MAX_CONCURRENT_REQUESTS = 20

# What the Router requires of a caller's token (cmd/router/main.go:50-53): upstream's
# default audience, and the role claim and required role upstream's e2e gives its chart
# (test/e2e/run_e2e.sh:460-461, Keycloak's tokens); the issuer mints to match.
JWT_AUDIENCE = "agentcube-api"
JWT_ROLE_CLAIM = "realm_access.roles"
JWT_REQUIRED_ROLE = "sandbox:invoke"
# The realm of upstream's Keycloak addon (manifests/charts/addons/keycloak/values.yaml,
# `realm`), in the issuer URL run_e2e.sh gives the Router (test/e2e/run_e2e.sh:459).
OIDC_REALM = "agentcube"

# Where the Router finds its in-cluster files (client-go rest.InClusterConfig).
SERVICE_ACCOUNT_MOUNT = "secrets/kubernetes.io/serviceaccount"


@dataclass(frozen=True)
class Ports:
    """The ports the parts listen on inside the namespace (tests use free ones)."""

    etcd_client: int = ETCD_CLIENT_PORT
    etcd_peer: int = ETCD_PEER_PORT
    api_server: int = API_SERVER_PORT
    controller_manager: int = CONTROLLER_MANAGER_PORT
    redis: int = REDIS_PORT
    agent_sandbox_health: int = AGENT_SANDBOX_HEALTH_PORT
    router: int = ROUTER_PORT
    workload_manager: int = WORKLOAD_MANAGER_PORT
    oidc_issuer: int = OIDC_ISSUER_PORT

    @property
    def api_server_url(self) -> str:
        return f"https://{LOOPBACK}:{self.api_server}"

    @property
    def oidc_issuer_url(self) -> str:
        """Exactly as the Router is given it and the issuer names itself (go-oidc compares):
        Keycloak's URL of the realm."""
        return f"http://{LOOPBACK}:{self.oidc_issuer}/realms/{OIDC_REALM}"


@dataclass(frozen=True)
class Part:
    """One program to start: its name (used in every message about it), command line,
    extra environment, and the probe that says it is ready."""

    name: str
    argv: tuple[str, ...]
    ready: Callable[[], bool]
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Cluster:
    """What every part's command line is made from."""

    binaries: Mapping[str, Path]
    state: StateDir
    pki: Pki
    ports: Ports = Ports()
    images: Sequence[str] = ()
    # The issuer's confidential clients (oidc_issuer/clients.py), for its token endpoint.
    oidc_clients: Path | None = None
    # External authentication at the Router (the chart's router.jwt.*); off, the Router as
    # the chart runs it without an issuer (upstream's own e2e without Keycloak).
    router_oidc: bool = True
    # The user's kubelet and kube-scheduler run the pods (real_node.py), not the process
    # node: the API server authorizes the kubelet as its node, and node lifecycle runs.
    real_node: bool = False

    def kubeconfig(self, user: str) -> str:
        return str(self.state.kubeconfig(user))


def etcd(cluster: Cluster) -> Part:
    client = f"http://{LOOPBACK}:{cluster.ports.etcd_client}"
    peer = f"http://{LOOPBACK}:{cluster.ports.etcd_peer}"
    return Part(
        "etcd",
        (
            str(cluster.binaries["etcd"]),
            "--name=localcube",
            f"--data-dir={cluster.state.etcd_data}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=localcube={peer}",
        ),
        HttpProbe(f"{client}/health"),
    )


def api_server(cluster: Cluster) -> Part:
    """kube-apiserver: secure port only, static tokens, RBAC, service-account keys."""
    pki = cluster.pki
    return Part(
        "kube-apiserver",
        (
            str(cluster.binaries["kube-apiserver"]),
            f"--etcd-servers=http://{LOOPBACK}:{cluster.ports.etcd_client}",
            f"--bind-address={LOOPBACK}",
            f"--advertise-address={LOOPBACK}",
            # The `kubernetes` Service may not have a loopback endpoint, and nothing here
            # reaches the API server through it (the Router is given 127.0.0.1).
            "--endpoint-reconciler-type=none",
            # The node's address, not its name: no name server is reachable from the
            # namespace, so a lookup of `onemachine-node` (for logs) would only wait to fail.
            "--kubelet-preferred-address-types=InternalIP",
            f"--kubelet-client-certificate={pki.kubelet_client_cert}",
            f"--kubelet-client-key={pki.kubelet_client_key}",
            f"--kubelet-certificate-authority={pki.ca_cert}",
            f"--secure-port={cluster.ports.api_server}",
            f"--tls-cert-file={pki.serving_cert}",
            f"--tls-private-key-file={pki.serving_key}",
            f"--client-ca-file={pki.ca_cert}",
            f"--token-auth-file={cluster.state.token_file}",
            # A real kubelet is held to its own node's objects, as kubeadm sets it up.
            f"--authorization-mode={'Node,RBAC' if cluster.real_node else 'RBAC'}",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={pki.service_account_public_key}",
            f"--service-account-signing-key-file={pki.service_account_key}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--allow-privileged=true",
            "--enable-priority-and-fairness=false",
            f"--cert-dir={cluster.state.pki}",
            "--profiling=false",
        ),
        HttpProbe(f"{cluster.ports.api_server_url}/readyz", ca=pki.ca_cert),
    )


def controller_manager(cluster: Cluster) -> Part:
    """kube-controller-manager without node-ipam (the CNI plugin's host-local range gives
    pod addresses) and, with the process node, without node-lifecycle (that node reports
    to it not as a kubelet does and binds its own pods; a real node needs it to lift the
    not-ready taint the API server puts on a new Node), signing service-account tokens."""
    controllers = "*,-nodeipam" if cluster.real_node else "*,-nodelifecycle,-nodeipam"
    kubeconfig = cluster.kubeconfig("kube-controller-manager")
    return Part(
        "kube-controller-manager",
        (
            str(cluster.binaries["kube-controller-manager"]),
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            f"--bind-address={LOOPBACK}",
            f"--secure-port={cluster.ports.controller_manager}",
            f"--controllers={controllers}",
            "--use-service-account-credentials=true",
            f"--service-account-private-key-file={cluster.pki.service_account_key}",
            f"--root-ca-file={cluster.pki.ca_cert}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--leader-elect=false",
            f"--cert-dir={cluster.state.controller_manager_certs}",
        ),
        HttpProbe(f"https://{LOOPBACK}:{cluster.ports.controller_manager}/healthz", verify=False),
    )


def redis(cluster: Cluster) -> Part:
    """The Router's and WorkloadManager's store, without a password (as upstream's Kind
    setup: REDIS_PASSWORD_REQUIRED=false, test/e2e/run_e2e.sh:377-378)."""
    return Part(
        "redis",
        (
            str(cluster.binaries["redis-server"]),
            "--bind",
            LOOPBACK,
            "--port",
            str(cluster.ports.redis),
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(cluster.state.redis_data),
        ),
        RedisProbe(LOOPBACK, cluster.ports.redis),
    )


def agent_sandbox(cluster: Cluster) -> Part:
    """The agent-sandbox controller with its extensions, as its release deploys it
    (k8s/extensions.controller.yaml: --leader-elect=true --extensions; one replica here,
    so no election), metrics off, health probes on loopback (its main.go:71-72)."""
    return Part(
        "agent-sandbox-controller",
        (
            str(cluster.binaries["agent-sandbox-controller"]),
            "--extensions",
            "--leader-elect=false",
            "--metrics-bind-address=0",
            f"--health-probe-bind-address={LOOPBACK}:{cluster.ports.agent_sandbox_health}",
        ),
        HttpProbe(f"http://{LOOPBACK}:{cluster.ports.agent_sandbox_health}/readyz"),
        {"KUBECONFIG": cluster.kubeconfig("admin")},
    )


def _store_env(cluster: Cluster) -> dict[str, str]:
    """Env both AgentCube programs get from the chart (workloadmanager.yaml:58-71,
    agentcube-router.yaml:68-83) and from upstream's Kind setup (run_e2e.sh:377-378)."""
    return {
        "AGENTCUBE_NAMESPACE": SYSTEM_NAMESPACE,
        "REDIS_ADDR": f"{LOOPBACK}:{cluster.ports.redis}",
        "REDIS_PASSWORD_REQUIRED": "false",
    }


def workload_manager(cluster: Cluster) -> Part:
    """The WorkloadManager as the chart runs it (workloadmanager.yaml:79-81: --port,
    an empty --runtime-class-name), as its own service account through a kubeconfig:
    not in a pod, client-go's in-cluster config fails and it reads KUBECONFIG
    (pkg/workloadmanager/k8s_client.go:92-99, controller-runtime's GetConfig likewise)."""
    port = cluster.ports.workload_manager
    return Part(
        "workloadmanager",
        (str(cluster.binaries["workloadmanager"]), f"--port={port}", "--runtime-class-name="),
        HttpProbe(f"http://{LOOPBACK}:{port}/health"),
        {
            **_store_env(cluster),
            "JWT_KEY_SECRET_NAMESPACE": SYSTEM_NAMESPACE,
            "KUBECONFIG": cluster.kubeconfig("workloadmanager"),
        },
    )


def oidc_issuer(cluster: Cluster) -> Part:
    """The test subjects' OIDC issuer (python -m oidc_issuer), in place of the Keycloak of
    upstream's e2e (test/e2e/run_e2e.sh), as its realm: the Router reads its discovery
    document and keys at start, the suite reads its tokens from the files it writes, and
    with the cluster's clients file it grants client credentials as Keycloak's realm does
    (the file's path on its command line, never a secret)."""
    clients = ("--clients-file", str(cluster.oidc_clients)) if cluster.oidc_clients else ()
    return Part(
        "oidc-issuer",
        (
            sys.executable,
            "-m",
            "oidc_issuer",
            "--port",
            str(cluster.ports.oidc_issuer),
            "--token-dir",
            str(cluster.state.oidc_tokens),
            "--audience",
            JWT_AUDIENCE,
            "--role-claim",
            JWT_ROLE_CLAIM,
            "--required-role",
            JWT_REQUIRED_ROLE,
            "--realm",
            OIDC_REALM,
            *clients,
        ),
        HttpProbe(f"{cluster.ports.oidc_issuer_url}/.well-known/openid-configuration"),
        {"PYTHONPATH": str(REPOSITORY)},
    )


def router(cluster: Cluster) -> Part:
    """The Router as the chart runs it (agentcube-router.yaml:91-93: --port, --debug), with
    external authentication on against the issuer (cmd/router/main.go:48-53) unless
    `router_oidc` is off.

    It keeps its signing key in a Secret only through client-go's in-cluster config
    (pkg/router/jwt.go:139), which reads KUBERNETES_SERVICE_HOST/PORT and the files under
    /var/run/secrets/kubernetes.io/serviceaccount: a private mount namespace (util-linux
    `unshare --mount`) puts a tmpfs over /run (where /var/run points) and the service
    account's files in it, so the machine's /run is never touched.
    """
    run_dir = shlex.quote(os.path.realpath("/var/run"))
    mount = shlex.quote(f"{os.path.realpath('/var/run')}/{SERVICE_ACCOUNT_MOUNT}")
    script = (
        f"mount -t tmpfs tmpfs {run_dir} && mkdir -p {mount} && "
        f'mount --bind "$1" {mount} && shift && exec "$@"'
    )
    port = cluster.ports.router
    return Part(
        "agentcube-router",
        (
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "--",
            "sh",
            "-c",
            script,
            "sh",
            str(cluster.state.router_service_account),
            str(cluster.binaries["agentcube-router"]),
            f"--port={port}",
            "--debug",
            f"--max-concurrent-requests={ROUTER_MAX_CONCURRENT_REQUESTS}",
            *(router_oidc_flags(cluster) if cluster.router_oidc else ()),
        ),
        HttpProbe(f"http://{LOOPBACK}:{port}/health/ready"),
        {
            **_store_env(cluster),
            "WORKLOAD_MANAGER_URL": f"http://{LOOPBACK}:{cluster.ports.workload_manager}",
            "KUBERNETES_SERVICE_HOST": LOOPBACK,
            "KUBERNETES_SERVICE_PORT": str(cluster.ports.api_server),
        },
    )


def router_oidc_flags(cluster: Cluster) -> tuple[str, ...]:
    return (
        f"--jwt-issuer-url={cluster.ports.oidc_issuer_url}",
        f"--jwt-audience={JWT_AUDIENCE}",
        f"--jwt-role-claim={JWT_ROLE_CLAIM}",
        f"--jwt-required-role={JWT_REQUIRED_ROLE}",
    )


def node(cluster: Cluster) -> Part:
    """the process kubelet, with its Service proxy on the API server's service range; the
    user's --image entries come before the defaults (the PicoD image to their PicoD build,
    python images to a local python3)."""
    images = (*cluster.images, f"picod:*={cluster.binaries['picod']}", "python:*=python3")
    return Part(
        "node",
        (
            sys.executable,
            "-m",
            "onemachine",
            "node",
            "--kubeconfig",
            cluster.kubeconfig("admin"),
            "--root",
            str(cluster.state.node_root),
            "--name",
            NODE_NAME,
            "--service-cidr",
            SERVICE_CIDR,
            *(argument for image in images for argument in ("--image", image)),
            f"--tls-cert-file={cluster.pki.kubelet_cert}",
            f"--tls-private-key-file={cluster.pki.kubelet_key}",
            f"--client-ca-file={cluster.pki.ca_cert}",
        ),
        HttpProbe(
            f"{cluster.ports.api_server_url}/api/v1/nodes/{NODE_NAME}",
            ca=cluster.pki.ca_cert,
            token_file=cluster.state.admin_token,
            accept=node_is_ready,
        ),
        {"PYTHONPATH": str(REPOSITORY)},
    )
