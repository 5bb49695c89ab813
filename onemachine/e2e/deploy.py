"""What run_e2e.sh puts in the cluster before and between its tests, through the API server
as the admin: the e2e-test service account and its token, the AgentRuntimes and the
CodeInterpreter, and the in-cluster MCP Deployment with its rollouts."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import yaml
from kubernetes import client as kube
from kubernetes import utils as kube_utils
from kubernetes.client.exceptions import ApiException

from onemachine.cluster.readiness import wait_until
from onemachine.e2e import checkout as rendering
from onemachine.e2e.checkout import Checkout

E2E_ACCOUNT = "e2e-test"
TOKEN_SECONDS = 24 * 3600  # kubectl create token e2e-test --duration=24h (run_e2e.sh:502)
POLL = 0.5
CONFLICT_RETRIES = 5


class DeployError(Exception):
    """The API server refused a manifest, or a rollout did not finish; the message says which."""


def workload_documents(checkout: Checkout, namespace: str) -> list[dict[str, Any]]:
    """echo-agent, echo-agent-short-ttl and e2e-code-interpreter, rendered as run_e2e.sh
    renders them (run_e2e.sh:421-432)."""
    echo = checkout.read(rendering.ECHO_AGENT)
    texts = (
        rendering.workload_fixture(echo, namespace),
        rendering.workload_fixture(rendering.short_ttl_echo_agent(echo), namespace),
        rendering.workload_fixture(checkout.read(rendering.CODE_INTERPRETER), namespace),
    )
    return [document for text in texts for document in yaml.safe_load_all(text) if document]


def mcp_documents(
    checkout: Checkout, system_namespace: str, workload_namespace: str
) -> list[dict[str, Any]]:
    text = rendering.mcp_deployment(
        checkout.read(rendering.MCP_DEPLOYMENT), system_namespace, workload_namespace
    )
    return [document for document in yaml.safe_load_all(text) if document]


def apply(api: kube.ApiClient, documents: Iterable[dict[str, Any]]) -> None:
    """`kubectl apply` of run_e2e.sh on its fresh cluster: each object created (one that
    exists already is kept, which on a fresh cluster never happens). Custom resources go
    through the plural their CRD names; the rest through the client's own kinds."""
    plurals = _custom_plurals(api)
    for document in documents:
        kind, namespace = document["kind"], document["metadata"].get("namespace")
        group, _, version = document["apiVersion"].rpartition("/")
        try:
            plural = plurals.get((group, kind))
            if plural is None:
                kube_utils.create_from_dict(api, document)
            else:
                kube.CustomObjectsApi(api).create_namespaced_custom_object(
                    group, version, namespace, plural, document
                )
        except kube_utils.FailToCreateError as failure:
            _refused(document, failure.api_exceptions[0])
        except ApiException as error:
            _refused(document, error)


def _custom_plurals(api: kube.ApiClient) -> dict[tuple[str, str], str]:
    """{(group, kind): plural} of every CRD of the cluster; a kind not in it is built in."""
    crds = kube.ApiextensionsV1Api(api).list_custom_resource_definition().items
    return {(crd.spec.group, crd.spec.names.kind): crd.spec.names.plural for crd in crds}


def _refused(document: dict[str, Any], error: ApiException) -> None:
    if error.status == 409:
        return
    metadata = document["metadata"]
    raise DeployError(
        f"the API server refused {document['kind']} {metadata.get('namespace', '')}/"
        f"{metadata['name']}: {error.status} {error.reason}: {error.body}"
    ) from error


def e2e_service_account(api: kube.ApiClient, namespace: str) -> None:
    """`kubectl create serviceaccount e2e-test` and its binding to the workloadmanager
    ClusterRole (run_e2e.sh:417-418), each `|| true`: one that exists is kept."""
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "e2e-test-binding"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "workloadmanager",
        },
        "subjects": [{"kind": "ServiceAccount", "name": E2E_ACCOUNT, "namespace": namespace}],
    }
    account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": E2E_ACCOUNT, "namespace": namespace},
    }
    apply(api, [account, binding])


def e2e_token(api: kube.ApiClient, namespace: str) -> str:
    """`kubectl create token e2e-test --duration=24h` (run_e2e.sh:502): a TokenRequest."""
    request = kube.AuthenticationV1TokenRequest(
        spec=kube.V1TokenRequestSpec(audiences=[], expiration_seconds=TOKEN_SECONDS)
    )
    answer = kube.CoreV1Api(api).create_namespaced_service_account_token(
        E2E_ACCOUNT, namespace, request
    )
    return answer.status.token


def set_env(api: kube.ApiClient, namespace: str, name: str, variable: str, value: str) -> None:
    """`kubectl set env deployment/NAME VARIABLE=VALUE` (run_e2e.sh:682): the variable set in
    every container of the pod template, a new rollout."""
    apps = kube.AppsV1Api(api)
    for attempt in range(CONFLICT_RETRIES):
        deployment = apps.read_namespaced_deployment(name, namespace)
        for container in deployment.spec.template.spec.containers:
            kept = [e for e in (container.env or []) if e.name != variable]
            container.env = [*kept, kube.V1EnvVar(name=variable, value=value)]
        try:
            apps.replace_namespaced_deployment(name, namespace, deployment)
            return
        except ApiException as error:  # 409: the controller wrote its status meanwhile
            if error.status != 409 or attempt == CONFLICT_RETRIES - 1:
                raise


def wait_rollout(api: kube.ApiClient, namespace: str, name: str, timeout: float) -> None:
    """`kubectl rollout status deployment/NAME`: done when the controller has seen the latest
    generation and every replica is updated and available (kubectl's own test)."""
    apps = kube.AppsV1Api(api)
    started = time.monotonic()

    def rolled_out() -> bool:
        deployment = apps.read_namespaced_deployment(name, namespace)
        status, wanted = deployment.status or kube.V1DeploymentStatus(), deployment.spec.replicas
        return (
            (status.observed_generation or 0) >= (deployment.metadata.generation or 0)
            and (status.updated_replicas or 0) == wanted
            and (status.replicas or 0) == wanted
            and (status.available_replicas or 0) == wanted
        )

    if not wait_until(rolled_out, timeout=timeout, interval=POLL):
        status = (
            apps.read_namespaced_deployment(name, namespace).status or kube.V1DeploymentStatus()
        )
        raise DeployError(
            f"deployment {namespace}/{name} did not roll out within "
            f"{time.monotonic() - started:.0f} s: replicas {status.replicas or 0}, updated "
            f"{status.updated_replicas or 0}, available {status.available_replicas or 0}"
        )
