"""kube-controller-manager as the launcher runs it, doing only the controllers' jobs the
cluster and the e2e runner rely on, through the --kubeconfig the launcher gives it:

- serviceaccount: a `default` ServiceAccount in every namespace;
- serviceaccount-token: a token (and ca.crt, namespace) in each service-account token
  Secret (the stand-in API server authenticates it as the account);
- deployment: for each Deployment, spec.replicas pods from its template, owned by it and
  labelled with the template's hash; a changed template (`kubectl set env`) gets new pods,
  and the old ones go once the new are Ready; the Deployment's status as `kubectl rollout
  status` reads it; a Deployment's pods go with it (the garbage collector's part).

The real one puts a ReplicaSet between a Deployment and its pods; this one owns the pods
directly. Everything is read again every POLL seconds: no watches. Its health endpoint,
https://--bind-address:--secure-port/healthz, serves a certificate of its own, as the real
one does with a --cert-dir and no serving certificate.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import secrets
import ssl
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import urllib3
from kubernetes import client as kube
from kubernetes import config as kube_config
from kubernetes.client.rest import ApiException

from plumbing.certificates import serving_certificates, write_file
from tests.onemachine.cluster.programs.flags import parse, stopping

POLL = 0.2
HASH_LABEL = "pod-template-hash"
SERVICE_ACCOUNT_TOKEN = "kubernetes.io/service-account-token"
ACCOUNT_ANNOTATION = "kubernetes.io/service-account.name"


def _data(answer: Any) -> dict[str, Any]:
    return json.loads(answer.data)


class Controllers:
    def __init__(self, api: kube.ApiClient, root_ca: str) -> None:
        self.core = kube.CoreV1Api(api)
        self.apps = kube.AppsV1Api(api)
        self.root_ca = root_ca

    def run_once(self) -> None:
        self.default_service_accounts()
        self.service_account_tokens()
        self.deployments()

    def default_service_accounts(self) -> None:
        namespaces = _data(self.core.list_namespace(_preload_content=False))["items"]
        for namespace in namespaces:
            name = namespace["metadata"]["name"]
            try:
                self.core.read_namespaced_service_account("default", name, _preload_content=False)
            except ApiException as error:
                if error.status != 404:
                    raise
                self.core.create_namespaced_service_account(
                    name, {"metadata": {"name": "default"}}, _preload_content=False
                )

    def service_account_tokens(self) -> None:
        listed = self.core.list_secret_for_all_namespaces(
            field_selector=f"type={SERVICE_ACCOUNT_TOKEN}", _preload_content=False
        )
        for secret in _data(listed)["items"]:
            metadata = secret["metadata"]
            if (secret.get("data") or {}).get("token"):
                continue
            if not (metadata.get("annotations") or {}).get(ACCOUNT_ANNOTATION):
                continue
            values = {
                "token": secrets.token_urlsafe(32),
                "ca.crt": self.root_ca,
                "namespace": metadata["namespace"],
            }
            data = {key: base64.b64encode(value.encode()).decode() for key, value in values.items()}
            self.core.patch_namespaced_secret(
                metadata["name"], metadata["namespace"], {"data": data}, _preload_content=False
            )

    def deployments(self) -> None:
        listed = self.apps.list_deployment_for_all_namespaces(_preload_content=False)
        deployments = _data(listed)["items"]
        pods = _data(self.core.list_pod_for_all_namespaces(_preload_content=False))["items"]
        for deployment in deployments:
            uid = deployment["metadata"]["uid"]
            self.deployment(deployment, [pod for pod in pods if _owner(pod) == uid])
        alive = {deployment["metadata"]["uid"] for deployment in deployments}
        for pod in pods:
            if _owner(pod) not in (None, *alive) and not _terminating(pod):
                self._delete(pod)

    def deployment(self, deployment: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        metadata, spec = deployment["metadata"], deployment["spec"]
        wanted = spec.get("replicas", 1)
        template_hash = _hash(spec["template"])
        pods = [pod for pod in pods if not _terminating(pod)]
        current = [pod for pod in pods if _labels(pod).get(HASH_LABEL) == template_hash]
        for _ in range(wanted - len(current)):
            pod = self.core.create_namespaced_pod(
                metadata["namespace"], _pod(deployment, template_hash), _preload_content=False
            )
            current.append(_data(pod))
        extra, current = current[wanted:], current[:wanted]
        for pod in extra:
            self._delete(pod)
        old = [pod for pod in pods if _labels(pod).get(HASH_LABEL) != template_hash]
        if sum(map(_ready, current)) >= wanted:  # the rollout's new pods are up
            for pod in old:
                self._delete(pod)
            old = []
        status = _status(deployment, wanted, current, old)
        if _without_times(status) != _without_times(deployment.get("status") or {}):
            self.apps.patch_namespaced_deployment_status(
                metadata["name"], metadata["namespace"], {"status": status}, _preload_content=False
            )

    def _delete(self, pod: dict[str, Any]) -> None:
        try:
            self.core.delete_namespaced_pod(
                pod["metadata"]["name"], pod["metadata"]["namespace"], _preload_content=False
            )
        except ApiException as error:
            if error.status != 404:
                raise


def _labels(obj: dict[str, Any]) -> dict[str, str]:
    return obj["metadata"].get("labels") or {}


def _owner(pod: dict[str, Any]) -> str | None:
    return next(
        (
            reference["uid"]
            for reference in pod["metadata"].get("ownerReferences") or []
            if reference.get("kind") == "Deployment" and reference.get("controller")
        ),
        None,
    )


def _terminating(pod: dict[str, Any]) -> bool:
    return "deletionTimestamp" in pod["metadata"]


def _ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _hash(template: dict[str, Any]) -> str:
    """Stable for one template, different for another (the real one hashes with FNV)."""
    return hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()[:10]


def _pod(deployment: dict[str, Any], template_hash: str) -> dict[str, Any]:
    metadata, template = deployment["metadata"], deployment["spec"]["template"]
    template_metadata = template.get("metadata") or {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{metadata['name']}-{template_hash}-{secrets.token_hex(3)[:5]}",
            "labels": {**(template_metadata.get("labels") or {}), HASH_LABEL: template_hash},
            "annotations": template_metadata.get("annotations") or {},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": metadata["name"],
                    "uid": metadata["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": template.get("spec") or {},
    }


def _status(
    deployment: dict[str, Any], wanted: int, current: list[dict], old: list[dict]
) -> dict[str, Any]:
    ready = sum(map(_ready, current + old))
    complete = len(current) == wanted and not old and sum(map(_ready, current)) >= wanted
    now = deployment.get("status") or {}
    times = {c["type"]: c for c in now.get("conditions") or []}

    def condition(kind: str, true: bool, reason: str, message: str) -> dict[str, Any]:
        status = "True" if true else "False"
        before = times.get(kind) or {}
        stamp = before.get("lastTransitionTime") if before.get("status") == status else _now()
        return {
            "type": kind,
            "status": status,
            "reason": reason,
            "message": message,
            "lastUpdateTime": stamp,
            "lastTransitionTime": stamp,
        }

    status: dict[str, Any] = {
        "observedGeneration": deployment["metadata"].get("generation", 1),
        "replicas": len(current) + len(old),
        "updatedReplicas": len(current),
        "readyReplicas": ready,
        "availableReplicas": ready,
        "conditions": [
            condition(
                "Available",
                ready >= wanted,
                "MinimumReplicasAvailable" if ready >= wanted else "MinimumReplicasUnavailable",
                "Deployment has minimum availability."
                if ready >= wanted
                else "Deployment does not have minimum availability.",
            ),
            condition(
                "Progressing",
                True,
                "NewReplicaSetAvailable" if complete else "ReplicaSetUpdated",
                f'Deployment "{deployment["metadata"]["name"]}" '
                + ("has successfully progressed." if complete else "is progressing."),
            ),
        ],
    }
    if wanted > ready:
        status["unavailableReplicas"] = wanted - ready
    return {key: value for key, value in status.items() if value or key == "observedGeneration"}


def _without_times(status: dict[str, Any]) -> dict[str, Any]:
    conditions = [
        {k: v for k, v in c.items() if not k.startswith("last")}
        for c in status.get("conditions") or []
    ]
    return {**status, "conditions": conditions}


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def serve_health(host: str, port: int, cert_dir: Path) -> None:
    certificates = serving_certificates("kube-controller-manager-ca", "localhost", (host,))
    cert, key = cert_dir / "kube-controller-manager.crt", cert_dir / "kube-controller-manager.key"
    write_file(cert, certificates.cert, 0o644)
    write_file(key, certificates.key, 0o600)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)

    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/healthz" else 404)
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer((host, port), Health)
    server.socket = tls.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()


def main() -> None:
    flags = parse()
    serve_health(flags["bind-address"], int(flags["secure-port"]), Path(flags["cert-dir"]))
    api = kube_config.new_client_from_config(config_file=flags["kubeconfig"])
    controllers = Controllers(api, Path(flags["root-ca-file"]).read_text(encoding="utf-8"))
    print("stand-in kube-controller-manager running", flush=True)
    stop = stopping()
    while not stop.wait(POLL):
        try:
            controllers.run_once()
        except (ApiException, urllib3.exceptions.HTTPError) as error:
            print(f"stand-in kube-controller-manager: {error}", flush=True)
