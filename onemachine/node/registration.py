"""The node's Node object: registered at start as the kubelet registers one (labels,
addresses, generous capacity, the Ready condition), and its status kept fresh.

The node's address is the pod network's gateway (198.18.0.1): the address pods reach the
node at, inside the launcher's private namespace. There is no kubelet API behind its
kubeletEndpoint: logs, exec and port-forward through the API server fail (docs say so).
"""

from __future__ import annotations

import os
import platform

from onemachine.node.api import ApiError, NodeApi, Obj
from onemachine.node.status import timestamp

# Generous, so that no pod is refused for resources on a machine whose limits are not enforced.
CAPACITY = {
    "cpu": "64",
    "memory": "256Gi",
    "pods": "1000",
    "ephemeral-storage": "1Ti",
    "hugepages-2Mi": "0",
}
_PRESSURES = (
    ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
)
_ARCHITECTURES = {"x86_64": "amd64", "aarch64": "arm64"}


class NodeRegistration:
    """Registers the node, and refreshes its conditions' heartbeat on each report()."""

    def __init__(self, api: NodeApi, name: str, address: str) -> None:
        self._api = api
        self.name = name
        self._address = address
        self._since = timestamp()

    def register(self) -> Obj:
        """Create the Node, or take over one of that name: its labels and status made ours."""
        try:
            return self._api.create_node(self._node())
        except ApiError as error:
            if error.status != 409:
                raise
        self._api.patch_node(self.name, {"metadata": {"labels": self._labels()}})
        return self._api.patch_node_status(self.name, self._status())

    def report(self) -> Obj:
        return self._api.patch_node_status(self.name, self._status())

    def _labels(self) -> dict[str, str]:
        return {
            "kubernetes.io/hostname": self.name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": _architecture(),
            "node.onemachine.io/process-kubelet": "true",
        }

    def _node(self) -> Obj:
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": self.name, "labels": self._labels()},
            "spec": {},
            "status": self._status(),
        }

    def _status(self) -> Obj:
        now = timestamp()
        conditions = [
            {
                "type": kind,
                "status": "False",
                "reason": reason,
                "message": message,
                "lastHeartbeatTime": now,
                "lastTransitionTime": self._since,
            }
            for kind, reason, message in _PRESSURES
        ]
        conditions.append(
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "kubelet is posting ready status",
                "lastHeartbeatTime": now,
                "lastTransitionTime": self._since,
            }
        )
        uname = os.uname()
        return {
            "capacity": CAPACITY,
            "allocatable": CAPACITY,
            "conditions": conditions,
            "addresses": [
                {"type": "InternalIP", "address": self._address},
                {"type": "Hostname", "address": self.name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": "",
                "systemUUID": "",
                "bootID": "",
                "kernelVersion": uname.release,
                "osImage": platform.platform(terse=True),
                "containerRuntimeVersion": "onemachine://processes",
                "kubeletVersion": "v1.36.2-onemachine",
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": _architecture(),
            },
        }


def _architecture() -> str:
    machine = os.uname().machine
    return _ARCHITECTURES.get(machine, machine)
