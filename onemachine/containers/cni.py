"""The pods' network: one CNI conflist, a bridge in the runtime's private network namespace.

Debian's containernetworking-plugins (in /usr/lib/cni): the `bridge` plugin makes the
bridge (the pods' gateway, `isGateway`, with `hairpinMode` so a pod reaches itself through
a Service, no masquerading: nothing leaves the namespace) and a veth into each pod's network
namespace; `host-local` hands out addresses from the pod subnet and keeps its leases in a
`dataDir` of the runtime's own (not /var/lib/cni). The subnet is 198.18.0.0/16, in the
benchmarking block RFC 2544 reserves (198.18.0.0/15), the pods' subnet of the process node
too (docs/one-machine-cluster.md, "How it works"): it exists only inside the namespace.
"""

from __future__ import annotations

import json
from ipaddress import IPv4Address, IPv4Network
from pathlib import Path

CNI_BIN_DIR = Path("/usr/lib/cni")
BENCHMARKING = IPv4Network("198.18.0.0/15")
POD_SUBNET = IPv4Network("198.18.0.0/16")
BRIDGE = "ompods0"
NETWORK_NAME = "onemachine-pods"
CNI_VERSION = "1.0.0"
CONFLIST_NAME = "10-onemachine-pods.conflist"


def gateway(subnet: IPv4Network) -> IPv4Address:
    """The bridge's address: the subnet's first."""
    return subnet.network_address + 1


def conflist(subnet: IPv4Network, data_dir: Path) -> dict[str, object]:
    """The network configuration list for pods in `subnet`, leases kept in `data_dir`."""
    if not subnet.subnet_of(BENCHMARKING):
        raise ValueError(
            f"pod subnet {subnet} is outside {BENCHMARKING}, the benchmarking block that "
            "cannot clash with the machine's network"
        )
    return {
        "cniVersion": CNI_VERSION,
        "name": NETWORK_NAME,
        "plugins": [
            {
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": True,
                "hairpinMode": True,
                "ipMasq": False,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": str(subnet), "gateway": str(gateway(subnet))}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(data_dir),
                },
            }
        ],
    }


def write_conf_dir(conf_dir: Path, subnet: IPv4Network, data_dir: Path) -> Path:
    """`conf_dir` holding the one conflist (containerd reads the first by name)."""
    text = json.dumps(conflist(subnet, data_dir), indent=2) + "\n"  # refused: nothing made
    conf_dir.mkdir(parents=True, exist_ok=True)
    data_dir.mkdir(parents=True, exist_ok=True)
    path = conf_dir / CONFLIST_NAME
    path.write_text(text)
    return path
