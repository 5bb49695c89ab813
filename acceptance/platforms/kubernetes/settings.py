"""Settings of the Kubernetes platform adapter, read like the suite's own settings: ``-D name``
first, then the environment variable, then the default.

They live beside the suite's table (``acceptance.core.settings.SETTINGS``) rather than in it
because they mean something only with ``platform=kubernetes`` (the adapter declares them:
``acceptance.platforms.kubernetes.ADAPTER``), and ``CLUSTER_DEFAULTS`` are the suite-wide
settings whose sensible value on a cluster differs from the one for localcube.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from acceptance.core.evidence import register_secret
from acceptance.core.settings import (
    ConfigError,
    Setting,
    namespace_name,
    one_of,
    parse_flag,
    parse_seconds,
    parse_url,
    read_setting,
    resource_name,
)
from agentcube_contract.names import is_dns_label

TOKEN_SOURCES = ("static", "service-account", "oidc")

# Suite-wide settings whose default does not fit a cluster: (value, why).
CLUSTER_DEFAULTS: Mapping[str, tuple[str, str]] = {
    "namespace": ("agentcube", "upstream's Kind setup keeps its workloads there"),
    "short_session_timeout": ("30s", "as upstream's echo-agent-short-ttl"),
    "ttl_grace": (
        "90s",
        "the WorkloadManager's GC runs every 15 s and only looks at sandboxes idle for a "
        "minute, so a 30 s timeout ends after 60 to 75 s; then the pod has its 30 s "
        "termination grace period",
    ),
    "request_timeout": (
        "130s",
        "a first call starts a pod; the WorkloadManager gives up after 2 minutes (504)",
    ),
    "ready_timeout": ("60s", "port forwards, and a Router that has just rolled out"),
    "gc_interval": (
        "15s",
        "the WorkloadManager's collector runs every 15 s (upstream "
        "pkg/workloadmanager/server.go:161); agent-sandbox deletes the pod at the end of a "
        "hard lifetime, and the Router answers 502 until the collector's pass",
    ),
    "poll_interval": ("1s", "each probe is three to five API calls"),
    "short_session_lifetime": (
        "60s",
        "longer than the 30 s `short_session_timeout` with room for a pod's start-up, which "
        "the lifetime includes; the GC, every 15 s, then ends the session within `ttl_grace`",
    ),
    "long_task_duration": (
        "120s",
        "longer than the 30 s `short_session_timeout` plus the 60 s the WorkloadManager's GC "
        "looks back and its 15 s interval, so a GC that ends a busy session is caught; longer "
        "than the 60 s an NGINX ingress waits for an answer by default",
    ),
    "sandbox_gone_timeout": (
        "60s",
        "the kill deletes the pod with a one-second grace, so it stays Terminating until its "
        "kubelet has stopped its containers; the kill waits for the killed pod's uid to be "
        "gone, and agent-sandbox may start a new pod under the same name within seconds",
    ),
    "clock_allowance": (
        "1s",
        "upstream stores a session's last activity and its expiry in whole seconds, so a "
        "session may end up to a second early",
    ),
    "overload_hold": (
        "1s",
        "the calls within the limit must still hold their slots when the others arrive, "
        "across the pod network and maybe an ingress",
    ),
    "warm_pool_timeout": ("2m", "a claimed warm-pool pod is replaced by a new pod that must start"),
    "answer_allowance": ("30s", "a call crosses the Router, the pod network and maybe an ingress"),
    "fail_fast": (
        "10s",
        "a call may cross the API server (port forwards), and the Router first dials the "
        "address of the pod that is gone",
    ),
}


@dataclass(frozen=True)
class ServiceRef:
    """A Service by name, and the Service port to reach (None: its first port)."""

    name: str
    port: int | None = None

    def __str__(self) -> str:
        return f"svc/{self.name}" + (f":{self.port}" if self.port else "")


def _service(text: str) -> ServiceRef:
    name, separator, port = text.partition(":")
    if not is_dns_label(name) or (separator and not (port.isdigit() and len(port) <= 5)):
        raise ValueError("is not a Service name, optionally followed by :PORT")
    if separator and not 0 < int(port) < 65536:
        raise ValueError("has a port outside 1-65535")
    return ServiceRef(name, int(port) if separator else None)


def _word(text: str) -> str:
    if not text or any(character.isspace() for character in text):
        raise ValueError("must be one word without whitespace")
    return text


def _path(text: str) -> Path:
    return Path(text).expanduser()


KUBERNETES_SETTINGS: tuple[Setting, ...] = (
    Setting(
        "kubeconfig",
        "AGENTCUBE_KUBECONFIG",
        _path,
        None,
        "Kubeconfig file of the cluster under test.",
        default_text="in-cluster config inside a pod, else `$KUBECONFIG` or `~/.kube/config`",
    ),
    Setting(
        "kube_context",
        "AGENTCUBE_KUBE_CONTEXT",
        _word,
        None,
        "Kubeconfig context to use (`kind-agentcube-e2e` for upstream's Kind setup).",
        default_text="the kubeconfig's current context",
    ),
    Setting(
        "system_namespace",
        "AGENTCUBE_SYSTEM_NAMESPACE",
        namespace_name,
        "agentcube",
        "Namespace where the Router and the WorkloadManager run (the Helm release's).",
    ),
    Setting(
        "port_forward",
        "AGENTCUBE_PORT_FORWARD",
        parse_flag,
        "false",
        "`true`: reach the Router and the WorkloadManager through port forwards that the "
        "suite opens via the Kubernetes API (leave `router_url` unset).",
    ),
    Setting(
        "router_service",
        "AGENTCUBE_ROUTER_SERVICE",
        _service,
        "agentcube-router",
        "Router Service to forward to, as `NAME` or `NAME:PORT`.",
    ),
    Setting(
        "workload_manager_service",
        "AGENTCUBE_WORKLOAD_MANAGER_SERVICE",
        _service,
        "workloadmanager",
        "WorkloadManager Service to forward to, as `NAME` or `NAME:PORT`.",
    ),
    Setting(
        "router_deployment",
        "AGENTCUBE_ROUTER_DEPLOYMENT",
        resource_name,
        "agentcube-router",
        "Router Deployment that the `@disruptive` restart scenario restarts.",
    ),
    Setting(
        "token_source",
        "AGENTCUBE_TOKEN_SOURCE",
        one_of(TOKEN_SOURCES),
        "static",
        "Where the bearer token comes from: `static` (`api_token` as given, or none), "
        "`service-account` (minted with the TokenRequest API), `oidc` (client credentials).",
    ),
    Setting(
        "service_account",
        "AGENTCUBE_SERVICE_ACCOUNT",
        resource_name,
        "e2e-test",
        "Service account in `system_namespace` that `token_source=service-account` mints a "
        "token for (upstream's Kind setup creates `e2e-test`).",
    ),
    Setting(
        "oidc_token_url",
        "AGENTCUBE_OIDC_TOKEN_URL",
        parse_url,
        None,
        "Token endpoint for `token_source=oidc`. An in-cluster URL "
        "(`http://keycloak.agentcube.svc.cluster.local:8080/...`) is reached through a port "
        "forward when `port_forward=true`.",
    ),
    Setting(
        "oidc_client_id",
        "AGENTCUBE_OIDC_CLIENT_ID",
        _word,
        None,
        "OIDC client id for `token_source=oidc` (`agentcube-app` in upstream's Keycloak addon).",
    ),
    Setting(
        "oidc_client_secret",
        "AGENTCUBE_OIDC_CLIENT_SECRET",
        _word,
        None,
        "OIDC client secret; environment only, never printed.",
        secret=True,
    ),
    Setting(
        "agent_image",
        "AGENTCUBE_AGENT_IMAGE",
        _word,
        None,
        "Image of the echo agent's container in the AgentRuntimes the suite creates.",
        default_text="the fixture's (`python:3.12-slim`)",
    ),
    Setting(
        "interpreter_image",
        "AGENTCUBE_INTERPRETER_IMAGE",
        _word,
        None,
        "Image of the CodeInterpreters the suite creates (PicoD).",
        default_text="the fixture's (`picod:latest`, as upstream's Kind setup builds it)",
    ),
    Setting(
        "api_timeout",
        "AGENTCUBE_API_TIMEOUT",
        parse_seconds,
        "30s",
        "Read timeout of one Kubernetes API call (its connect timeout is at most 5 s); "
        "waits poll with many short calls.",
    ),
    Setting(
        "cluster_timeout",
        "AGENTCUBE_CLUSTER_TIMEOUT",
        parse_seconds,
        "5m",
        "How long to wait for the cluster: fixtures usable (image pulls, warm pools), a "
        "rollout finished.",
    ),
)


@dataclass(frozen=True)
class KubernetesSettings:
    """Parsed settings of the adapter; durations in seconds."""

    kubeconfig: Path | None = None
    kube_context: str | None = None
    system_namespace: str = "agentcube"
    port_forward: bool = False
    router_service: ServiceRef = ServiceRef("agentcube-router")
    workload_manager_service: ServiceRef = ServiceRef("workloadmanager")
    router_deployment: str = "agentcube-router"
    token_source: str = "static"
    service_account: str = "e2e-test"
    oidc_token_url: str | None = None
    oidc_client_id: str | None = None
    oidc_client_secret: str | None = dataclasses.field(default=None, repr=False)
    agent_image: str | None = None
    interpreter_image: str | None = None
    api_timeout: float = 30.0
    cluster_timeout: float = 300.0


def named_by(*names: str) -> str:
    """The adapter's settings as a person gives them: `name / AGENTCUBE_NAME`, joined."""
    env_of = {setting.name: setting.env for setting in KUBERNETES_SETTINGS}
    return " and ".join(f"{name} / {env_of[name]}" for name in names)


def load_kubernetes_settings(
    userdata: Mapping[str, str], environ: Mapping[str, str]
) -> KubernetesSettings:
    """Read the adapter's settings; raise ConfigError naming the setting to fix (a secret
    one given as -D among them)."""
    values = {
        setting.name: read_setting(setting, userdata, environ) for setting in KUBERNETES_SETTINGS
    }
    settings = KubernetesSettings(**values)
    register_secret(settings.oidc_client_secret)
    if settings.token_source == "oidc":
        missing = [
            setting
            for setting in KUBERNETES_SETTINGS
            if setting.name.startswith("oidc_") and values[setting.name] is None
        ]
        if missing:
            names = ", ".join(f"{setting.name} ({setting.env})" for setting in missing)
            raise ConfigError(f"setting token_source=oidc needs {names}")
    return settings
