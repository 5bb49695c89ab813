"""The node's calls to the Kubernetes API server, through the official client, with objects
as the JSON dicts the server sends (no typed models: what is patched is what was read).

Every method raises ApiError for an answer that is not a success, with the server's own
status code, reason and message.
"""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Iterator
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

Obj = dict[str, Any]
LEASE_NAMESPACE = "kube-node-lease"
_MERGE_PATCH = "application/merge-patch+json"


class ApiError(RuntimeError):
    """The API server answered with an error Status."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status, self.reason, self.message = status, reason, message


class NodeApi:
    """What the node reads and writes, as dicts. Thread-safe: the client's connection pool is
    shared by the node's threads."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self._client = api_client
        self._core = client.CoreV1Api(api_client)
        self._coordination = client.CoordinationV1Api(api_client)
        self._discovery = client.DiscoveryV1Api(api_client)

    def close(self) -> None:
        self._client.close()

    # Pods.

    def list_pods(self, field_selector: str) -> tuple[list[Obj], str]:
        """Pods of every namespace that the selector takes, and the list's resourceVersion."""
        answer = _json(_call(self._core.list_pod_for_all_namespaces, field_selector=field_selector))
        for item in answer["items"]:  # a typed list's items carry no kind
            item.setdefault("kind", "Pod")
            item.setdefault("apiVersion", "v1")
        return answer["items"], answer["metadata"]["resourceVersion"]

    def watch_pods(self, field_selector: str, resource_version: str, timeout: int) -> Watch:
        """A watch from resource_version, which the server ends after `timeout` seconds."""
        response = _call(
            self._core.list_pod_for_all_namespaces,
            field_selector=field_selector,
            resource_version=resource_version,
            timeout_seconds=timeout,
            allow_watch_bookmarks=True,
            watch=True,
        )
        _check(response)
        return Watch(response)

    def bind(self, pod: Obj, node: str) -> None:
        metadata = pod["metadata"]
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": metadata["name"], "namespace": metadata["namespace"]},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        _json(
            _call(
                self._core.create_namespaced_pod_binding,
                metadata["name"],
                metadata["namespace"],
                body,
            )
        )

    def patch_pod_status(self, namespace: str, name: str, status: Obj) -> Obj:
        """The pod's whole status, replaced list by list (a JSON merge patch)."""
        return _json(
            _call(
                self._core.patch_namespaced_pod_status,
                name,
                namespace,
                {"status": status},
                _content_type=_MERGE_PATCH,
            )
        )

    def finish_delete(self, namespace: str, name: str, uid: str) -> None:
        """The kubelet's last word on a pod it stopped: delete with grace 0, only if the pod
        is still the one it ran (a uid precondition)."""
        body = {"gracePeriodSeconds": 0, "preconditions": {"uid": uid}}
        _json(_call(self._core.delete_namespaced_pod, name, namespace, body=body))

    def list_namespaced_pods(self, namespace: str, label_selector: str) -> list[Obj]:
        answer = _json(
            _call(self._core.list_namespaced_pod, namespace, label_selector=label_selector)
        )
        return answer["items"]

    # Services, for the node's Service proxy.

    def list_services(self) -> list[Obj]:
        """The Services of every namespace."""
        return _json(_call(self._core.list_service_for_all_namespaces))["items"]

    def list_endpoint_slices(self, namespace: str, service: str) -> list[Obj]:
        """The EndpointSlices of one Service (their kubernetes.io/service-name label)."""
        selector = f"kubernetes.io/service-name={service}"
        call = self._discovery.list_namespaced_endpoint_slice
        return _json(_call(call, namespace, label_selector=selector))["items"]

    # What pods' environments refer to.

    def read_secret(self, namespace: str, name: str) -> Obj:
        return _json(_call(self._core.read_namespaced_secret, name, namespace))

    def read_config_map(self, namespace: str, name: str) -> Obj:
        return _json(_call(self._core.read_namespaced_config_map, name, namespace))

    # The node and its lease.

    def create_node(self, node: Obj) -> Obj:
        return _json(_call(self._core.create_node, node))

    def patch_node(self, name: str, patch: Obj) -> Obj:
        return _json(_call(self._core.patch_node, name, patch, _content_type=_MERGE_PATCH))

    def patch_node_status(self, name: str, status: Obj) -> Obj:
        return _json(
            _call(
                self._core.patch_node_status, name, {"status": status}, _content_type=_MERGE_PATCH
            )
        )

    def read_lease(self, name: str) -> Obj:
        return _json(_call(self._coordination.read_namespaced_lease, name, LEASE_NAMESPACE))

    def create_lease(self, lease: Obj) -> Obj:
        return _json(_call(self._coordination.create_namespaced_lease, LEASE_NAMESPACE, lease))

    def replace_lease(self, lease: Obj) -> Obj:
        return _json(
            _call(
                self._coordination.replace_namespaced_lease,
                lease["metadata"]["name"],
                LEASE_NAMESPACE,
                lease,
            )
        )


class Watch:
    """One open watch: its events as dicts ({"type", "object"}), until the server ends it or
    close() is called from another thread."""

    def __init__(self, response: Any) -> None:
        self._response = response

    def __iter__(self) -> Iterator[Obj]:
        try:
            for line in iter_resp_lines(self._response):
                if line:
                    yield json.loads(line)
        finally:
            self._response.release_conn()

    def close(self) -> None:
        """End the stream now: shut the socket down so the reading thread wakes up."""
        sock = getattr(getattr(self._response, "connection", None), "sock", None)
        if sock is not None:
            with contextlib.suppress(OSError):  # already closed: the stream has ended anyway
                sock.shutdown(socket.SHUT_RDWR)


def _call(method: Any, *args: Any, **kwargs: Any) -> Any:
    """The client's call, its ApiException as an ApiError (the response unread otherwise)."""
    try:
        return method(*args, _preload_content=False, **kwargs)
    except ApiException as error:
        raise _error(error.status or 0, error.body or b"") from None


def _error(status: int, raw: bytes | str) -> ApiError:
    try:
        body = json.loads(raw)
    except ValueError:
        text = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
        body = {"message": text.strip()}
    return ApiError(status, body.get("reason", ""), body.get("message", ""))


def _check(response: Any) -> None:
    if not 200 <= response.status < 300:
        raise _error(response.status, response.data)


def _json(response: Any) -> Obj:
    _check(response)
    return json.loads(response.data)
