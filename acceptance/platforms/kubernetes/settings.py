"""Settings of the Kubernetes platform adapter, declared and read as the suite's own but
meaning something only with ``platform=kubernetes``; and the suite settings whose sensible
value on a cluster differs (``CLUSTER_DEFAULTS``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from acceptance.core.evidence import register_secret
from acceptance.core.settings import (
    ConfigError,
    declared,
    namespace_name,
    one_of,
    parse_flag,
    parse_seconds,
    parse_token,
    parse_url,
    resource_name,
    setting,
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


@dataclass(frozen=True)
class KubernetesSettings:
    """Durations in seconds. Made, it registers its secret and checks that ``oidc`` has what
    it needs (ConfigError)."""

    # The cluster.
    kubeconfig: Path | None = setting(
        lambda text: Path(text).expanduser(),
        None,
        "Kubeconfig file of the cluster under test.",
        shown="in-cluster config inside a pod, else `$KUBECONFIG` or `~/.kube/config`",
    )
    kube_context: str | None = setting(
        parse_token,
        None,
        "Kubeconfig context to use (`kind-agentcube-e2e` for upstream's Kind setup).",
        shown="the kubeconfig's current context",
    )
    system_namespace: str = setting(
        namespace_name,
        "agentcube",
        "Namespace where the Router and the WorkloadManager run (the Helm release's).",
    )

    # How the suite reaches the Router and the WorkloadManager.
    port_forward: bool = setting(
        parse_flag,
        "false",
        "`true`: reach the Router and the WorkloadManager through port forwards that the "
        "suite opens via the Kubernetes API (leave `router_url` unset).",
    )
    router_service: ServiceRef = setting(
        _service, "agentcube-router", "Router Service to forward to, as `NAME` or `NAME:PORT`."
    )
    workload_manager_service: ServiceRef = setting(
        _service,
        "workloadmanager",
        "WorkloadManager Service to forward to, as `NAME` or `NAME:PORT`.",
    )
    router_deployment: str = setting(
        resource_name,
        "agentcube-router",
        "Router Deployment that the `@disruptive` restart scenario restarts.",
    )

    # Tokens.
    token_source: str = setting(
        one_of(TOKEN_SOURCES),
        "static",
        "Where the bearer token comes from: `static` (`api_token` as given, or none), "
        "`service-account` (minted with the TokenRequest API), `oidc` (client credentials).",
    )
    service_account: str = setting(
        resource_name,
        "e2e-test",
        "Service account in `system_namespace` that `token_source=service-account` mints a "
        "token for (upstream's Kind setup creates `e2e-test`).",
    )
    oidc_token_url: str | None = setting(
        parse_url,
        None,
        "Token endpoint for `token_source=oidc`. An in-cluster URL "
        "(`http://keycloak.agentcube.svc.cluster.local:8080/...`) is reached through a port "
        "forward when `port_forward=true`.",
    )
    oidc_client_id: str | None = setting(
        parse_token,
        None,
        "OIDC client id for `token_source=oidc` (`agentcube-app` in upstream's Keycloak addon).",
    )
    oidc_client_secret: str | None = setting(
        parse_token, None, "OIDC client secret; environment only, never printed.", secret=True
    )

    # Runtimes the suite creates.
    agent_image: str | None = setting(
        parse_token,
        None,
        "Image of the echo agent's container in the AgentRuntimes the suite creates.",
        shown="the fixture's (`python:3.12-slim`)",
    )
    interpreter_image: str | None = setting(
        parse_token,
        None,
        "Image of the CodeInterpreters the suite creates (PicoD).",
        shown="the fixture's (`picod:latest`, as upstream's Kind setup builds it)",
    )

    # Timings.
    api_timeout: float = setting(
        parse_seconds,
        "30s",
        "Read timeout of one Kubernetes API call (its connect timeout is at most 5 s); "
        "waits poll with many short calls.",
    )
    cluster_timeout: float = setting(
        parse_seconds,
        "5m",
        "How long to wait for the cluster: fixtures usable (image pulls, warm pools), a "
        "rollout finished.",
    )

    def __post_init__(self) -> None:
        register_secret(self.oidc_client_secret)
        oidc = [s for s in KUBERNETES_SETTINGS if s.name.startswith("oidc_")]
        missing = [f"{s.name} ({s.env})" for s in oidc if getattr(self, s.name) is None]
        if self.token_source == "oidc" and missing:
            raise ConfigError(f"setting token_source=oidc needs {', '.join(missing)}")


KUBERNETES_SETTINGS = declared(KubernetesSettings)


def named_by(*names: str) -> str:
    """The adapter's settings as a person gives them: `name / AGENTCUBE_NAME`, joined."""
    env_of = {setting.name: setting.env for setting in KUBERNETES_SETTINGS}
    return " and ".join(f"{name} / {env_of[name]}" for name in names)
