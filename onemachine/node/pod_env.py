"""A container's environment as the kubelet makes it: envFrom, then env (values, fieldRef,
secretKeyRef, configMapKeyRef) with $(VAR) expanded, plus what a localcube pod always gets:
POD_IP, HOST (the pod's address) and PORT (the container's first containerPort), and HOSTNAME
as container runtimes set it, each unless the pod sets it itself.

A reference that cannot be resolved raises EnvError, whose message is the kubelet's, for the
container's waiting reason CreateContainerConfigError.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from typing import Any

Obj = dict[str, Any]
Reader = Callable[[str, str], Obj]  # (namespace, name) -> the Secret or ConfigMap, or raises
_EXPANSION = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")
_LABELLED = re.compile(r"^metadata\.(labels|annotations)\['(.+)'\]$")


class EnvError(ValueError):
    """A container's environment cannot be made: a missing Secret, ConfigMap or key."""


class Missing(LookupError):
    """What a Reader raises for an object that does not exist."""


def expand(text: str, env: dict[str, str]) -> str:
    """Kubernetes' $(VAR) expansion: a defined variable is replaced, an undefined reference
    stays as written, and $$ is a literal $."""

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        return env.get(match.group(1), match.group(0))

    return _EXPANSION.sub(replace, text)


def container_env(
    pod: Obj,
    container: Obj,
    *,
    pod_ip: str,
    host_ip: str,
    read_secret: Reader,
    read_config_map: Reader,
) -> dict[str, str]:
    """The whole environment the container starts with (PATH and HOME are the runtime's)."""
    namespace = pod["metadata"]["namespace"]
    sources = _Sources(namespace, read_secret, read_config_map)
    env: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        env.update(sources.env_from(source))
    for variable in container.get("env") or []:
        name = variable["name"]
        if "valueFrom" in variable:
            value = sources.value_from(variable["valueFrom"], pod, pod_ip, host_ip)
            if value is None:  # an optional reference to nothing: the variable is unset
                continue
            env[name] = value
        else:
            env[name] = expand(variable.get("value") or "", env)
    ports = container.get("ports") or []
    defaults = {"POD_IP": pod_ip, "HOST": pod_ip, "HOSTNAME": pod["metadata"]["name"]}
    if ports:
        defaults["PORT"] = str(ports[0]["containerPort"])
    return {**defaults, **env}


class _Sources:
    """Secrets and ConfigMaps of the pod's namespace, each read once per environment."""

    def __init__(self, namespace: str, read_secret: Reader, read_config_map: Reader) -> None:
        self._namespace = namespace
        self._readers = {"Secret": read_secret, "ConfigMap": read_config_map}
        self._read: dict[tuple[str, str], Obj | None] = {}

    def env_from(self, source: Obj) -> dict[str, str]:
        kind, ref = (
            ("Secret", source["secretRef"])
            if "secretRef" in source
            else ("ConfigMap", source["configMapRef"])
        )
        data = self._data(kind, ref["name"], bool(ref.get("optional")))
        prefix = source.get("prefix") or ""
        return {f"{prefix}{key}": value for key, value in (data or {}).items()}

    def value_from(self, source: Obj, pod: Obj, pod_ip: str, host_ip: str) -> str | None:
        if "fieldRef" in source:
            return _field(source["fieldRef"]["fieldPath"], pod, pod_ip, host_ip)
        for kind, key in (("Secret", "secretKeyRef"), ("ConfigMap", "configMapKeyRef")):
            if key in source:
                ref = source[key]
                optional = bool(ref.get("optional"))
                data = self._data(kind, ref["name"], optional)
                if data is None:
                    return None
                if ref["key"] not in data:
                    if optional:
                        return None
                    raise EnvError(
                        f"couldn't find key {ref['key']} in {kind} {self._namespace}/{ref['name']}"
                    )
                return data[ref["key"]]
        raise EnvError(f"valueFrom {sorted(source)} is not supported by the onemachine node")

    def _data(self, kind: str, name: str, optional: bool) -> dict[str, str] | None:
        if (kind, name) not in self._read:
            try:
                self._read[kind, name] = self._readers[kind](self._namespace, name)
            except Missing:
                self._read[kind, name] = None
        obj = self._read[kind, name]
        if obj is None:
            if optional:
                return None
            plural = "secret" if kind == "Secret" else "configmap"
            raise EnvError(f'{plural} "{name}" not found')
        if kind == "Secret":
            return {k: base64.b64decode(v).decode() for k, v in (obj.get("data") or {}).items()}
        return dict(obj.get("data") or {})


def _field(path: str, pod: Obj, pod_ip: str, host_ip: str) -> str:
    metadata, spec = pod["metadata"], pod.get("spec") or {}
    labelled = _LABELLED.match(path)
    if labelled:
        return (metadata.get(labelled.group(1)) or {}).get(labelled.group(2), "")
    fields = {
        "metadata.name": metadata["name"],
        "metadata.namespace": metadata["namespace"],
        "metadata.uid": metadata["uid"],
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", ""),
        "status.podIP": pod_ip,
        "status.podIPs": pod_ip,
        "status.hostIP": host_ip,
        "status.hostIPs": host_ip,
    }
    if path not in fields:
        raise EnvError(f"fieldRef {path!r} is not supported by the onemachine node")
    return fields[path]
