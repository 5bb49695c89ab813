"""Where everything lives: the files of the state directory, and the ports inside the
namespace.

The namespace is private, so its ports are fixed; only the host side of the relay picks free
ports. Two programs that default to the same port (the Router and the WorkloadManager both
8080 in upstream's chart, manifests/charts/base/values.yaml:28,57) get different ones here,
since they share one network namespace instead of one pod each.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

LOOPBACK = "127.0.0.1"

ETCD_CLIENT_PORT = 2379
ETCD_PEER_PORT = 2380
API_SERVER_PORT = 6443
CONTROLLER_MANAGER_PORT = 10257
REDIS_PORT = 6379
AGENT_SANDBOX_HEALTH_PORT = 8081
ROUTER_PORT = 8080
WORKLOAD_MANAGER_PORT = 8090
# The test subjects' OIDC issuer (oidc_issuer). The launcher gives it the port of its host
# side too, so that its URL, every token's `iss`, means it on both sides of the relay.
OIDC_ISSUER_PORT = 8070

# Where AgentCube runs, as in upstream's Kind setup (test/e2e/run_e2e.sh), and the second
# namespace of the suite's namespaces scenario.
SYSTEM_NAMESPACE = "agentcube"
NEIGHBOUR_NAMESPACE = "agentcube-neighbour"
NODE_NAME = "onemachine-node"
# The node's address on the pod bridge (the pods' gateway), where pods reach the parts: the
# Router and the WorkloadManager listen on every interface of the namespace (":" + port,
# pkg/router/server.go:185, pkg/workloadmanager/server.go:150).
NODE_ADDRESS = "198.18.0.1"

# Services get addresses from the benchmarking block (RFC 2544, 198.18.0.0/15) beside the
# pods' 198.18.0.0/16: never the machine's network. The node's Service proxy serves them
# (onemachine/node/service_proxy.py), inside the namespace only.
SERVICE_CIDR = "198.19.0.0/24"


@dataclass(frozen=True)
class StateDir:
    """The files of one cluster, all under `root`."""

    root: Path

    @property
    def pki(self) -> Path:
        return self.root / "pki"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def etcd_data(self) -> Path:
        return self.root / "etcd"

    @property
    def redis_data(self) -> Path:
        return self.root / "redis"

    @property
    def node_root(self) -> Path:
        return self.root / "node"

    @property
    def controller_manager_certs(self) -> Path:
        return self.root / "controller-manager"

    @property
    def token_file(self) -> Path:
        return self.pki / "tokens.csv"

    @property
    def admin_token(self) -> Path:
        """The admin's token alone, for the launcher's own probes."""
        return self.pki / "admin.token"

    @property
    def router_service_account(self) -> Path:
        """The Router's in-cluster files (token, ca.crt, namespace)."""
        return self.root / "router-serviceaccount"

    def kubeconfig(self, user: str) -> Path:
        return self.root / "kubeconfigs" / f"{user}.yaml"

    @property
    def oidc_tokens(self) -> Path:
        """The issuer's tokens for the suite, one 0600 file each (its token_dir)."""
        return self.root / "oidc-tokens"

    @property
    def suite_kubeconfig(self) -> Path:
        """The suite user's kubeconfig, pointing at the host side of the relay."""
        return self.root / "suite.kubeconfig"

    @property
    def suite_command(self) -> Path:
        return self.root / "suite-command"

    @property
    def admin_host_kubeconfig(self) -> Path:
        """The admin's kubeconfig pointing at the host side of the relay."""
        return self.kubeconfig("admin.host")

    @property
    def cluster_info(self) -> Path:
        """cluster.json: the host URLs and the files a program driving the cluster needs;
        written last once every part is ready, removed at the stop."""
        return self.root / "cluster.json"

    @property
    def service_forwards(self) -> Path:
        """{"NAMESPACE/NAME:PORT": "127.0.0.1:HOSTPORT"} of each --forward-service."""
        return self.root / "service-forwards.json"

    def make(self) -> None:
        for directory in (self.root, self.pki, self.logs, self.root / "kubeconfigs"):
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
