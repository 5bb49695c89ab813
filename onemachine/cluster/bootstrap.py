"""What the launcher puts in the fresh cluster, as the admin: the namespaces, the CRDs of
the user's agent-sandbox and AgentCube checkouts, the chart's RBAC (chart-rbac.yaml), the
suite's role (docs/examples/rbac.yaml) bound to the suite's user, and a token for each
AgentCube service account.

CRDs are created, not applied: a client-side apply keeps the whole object in an annotation,
and AgentCube's agentruntimes CRD is larger than the 256 KiB an annotation may hold.
"""

from __future__ import annotations

import base64
import time
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as kube
from kubernetes import config as kube_config
from kubernetes import utils as kube_utils
from kubernetes.client.exceptions import ApiException

from onemachine.cluster.credentials import SUITE_USER
from onemachine.cluster.layout import NEIGHBOUR_NAMESPACE, NODE_ADDRESS, SYSTEM_NAMESPACE
from onemachine.cluster.pki import KUBELET_CLIENT
from onemachine.cluster.readiness import wait_until

HERE = Path(__file__).resolve().parent
CHART_RBAC = HERE / "chart-rbac.yaml"
SUITE_RBAC = HERE.parents[1] / "docs" / "examples" / "rbac.yaml"
SUITE_ROLE = "agentcube-acceptance"
SERVICE_ACCOUNTS = ("workloadmanager", "agentcube-router")
CHART_SERVICE_PORT = 8080  # both Services' port in the chart (values.yaml:28,58)
WAIT_INTERVAL = 0.2  # between reads of what a controller of the cluster makes

# Where each checkout keeps its CRDs: (flag, directory inside the checkout).
CRD_SOURCES = (
    ("--agent-sandbox-src", "k8s/crds"),
    ("--agentcube-src", "manifests/charts/base/crds"),
)


class BootstrapError(Exception):
    """A manifest the launcher cannot find or the API server refused; the message says which."""


def crd_files(sources: dict[str, Path | None]) -> list[Path]:
    """The CRD files of both checkouts; BootstrapError naming each flag to fix."""
    files: list[Path] = []
    problems: list[str] = []
    for flag, inside in CRD_SOURCES:
        checkout = sources.get(flag)
        if checkout is None:
            problems.append(f"{flag} is needed: the checkout whose {inside}/ holds its CRDs")
            continue
        found = sorted((checkout / inside).glob("*.yaml"))
        if not found:
            problems.append(f"{flag} {checkout}: no CRDs in {checkout / inside}")
        files.extend(found)
    if problems:
        raise BootstrapError("; ".join(problems))
    return files


def connect(kubeconfig: Path) -> kube.ApiClient:
    client: kube.ApiClient = kube_config.new_client_from_config(config_file=str(kubeconfig))
    return client


def install(api: kube.ApiClient, crds: list[Path], timeout: float) -> None:
    """Everything above, each CRD waited for until Established."""
    for namespace in (SYSTEM_NAMESPACE, NEIGHBOUR_NAMESPACE):
        create(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    names = []
    for path in crds:
        for document in _documents(path):
            create(api, document, path)
            names.append(document["metadata"]["name"])
    _wait_established(api, names, timeout)
    for document in _documents(CHART_RBAC):
        create(api, document, CHART_RBAC)
    for document in _documents(SUITE_RBAC):
        create(api, document, SUITE_RBAC)
    for namespace in (SYSTEM_NAMESPACE, NEIGHBOUR_NAMESPACE):
        create(api, _suite_binding(namespace))
    for account in SERVICE_ACCOUNTS:
        create(api, _token_secret(account))


def kubelet_api_access(api: kube.ApiClient) -> None:
    """The API server's client certificate (pki.py's kube-apiserver-kubelet-client) bound to
    system:kubelet-api-admin, as kubeadm binds it: a real kubelet authorizes each call of
    the API server (logs, exec, port-forward) with a SubjectAccessReview."""
    name = KUBELET_CLIENT
    create(
        api,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "system:kubelet-api-admin",
            },
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name}],
        },
    )


def part_services(api: kube.ApiClient, router_port: int, workload_manager_port: int) -> None:
    """The chart's Services of the Router and the WorkloadManager (agentcube-router.yaml:133-148,
    workloadmanager.yaml:125-140: port 8080, named http), which pods reach them by (the MCP
    server's deployment.yaml names both). Here they are processes, not pods: so no selector,
    and an EndpointSlice each at the node's address and the part's port, as Kubernetes
    models a backend outside the cluster; the node's Service proxy serves them."""
    for name, port in (
        ("agentcube-router", router_port),
        ("workloadmanager", workload_manager_port),
    ):
        create(api, _process_service(name))
        create(api, _process_endpoints(name, port))


