"""The process kubelet: one node of a cluster whose pods are local processes.

It registers its Node, keeps the Node's status and its Lease fresh (every 10 s), binds the
pods no scheduler binds (no nodeName, schedulerName default-scheduler: there is no
scheduler), and runs the pods bound to it, one PodWorker each, fed by a list-and-watch of
`spec.nodeName=<node>` with a periodic resync. Stopping it stops every pod's processes.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from urllib3.exceptions import HTTPError

from onemachine.node.api import ApiError, NodeApi, Obj
from onemachine.node.lease import NodeLease
from onemachine.node.pod_source import PodSource
from onemachine.node.pod_worker import NodeContext, PodWorker
from onemachine.node.registration import NodeRegistration

_LOG = logging.getLogger("onemachine.node")
DEFAULT_SCHEDULER = "default-scheduler"
_STOP_SECONDS = 15.0  # how long a node stop waits for each pod's processes to end


@dataclass(frozen=True)
class Timing:
    """The node's clocks: heartbeat (Lease and Node status, the kubelet's 10 s) and resync
    (how long a watch runs before the pods are listed again)."""

    heartbeat: float = 10.0
    resync: float = 60.0


class NodeAgent:
    """A running node: start() registers it and starts its threads, stop() ends them."""

    def __init__(self, context: NodeContext, timing: Timing = Timing()) -> None:
        self._context = context
        self._api: NodeApi = context.api
        self._name = context.node_name
        self._timing = timing
        self._registration = NodeRegistration(self._api, self._name, context.host_ip)
        self._lease = NodeLease(self._api, self._name)
        self._workers: dict[str, PodWorker] = {}  # pod uid -> its worker
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._heartbeat = threading.Thread(target=self._beat, name="heartbeat", daemon=True)
        self._sources = [
            PodSource(self._api, f"spec.nodeName={self._name}", self._own, timing.resync),
            PodSource(self._api, "spec.nodeName=", self._unbound, timing.resync),
        ]

    def start(self) -> None:
        """Register the Node (raises ApiError if the API refuses it), then run."""
        node = self._registration.register()
        self._lease.node_uid = node["metadata"]["uid"]
        self._lease.renew()
        _LOG.info("node %s registered, Ready, at %s", self._name, self._context.host_ip)
        self._heartbeat.start()
        for source in self._sources:
            source.start()

    def stop(self) -> None:
        """Stop watching, then every pod's processes (killed: a node stop does not wait
        out grace periods); the Node and its pods stay in the API, as a kubelet's do."""
        self._stopping.set()
        for source in self._sources:
            source.stop()
        with self._lock:
            workers = list(self._workers.values())
        for worker in workers:
            worker.halt()
        for worker in workers:
            worker.join(_STOP_SECONDS)
        if self._heartbeat.ident is not None:  # started
            self._heartbeat.join(10)
        _LOG.info("node %s stopped", self._name)

    def pod(self, namespace: str, name: str) -> PodWorker | None:
        """The worker of the pod of that name bound here, if any (the kubelet's
        GetPodByName, for its API)."""
        key = f"{namespace}/{name}"
        with self._lock:
            return next((w for w in self._workers.values() if w.key == key), None)

    def _beat(self) -> None:
        while not self._stopping.wait(self._timing.heartbeat):
            try:
                self._lease.renew()
                self._registration.report()
            except (ApiError, HTTPError, OSError) as error:
                _LOG.warning("node %s: heartbeat failed: %s", self._name, error)

    def _own(self, pod: Obj, gone: bool) -> None:
        """A pod bound to this node, as the watch saw it: handed to its worker."""
        uid = pod["metadata"]["uid"]
        with self._lock:
            if self._stopping.is_set():
                return
            worker = self._workers.get(uid)
            if gone:
                self._workers.pop(uid, None)
                if worker is not None:
                    worker.gone()
            elif worker is not None:
                worker.update(pod)  # a worker that has finished keeps its uid until gone
            elif not _finished(pod):
                worker = self._workers[uid] = PodWorker(pod, self._context)
                _LOG.info("pod %s: bound here, starting", worker.key)
                worker.start()

    def _unbound(self, pod: Obj, gone: bool) -> None:
        """A pod on no node: bound here, as the scheduler would, if it is the default
        scheduler's and not being deleted."""
        spec, metadata = pod.get("spec") or {}, pod["metadata"]
        if gone or self._stopping.is_set() or metadata.get("deletionTimestamp"):
            return
        if spec.get("schedulerName", DEFAULT_SCHEDULER) != DEFAULT_SCHEDULER:
            return
        key = f"{metadata['namespace']}/{metadata['name']}"
        try:
            self._api.bind(pod, self._name)
        except ApiError as error:
            # 409: bound meanwhile (a list showed it before its binding) or being deleted.
            if error.status != 409:
                _LOG.warning("pod %s: not bound: %s", key, error)
            return
        _LOG.info("pod %s: bound to %s", key, self._name)


def _finished(pod: Obj) -> bool:
    """A pod that ended before this node saw it (it restarted) and is not being deleted:
    nothing to run. One being deleted gets a worker, which finishes the delete."""
    terminal = (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
    return terminal and not pod["metadata"].get("deletionTimestamp")
