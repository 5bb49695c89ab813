"""Pods that a field selector takes, kept current by list and watch as an informer keeps
them: list, hand every pod over, watch from the list's resourceVersion until the resync
period ends (the server closes the watch: timeoutSeconds), then list again. A pod that left
the list while no watch saw it is handed over as gone. A watch the server ends early is
resumed from the last resourceVersion seen; an ERROR event (410 Expired after a compaction)
or a failed call starts over with a list.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable

from urllib3.exceptions import HTTPError

from onemachine.node.api import ApiError, NodeApi, Obj, Watch

# (pod, gone): the pod as last seen, and whether it no longer exists or left the selector.
Handler = Callable[[Obj, bool], None]
_RETRY_SECONDS = 1.0
_LOG = logging.getLogger("onemachine.node")


class PodSource:
    """One list-and-watch loop, in a thread of its own once started."""

    def __init__(
        self, api: NodeApi, field_selector: str, handler: Handler, resync_seconds: float
    ) -> None:
        self._api = api
        self._selector = field_selector
        self._handler = handler
        self._resync = resync_seconds
        self._stopping = threading.Event()
        self._watch: Watch | None = None
        self._lock = threading.Lock()
        self._known: dict[str, Obj] = {}  # uid -> pod
        self._thread = threading.Thread(
            target=self._run, name=f"pods {field_selector}", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            watch = self._watch
        if watch is not None:
            watch.close()
        if self._thread.ident is not None:  # started
            self._thread.join(10)

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                self._follow(self._list())
            except (ApiError, HTTPError, OSError, ValueError) as error:
                if self._stopping.is_set():
                    return
                _LOG.warning(
                    "pods %s: %s; listing again in %ss", self._selector, error, _RETRY_SECONDS
                )
                self._stopping.wait(_RETRY_SECONDS)

    def _list(self) -> str:
        pods, version = self._api.list_pods(self._selector)
        listed = {pod["metadata"]["uid"]: pod for pod in pods}
        for uid, pod in self._known.items():
            if uid not in listed:
                self._handler(pod, True)
        self._known = listed
        for pod in pods:
            self._handler(pod, False)
        return version

    def _follow(self, version: str) -> None:
        deadline = time.monotonic() + self._resync
        while not self._stopping.is_set():
            remaining = math.ceil(deadline - time.monotonic())
            if remaining <= 0:
                return
            watch = self._api.watch_pods(self._selector, version, remaining)
            with self._lock:  # a stop() from now on closes it; one before it did not
                self._watch = watch
            if self._stopping.is_set():
                watch.close()
            try:
                for event in watch:
                    if self._stopping.is_set():
                        return
                    kind, pod = event["type"], event["object"]
                    if kind == "ERROR":
                        _LOG.info("pods %s: watch ended: %s", self._selector, pod.get("message"))
                        return
                    version = pod["metadata"]["resourceVersion"]
                    if kind == "BOOKMARK":
                        continue
                    gone = kind == "DELETED"
                    if gone:
                        self._known.pop(pod["metadata"]["uid"], None)
                    else:
                        self._known[pod["metadata"]["uid"]] = pod
                    self._handler(pod, gone)
            finally:
                with self._lock:
                    self._watch = None
