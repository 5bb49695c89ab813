"""AgentRuntime and CodeInterpreter manifests: the YAML a user applies to a cluster.

Parsing turns each resource into a `Runtime`, the part of the spec localcube acts on.
Every refusal names the source, the resource and the field, so a user can fix the YAML.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import yaml

from agentcube_contract.durations import parse_duration
from agentcube_contract.names import is_dns_label, is_dns_subdomain

log = logging.getLogger("localcube.manifests")
API_GROUP = "runtime.agentcube.volcano.sh"
AGENT_RUNTIME = "AgentRuntime"
CODE_INTERPRETER = "CodeInterpreter"
PLURALS = {AGENT_RUNTIME: "agentruntimes", CODE_INTERPRETER: "codeinterpreters"}
# The annotation that makes a CodeInterpreter stateful in localcube: one Jupyter kernel per
# session serves POST /api/run_code (a localcube extension; a cluster ignores annotations).
INTERPRETER_ANNOTATION = "localcube.agentcube.volcano.sh/interpreter"
INTERPRETER_KINDS = ("stateless", "stateful")
DEFAULT_SESSION_TIMEOUT = 15 * 60.0
DEFAULT_MAX_SESSION_DURATION = 8 * 3600.0
_QUANTITY = re.compile(r"^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$")
_QUANTITY_FACTORS = {
    None: 1,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
}


class ManifestError(ValueError):
    """A manifest localcube refuses; the message names source, resource and field."""


@dataclass(frozen=True)
class TargetPort:
    path_prefix: str
    port: int
    protocol: str


@dataclass(frozen=True)
class Runtime:
    """What localcube needs of one AgentRuntime or CodeInterpreter."""

    kind: str
    namespace: str
    name: str
    ports: tuple[TargetPort, ...]
    session_timeout: float
    max_session_duration: float
    command: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    memory_limit_bytes: int | None = None
    readiness_path: str | None = None
    warm_pool_size: int = 0
    auth_mode: str = "picod"
    stateful: bool = False
    source: str = "<api>"

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.kind, self.namespace, self.name)

    @property
    def sandbox_kind(self) -> str:
        """What upstream creates for a session: a SandboxClaim on a warm pool, else a
        Sandbox (pkg/workloadmanager/workload_builder.go:365-394)."""
        return "SandboxClaim" if self.warm_pool_size > 0 else "Sandbox"

    def describe(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "sessionTimeout": self.session_timeout,
            "maxSessionDuration": self.max_session_duration,
            "warmPoolSize": self.warm_pool_size,
        }


def load_paths(paths: Iterable[str | Path]) -> list[Runtime]:
    """Runtimes from files and directories (every *.yaml / *.yml below a directory)."""
    runtimes: list[Runtime] = []
    for path in map(Path, paths):
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml"))
        elif path.is_file():
            files = [path]
        else:
            raise ManifestError(f"{path}: no such file or directory")
        for file in files:
            runtimes.extend(parse_documents(file.read_text(encoding="utf-8"), str(file)))
    return runtimes


def parse_documents(text: str, source: str) -> list[Runtime]:
    """Runtimes from one YAML (or JSON) stream; other kinds are skipped."""
    try:
        documents = [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except yaml.YAMLError as error:
        raise ManifestError(f"{source}: not valid YAML: {error}") from error
    return [runtime for runtime in _runtimes(documents, source)]


def _runtimes(documents: list[Any], source: str) -> Iterator[Runtime]:
    for index, document in enumerate(documents):
        where = f"{source} (document {index + 1})"
        if not isinstance(document, dict):
            raise ManifestError(f"{where}: a resource must be a mapping")
        if document.get("kind") not in PLURALS:
            log.warning(
                "%s: skipped a %s: localcube serves only %s",
                where,
                document.get("kind"),
                " and ".join(PLURALS),
            )
            continue
        yield _parse_resource(document, where)


def _parse_resource(document: dict[str, Any], where: str) -> Runtime:
    kind = document["kind"]
    metadata = document.get("metadata")
    if not isinstance(metadata, dict):
        raise ManifestError(f"{where}: {kind}: metadata is required")
    name = metadata.get("name")
    resource = f"{kind} {metadata.get('namespace', 'default')}/{name}"
    check = _Checker(f"{where}: {resource}")
    check.that(
        is_dns_subdomain(name),
        "metadata.name",
        "must be a DNS subdomain (at most 253 lower case letters, digits, '-' and '.')",
    )
    namespace = metadata.get("namespace", "default")
    check.that(
        is_dns_label(namespace),
        "metadata.namespace",
        "must be a DNS label (at most 63 lower case letters, digits and '-')",
    )
    api_version = document.get("apiVersion", "")
    check.that(
        isinstance(api_version, str) and api_version.startswith(API_GROUP + "/"),
        "apiVersion",
        f"must be {API_GROUP}/v1alpha1",
    )
    spec = check.mapping(document.get("spec"), "spec", "is required")
    common = {
        "namespace": namespace,
        "name": name,
        "session_timeout": check.duration(spec, "sessionTimeout", DEFAULT_SESSION_TIMEOUT),
        "max_session_duration": check.duration(
            spec, "maxSessionDuration", DEFAULT_MAX_SESSION_DURATION
        ),
        "source": where,
    }
    if kind == AGENT_RUNTIME:
        return _agent_runtime(spec, check, common)
    return _code_interpreter(spec, check, {**common, "stateful": _stateful(metadata, check)})


def _stateful(metadata: dict[str, Any], check: _Checker) -> bool:
    annotations = check.mapping(
        metadata.get("annotations") or {}, "metadata.annotations", "must be a mapping"
    )
    kind = annotations.get(INTERPRETER_ANNOTATION, "stateless")
    check.that(
        kind in INTERPRETER_KINDS,
        f"metadata.annotations[{INTERPRETER_ANNOTATION}]",
        f"must be {' or '.join(INTERPRETER_KINDS)}",
    )
    return bool(kind == "stateful")


def _agent_runtime(spec: dict[str, Any], check: _Checker, common: dict[str, Any]) -> Runtime:
    ports = check.ports(spec.get("targetPort"), "spec.targetPort", required=True)
    pod_spec = check.mapping(
        (spec.get("podTemplate") or {}).get("spec"), "spec.podTemplate.spec", "is required"
    )
    containers: Any = pod_spec.get("containers")
    check.that(
        isinstance(containers, list) and bool(containers),
        "spec.podTemplate.spec.containers",
        "needs at least one container",
    )
    container = containers[0]
    where = "spec.podTemplate.spec.containers[0]"
    check.that(isinstance(container, dict), where, "must be a mapping")
    command = [*(container.get("command") or []), *(container.get("args") or [])]
    check.that(
        bool(command) and all(isinstance(part, str) for part in command),
        f"{where}.command",
        "is required: localcube runs the container's command and args as a local process",
    )
    probe = ((container.get("readinessProbe") or {}).get("httpGet") or {}).get("path")
    return Runtime(
        kind=AGENT_RUNTIME,
        ports=ports,
        command=tuple(command),
        env=check.env(container.get("env"), f"{where}.env"),
        memory_limit_bytes=check.memory_limit(container.get("resources"), f"{where}.resources"),
        readiness_path=probe if isinstance(probe, str) else None,
        **common,
    )


def _code_interpreter(spec: dict[str, Any], check: _Checker, common: dict[str, Any]) -> Runtime:
    template = check.mapping(spec.get("template"), "spec.template", "is required")
    check.that(
        isinstance(template.get("image"), str) and bool(template.get("image")),
        "spec.template.image",
        "is required",
    )
    warm = spec.get("warmPoolSize", 0)
    check.that(
        isinstance(warm, int) and not isinstance(warm, bool) and 0 <= warm <= 100,
        "spec.warmPoolSize",
        "must be a whole number from 0 to 100",
    )
    auth_mode = spec.get("authMode") or "picod"
    check.that(auth_mode in ("picod", "none"), "spec.authMode", "must be 'picod' or 'none'")
    default_ports = [{"pathPrefix": "/", "port": 8080, "protocol": "HTTP"}]
    return Runtime(
        kind=CODE_INTERPRETER,
        ports=check.ports(spec.get("ports") or default_ports, "spec.ports", required=True),
        env=check.env(template.get("environment"), "spec.template.environment"),
        memory_limit_bytes=check.memory_limit(template.get("resources"), "spec.template.resources"),
        warm_pool_size=warm,
        auth_mode=auth_mode,
        **common,
    )


class _Checker:
    """Field checks that raise ManifestError naming the resource and the field."""

    def __init__(self, resource: str) -> None:
        self.resource = resource

    def that(self, condition: bool, field_path: str, problem: str) -> None:
        if not condition:
            raise ManifestError(f"{self.resource}: {field_path} {problem}")

    def mapping(self, value: Any, field_path: str, problem: str) -> dict[str, Any]:
        """The value, when it is a mapping."""
        self.that(isinstance(value, dict), field_path, problem)
        return cast(dict[str, Any], value)

    def duration(self, spec: dict[str, Any], key: str, default: float) -> float:
        value = spec.get(key)
        if value is None:
            return default
        try:
            seconds = parse_duration(value)
        except ValueError as error:
            raise ManifestError(f"{self.resource}: spec.{key}: {error}") from error
        self.that(seconds > 0, f"spec.{key}", "must be positive")
        return seconds

    def ports(self, value: Any, field_path: str, required: bool) -> tuple[TargetPort, ...]:
        self.that(
            isinstance(value, list) and (bool(value) or not required),
            field_path,
            "needs at least one port",
        )
        ports = []
        for index, entry in enumerate(value):
            where = f"{field_path}[{index}]"
            self.that(isinstance(entry, dict), where, "must be a mapping")
            port = entry.get("port")
            self.that(
                isinstance(port, int) and 0 < port < 65536,
                f"{where}.port",
                "must be a port number from 1 to 65535",
            )
            protocol = str(entry.get("protocol") or "HTTP").upper()
            self.that(
                protocol == "HTTP",
                f"{where}.protocol",
                "must be HTTP (localcube does not serve sandboxes over HTTPS)",
            )
            prefix = entry.get("pathPrefix") or "/"
            self.that(
                isinstance(prefix, str) and prefix.startswith("/"),
                f"{where}.pathPrefix",
                "must start with '/'",
            )
            ports.append(TargetPort(path_prefix=prefix, port=port, protocol=protocol))
        return tuple(ports)

    def env(self, value: Any, field_path: str) -> dict[str, str]:
        if value is None:
            return {}
        self.that(isinstance(value, list), field_path, "must be a list of {name, value}")
        env = {}
        for index, entry in enumerate(value):
            ok = isinstance(entry, dict) and isinstance(entry.get("name"), str)
            self.that(ok, f"{field_path}[{index}].name", "is required")
            env[entry["name"]] = str(entry.get("value", ""))
        return env

    def memory_limit(self, resources: Any, field_path: str) -> int | None:
        limit = ((resources or {}).get("limits") or {}).get("memory")
        if limit is None:
            return None
        match = _QUANTITY.match(str(limit))
        self.that(
            match is not None, f"{field_path}.limits.memory", f"is not a memory quantity: {limit!r}"
        )
        assert match is not None  # checked above
        return int(float(match.group(1)) * _QUANTITY_FACTORS[match.group(2)])
