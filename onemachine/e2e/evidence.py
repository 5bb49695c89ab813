"""What run_e2e.sh collects when a test failed (collect_component_logs, run_e2e.sh:170-205),
and more: each part's log, and for every pod of the cluster its description and each
container's log, the previous instance's too when it restarted. Environment values are
left out of the descriptions: the MCP pod's API_TOKEN is one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from kubernetes import client as kube
from kubernetes.client.exceptions import ApiException

REDACTED = "(value not collected)"


def collect(api: kube.ApiClient, parts_logs: Path, artifacts: Path) -> list[str]:
    """Everything above into `artifacts`; a line for each thing that could not be read."""
    artifacts.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    for log in sorted(parts_logs.glob("*.log")):
        shutil.copy(log, artifacts / f"part-{log.name}")
    core = kube.CoreV1Api(api)
    try:
        pods = core.list_pod_for_all_namespaces().items
    except ApiException as error:
        return [f"pods: could not be listed: {error.status} {error.reason}"]
    for pod in pods:
        namespace, name = pod.metadata.namespace, pod.metadata.name
        described = api.sanitize_for_serialization(pod)
        for kind in ("containers", "initContainers", "ephemeralContainers"):
            for container in described.get("spec", {}).get(kind, []):
                for variable in container.get("env", []):
                    if "value" in variable:
                        variable["value"] = REDACTED
        (artifacts / f"pod-{namespace}-{name}.json").write_text(
            json.dumps(described, indent=2), encoding="utf-8"
        )
        restarts = {s.name: s.restart_count for s in (pod.status.container_statuses or [])}
        for container in pod.spec.containers:
            for previous in (False, True) if restarts.get(container.name) else (False,):
                suffix = "-previous" if previous else ""
                target = artifacts / f"pod-{namespace}-{name}-{container.name}{suffix}.log"
                try:
                    text = core.read_namespaced_pod_log(
                        name,
                        namespace,
                        container=container.name,
                        previous=previous,
                        timestamps=True,
                        _preload_content=False,
                    ).data.decode("utf-8", errors="replace")
                except ApiException as error:
                    problems.append(
                        f"{namespace}/{name} {container.name}{suffix}: {error.status} "
                        f"{(error.body or error.reason or '')[:200]}"
                    )
                    continue
                target.write_text(text, encoding="utf-8")
    return problems
