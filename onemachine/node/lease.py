"""The node's Lease in kube-node-lease, renewed as the kubelet renews it: holderIdentity
the node, leaseDurationSeconds 40, renewTime now, owned by the Node so that it goes with it
(kubernetes pkg/kubelet/nodelease, component-helpers/apimachinery/lease/controller.go)."""

from __future__ import annotations

from datetime import UTC, datetime

from onemachine.node.api import LEASE_NAMESPACE, ApiError, NodeApi, Obj

LEASE_DURATION_SECONDS = 40


class NodeLease:
    """The Lease of one node. renew() creates it when missing, else updates the one read
    (a conflict, someone else's write in between, is retried at the next renewal)."""

    def __init__(self, api: NodeApi, node_name: str) -> None:
        self._api = api
        self._name = node_name
        self.node_uid = ""  # set once the Node is registered: the Lease's owner

    def renew(self) -> Obj:
        try:
            lease = self._api.read_lease(self._name)
        except ApiError as error:
            if error.status != 404:
                raise
            return self._api.create_lease(self._lease({"name": self._name}))
        lease["spec"] = self._lease(lease["metadata"])["spec"]
        return self._api.replace_lease(lease)

    def _lease(self, metadata: Obj) -> Obj:
        metadata = {**metadata, "namespace": LEASE_NAMESPACE}
        if self.node_uid:
            metadata["ownerReferences"] = [
                {"apiVersion": "v1", "kind": "Node", "name": self._name, "uid": self.node_uid}
            ]
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": metadata,
            "spec": {
                "holderIdentity": self._name,
                "leaseDurationSeconds": LEASE_DURATION_SECONDS,
                "renewTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            },
        }
