"""On the real node, the WorkloadManager and the Router run as the chart runs them: a
Deployment each, from images made of the user's builds (image_builds.dockerfile_image,
laid out as docker/Dockerfile and docker/Dockerfile.router lay them out), as their service
accounts (client-go's in-cluster configuration), behind Services with selectors. So a port
forward through the kubelet reaches them (the suite's `port_forward=true`, run_e2e.sh's
`kubectl port-forward`), and a rollout restart restarts the Router.

Sources: volcano-sh/agentcube 939abb5, manifests/charts/base/templates/workloadmanager.yaml
(Deployment 1-123, Service 125-140) and agentcube-router.yaml (Deployment 9-131, Service
133-148), with values.yaml's defaults (images, resources, replicas 1), SPIRE off.

What differs from the chart, and why:
- `hostNetwork: true`: the pods share the cluster's private network namespace, where the
  API server, redis and the OIDC issuer listen on its loopback (the issuer's URL, every
  token's `iss`, is the same inside and out), and each keeps the port it has as a process
  (the WorkloadManager 8090, since both would take 8080 on one network); the Services'
  targetPorts follow. KUBERNETES_SERVICE_HOST/PORT name the API server there: there is no
  kube-proxy for the `kubernetes` Service.
- `strategy: Recreate`: a new pod on the host network cannot bind its port while the old
  one holds it, so a rollout stops the old pod first.
"""

from __future__ import annotations

from typing import Any

from onemachine.cluster.layout import LOOPBACK, SYSTEM_NAMESPACE
from onemachine.cluster.parts import (
    ROUTER_MAX_CONCURRENT_REQUESTS,
    Cluster,
    router_oidc_flags,
)

# values.yaml's image repositories and tag; the images are made under these names.
WORKLOAD_MANAGER_IMAGE = "ghcr.io/volcano-sh/workloadmanager:latest"
ROUTER_IMAGE = "ghcr.io/volcano-sh/agentcube-router:latest"
# (Dockerfile in the checkout, the built file its final stage copies, the image's name)
PART_IMAGES = (
    ("docker/Dockerfile", "workloadmanager", WORKLOAD_MANAGER_IMAGE),
    ("docker/Dockerfile.router", "agentcube-router", ROUTER_IMAGE),
)
# values.yaml's resources of both (router.resources, workloadmanager.resources)
RESOURCES = {
    "limits": {"cpu": "500m", "memory": "512Mi"},
    "requests": {"cpu": "100m", "memory": "128Mi"},
}
CHART_SERVICE_PORT = 8080  # values.yaml:28,58


def _env(values: dict[str, str]) -> list[dict[str, Any]]:
    namespace = {
        "name": "AGENTCUBE_NAMESPACE",
        "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
    }
    return [namespace, *({"name": name, "value": value} for name, value in values.items())]


def _common_env(cluster: Cluster) -> dict[str, str]:
    return {
        "REDIS_ADDR": f"{LOOPBACK}:{cluster.ports.redis}",
        "REDIS_PASSWORD_REQUIRED": "false",  # run_e2e.sh:377-378
        "KUBERNETES_SERVICE_HOST": LOOPBACK,
        "KUBERNETES_SERVICE_PORT": str(cluster.ports.api_server),
    }


def _probe(path: str, port: int, delay: int, period: int) -> dict[str, Any]:
    return {
        "httpGet": {"path": path, "port": port},
        "initialDelaySeconds": delay,
        "periodSeconds": period,
    }


def _deployment(
    name: str,
    service_account: str,
    image: str,
    port: int,
    env: list[dict[str, Any]],
    args: list[str],
    probes: dict[str, Any],
) -> dict[str, Any]:
    labels = {"app": name}
    container = {
        "name": name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "ports": [{"name": "http", "containerPort": port, "protocol": "TCP"}],
        "env": env,
        "args": args,
        "resources": RESOURCES,
        **probes,
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": SYSTEM_NAMESPACE, "labels": labels},
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": service_account,
                    "hostNetwork": True,
                    "containers": [container],
                },
            },
        },
    }


def workload_manager(cluster: Cluster) -> dict[str, Any]:
    """workloadmanager.yaml's Deployment (its probes: /health, 10 s and 5 s delays)."""
    port = cluster.ports.workload_manager
    env = _env({**_common_env(cluster), "JWT_KEY_SECRET_NAMESPACE": SYSTEM_NAMESPACE})
    probes = {
        "livenessProbe": _probe("/health", port, 10, 10),
        "readinessProbe": _probe("/health", port, 5, 5),
    }
    args = [f"--port={port}", "--runtime-class-name="]
    return _deployment(
        "workloadmanager", "workloadmanager", WORKLOAD_MANAGER_IMAGE, port, env, args, probes
    )


def router(cluster: Cluster) -> dict[str, Any]:
    """agentcube-router.yaml's Deployment (its probes: /health/live and /health/ready,
    1 s delay, every 2 s), with the Router's flags as the process gets them."""
    port = cluster.ports.router
    env = _env(
        {
            **_common_env(cluster),
            "WORKLOAD_MANAGER_URL": f"http://{LOOPBACK}:{cluster.ports.workload_manager}",
        }
    )
    probes = {
        "livenessProbe": _probe("/health/live", port, 1, 2),
        "readinessProbe": _probe("/health/ready", port, 1, 2),
    }
    args = [
        f"--port={port}",
        "--debug",
        f"--max-concurrent-requests={ROUTER_MAX_CONCURRENT_REQUESTS}",
        *(router_oidc_flags(cluster) if cluster.router_oidc else ()),
    ]
    return _deployment(
        "agentcube-router", "agentcube-router", ROUTER_IMAGE, port, env, args, probes
    )


def service(name: str, target_port: int) -> dict[str, Any]:
    """The chart's Service of `name`: port 8080 named http, to the pods' port."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": SYSTEM_NAMESPACE, "labels": {"app": name}},
        "spec": {
            "type": "ClusterIP",
            "selector": {"app": name},
            "ports": [
                {
                    "name": "http",
                    "port": CHART_SERVICE_PORT,
                    "targetPort": target_port,
                    "protocol": "TCP",
                }
            ],
        },
    }