def _process_service(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": SYSTEM_NAMESPACE, "labels": {"app": name}},
        "spec": {"ports": [{"name": "http", "port": CHART_SERVICE_PORT, "protocol": "TCP"}]},
    }


def _process_endpoints(name: str, port: int) -> dict[str, Any]:
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": f"{name}-process",
            "namespace": SYSTEM_NAMESPACE,
            "labels": {
                "kubernetes.io/service-name": name,
                # not the EndpointSlice controller's (it leaves slices it does not manage alone)
                "endpointslice.kubernetes.io/managed-by": "onemachine-cluster",
            },
        },
        "addressType": "IPv4",
        "endpoints": [{"addresses": [NODE_ADDRESS], "conditions": {"ready": True}}],
        "ports": [{"name": "http", "port": port, "protocol": "TCP"}],
    }


def service_account_token(api: kube.ApiClient, account: str, timeout: float) -> str:
    """The token kube-controller-manager's token controller wrote into the account's
    Secret; BootstrapError when none comes within `timeout`."""
    core = kube.CoreV1Api(api)

    def token() -> str | None:
        secret = core.read_namespaced_secret(f"{account}-token", SYSTEM_NAMESPACE)
        return (secret.data or {}).get("token")

    found = wait_until(token, timeout=timeout, interval=WAIT_INTERVAL)
    if found:
        return base64.b64decode(found).decode()
    raise BootstrapError(
        f"no token for service account {SYSTEM_NAMESPACE}/{account} within {timeout:g} s: "
        "kube-controller-manager's token controller fills it (see its log)"
    )


def wait_default_service_account(api: kube.ApiClient, timeout: float) -> None:
    """Pods are admitted only once their namespace has its `default` service account."""
    core = kube.CoreV1Api(api)
    deadline = time.monotonic() + timeout

    def made(namespace: str) -> bool:
        try:
            return bool(core.read_namespaced_service_account("default", namespace))
        except ApiException as error:
            if error.status != 404:
                raise
            return False

    for namespace in (SYSTEM_NAMESPACE, NEIGHBOUR_NAMESPACE):
        left = deadline - time.monotonic()
        if not wait_until(lambda n=namespace: made(n), timeout=left, interval=WAIT_INTERVAL):
            raise BootstrapError(
                f"no default service account in {namespace} within {timeout:g} s: "
                "kube-controller-manager's serviceaccount controller makes it"
            )


def _suite_binding(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": SUITE_ROLE, "namespace": namespace},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": SUITE_ROLE,
        },
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": SUITE_USER}],
    }


def _token_secret(account: str) -> dict[str, Any]:
    """A long-lived token Secret, filled by kube-controller-manager's token controller."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/service-account-token",
        "metadata": {
            "name": f"{account}-token",
            "namespace": SYSTEM_NAMESPACE,
            "annotations": {"kubernetes.io/service-account.name": account},
        },
    }


def _documents(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as file:
        return [document for document in yaml.safe_load_all(file) if document]


def create(api: kube.ApiClient, document: dict[str, Any], source: Path | None = None) -> None:
    try:
        kube_utils.create_from_dict(api, document)
    except kube_utils.FailToCreateError as failure:
        errors = [error for error in failure.api_exceptions if error.status != 409]
        if errors:
            where = f" from {source}" if source else ""
            raise BootstrapError(
                f"the API server refused {document['kind']} {document['metadata']['name']}"
                f"{where}: {errors[0].status} {errors[0].reason}: {errors[0].body}"
            ) from failure


def _wait_established(api: kube.ApiClient, names: list[str], timeout: float) -> None:
    extensions = kube.ApiextensionsV1Api(api)
    deadline = time.monotonic() + timeout
    for name in names:
        left = deadline - time.monotonic()

        def established(name: str = name) -> bool:
            return _established(extensions.read_custom_resource_definition(name))

        if not wait_until(established, timeout=left, interval=WAIT_INTERVAL):
            raise BootstrapError(f"CRD {name} not Established within {timeout:g} s")


def _established(crd: kube.V1CustomResourceDefinition) -> bool:
    conditions = (crd.status and crd.status.conditions) or []
    return any(c.type == "Established" and c.status == "True" for c in conditions)
