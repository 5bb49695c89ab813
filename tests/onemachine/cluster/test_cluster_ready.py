"""`python -m onemachine cluster` to ready with the stand-in programs (stand_ins.
cluster_bin_dir), as the e2e runner's tests use it: cluster.json, the admin's host
kubeconfig, a Deployment's pod run by the real node and its rollout, and a stop that leaves
nothing."""

from __future__ import annotations

import json
import stat
import uuid
from pathlib import Path

import pytest
import requests
from kubernetes import client as kube
from kubernetes import config as kube_config
from kubernetes.client.rest import ApiException

from onemachine.cluster.layout import NODE_NAME
from tests.onemachine.cluster.running import RunningCluster, running_cluster  # noqa: F401
from tests.processes import alive
from tests.waiting import wait_until

NAMESPACE = "agentcube"
SLEEP_UNTIL_SIGTERM = (
    "import signal, sys, time; signal.signal(signal.SIGTERM, lambda *_: sys.exit(0)); "
    "time.sleep(600)"
)


def sleeper(marker: str, **env: str) -> dict:
    """A container of python3 that sleeps until SIGTERM, named by `marker` on its command
    line (without a handler, its PID 1 would ignore SIGTERM and wait out the grace)."""
    return {
        "name": "sleeper",
        "image": "python:3.12-slim",
        "command": ["python3", "-c", SLEEP_UNTIL_SIGTERM, marker],
        "env": [{"name": name, "value": value} for name, value in env.items()],
    }


def deployment(name: str, container: dict) -> dict:
    template = {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": template,
        },
    }


def rolled_out(apps: kube.AppsV1Api, name: str) -> bool:
    """What `kubectl rollout status` waits for."""
    found = apps.read_namespaced_deployment(name, NAMESPACE)
    status, spec = found.status, found.spec
    return bool(
        status
        and (status.observed_generation or 0) >= found.metadata.generation
        and (status.updated_replicas or 0) == spec.replicas
        and (status.replicas or 0) == spec.replicas
        and (status.available_replicas or 0) == spec.replicas
    )


def ready_pods(core: kube.CoreV1Api, name: str) -> list[kube.V1Pod]:
    pods = core.list_namespaced_pod(NAMESPACE, label_selector=f"app={name}").items
    return [
        pod
        for pod in pods
        if not pod.metadata.deletion_timestamp
        and any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])
    ]


def processes_naming(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_the_stand_in_cluster_gets_ready_runs_a_deployment_and_stops_clean(
    running_cluster: RunningCluster,  # noqa: F811
) -> None:
    cluster, state = running_cluster, running_cluster.state_dir
    info = json.loads((state / "cluster.json").read_text())
    assert set(info) == {
        "api_server",
        "router",
        "workload_manager",
        "oidc_issuer",
        "admin_kubeconfig",
        "suite_kubeconfig",
        "token_dir",
        "logs",
    }
    assert info["api_server"].startswith("https://127.0.0.1:")
    for name in ("router", "workload_manager", "oidc_issuer"):
        assert info[name].startswith("http://127.0.0.1:"), info
    # The issuer's URL as the Router is given it, served on the host: every token's `iss`.
    discovery = requests.get(f"{info['oidc_issuer']}/.well-known/openid-configuration", timeout=5)
    assert discovery.json()["issuer"] == info["oidc_issuer"], discovery.text
    assert info["oidc_issuer"].endswith("/realms/agentcube")
    assert info["admin_kubeconfig"] == str(state / "kubeconfigs" / "admin.host.yaml")
    assert stat.S_IMODE(Path(info["admin_kubeconfig"]).stat().st_mode) == 0o600
    assert Path(info["token_dir"]).is_dir() and Path(info["suite_kubeconfig"]).is_file()

    admin = kube_config.new_client_from_config(config_file=info["admin_kubeconfig"])
    core, apps = kube.CoreV1Api(admin), kube.AppsV1Api(admin)
    assert admin.configuration.host == info["api_server"]
    assert {NAMESPACE, "agentcube-neighbour"} <= {
        ns.metadata.name for ns in core.list_namespace().items
    }
    suite = kube.CoreV1Api(kube_config.new_client_from_config(config_file=info["suite_kubeconfig"]))
    suite.list_namespaced_pod(NAMESPACE)  # its role, bound there by the bootstrap
    with pytest.raises(ApiException) as refused:
        suite.list_namespaced_pod("default")
    assert refused.value.status == 403

    marker = f"stand-in-cluster-{uuid.uuid4()}"
    apps.create_namespaced_deployment(NAMESPACE, deployment("sleeper", sleeper(marker)))
    wait_until(lambda: rolled_out(apps, "sleeper"), "the Deployment to roll out", timeout=60)
    (first,) = ready_pods(core, "sleeper")
    assert first.spec.node_name == NODE_NAME
    assert first.metadata.owner_references[0].name == "sleeper"
    assert processes_naming(marker), "the node runs no process of the pod"

    # `kubectl set env`: a new template, a new pod, the old one gone once it is Ready
    apps.patch_namespaced_deployment(
        "sleeper", NAMESPACE, deployment("sleeper", sleeper(marker, API_TOKEN="set-later"))
    )

    def only_a_new_pod() -> bool:
        pods = core.list_namespaced_pod(NAMESPACE, label_selector="app=sleeper").items
        ready = [pod.metadata.name for pod in ready_pods(core, "sleeper")]
        return len(pods) == 1 and ready not in ([], [first.metadata.name])

    wait_until(
        lambda: rolled_out(apps, "sleeper") and only_a_new_pod(),
        "the Deployment to roll out its new template alone",
        timeout=60,
    )

    pids = cluster.part_pids()
    assert cluster.stop() == 0, cluster.stderr.read_text()
    assert not any(alive(pid) for pid in pids.values())
    assert processes_naming(marker) == [], "a pod's process outlived the stop"
    assert not (state / "cluster.json").exists()
