"""Connecting to the cluster (kubeconfig or in-cluster config), then one probe that tells an
unreachable cluster, rejected credentials and one without AgentCube apart, each in one line
naming the setting to fix."""

from __future__ import annotations

from collections.abc import Mapping

from kubernetes import client, config
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.incluster_config import SERVICE_HOST_ENV_NAME

from acceptance.core.settings import ConfigError
from acceptance.platforms.kubernetes.api import AGENT_SANDBOX_VERSIONS, KubeApi, KubeError, Resource
from acceptance.platforms.kubernetes.settings import KubernetesSettings, named_by

DEFAULT_KUBECONFIG = "~/.kube/config"
# The API groups the adapter needs, the versions it can use (the first served is used), and
# what installs each.
REQUIRED_GROUPS = {
    Resource.AGENT_RUNTIME.group: (
        (Resource.AGENT_RUNTIME.version,),
        "AgentCube's CRDs (helm install agentcube manifests/charts/base)",
    ),
    Resource.SANDBOX.group: (AGENT_SANDBOX_VERSIONS, "agent-sandbox (its manifest.yaml)"),
    Resource.SANDBOX_CLAIM.group: (
        AGENT_SANDBOX_VERSIONS,
        "agent-sandbox's extensions (its extensions.yaml)",
    ),
}
_FIX_CONNECTION = f"check {named_by('kubeconfig', 'kube_context')}"


class ClusterUnreachable(ConfigError):
    """No Kubernetes API answered at the configured address."""


def connect(settings: KubernetesSettings, environ: Mapping[str, str]) -> KubeApi:
    """Raises ConfigError (ClusterUnreachable when nothing answers)."""
    configuration = client.Configuration()
    source = _load(configuration, settings, environ)
    # A blackholed address fails after three connect timeouts rather than the default four.
    configuration.retries = 2
    api = KubeApi(configuration, settings.api_timeout)
    try:
        _probe(api, f"the Kubernetes API at {configuration.host} ({source})")
    except BaseException:
        api.close()
        raise
    return api


def _load(
    configuration: client.Configuration,
    settings: KubernetesSettings,
    environ: Mapping[str, str],
) -> str:
    """Fill the configuration in; say how it was found."""
    in_cluster = environ.get(SERVICE_HOST_ENV_NAME) and settings.kubeconfig is None
    if in_cluster and not settings.kube_context:
        try:
            config.load_incluster_config(client_configuration=configuration)
        except ConfigException as error:
            raise ConfigError(f"in-cluster config: {error}; {_FIX_CONNECTION}") from None
        return "in-cluster config"
    path = str(settings.kubeconfig or environ.get("KUBECONFIG") or DEFAULT_KUBECONFIG)
    source = f"kubeconfig {path}" + (
        f", context {settings.kube_context}" if settings.kube_context else ""
    )
    try:
        config.load_kube_config(
            config_file=path,
            context=settings.kube_context,
            client_configuration=configuration,
            persist_config=False,  # never write to the user's kubeconfig
        )
    except (ConfigException, OSError) as error:
        raise ConfigError(f"cannot use {source}: {error}; {_FIX_CONNECTION}") from None
    return source


def _probe(api: KubeApi, where: str) -> None:
    """Find the version of each required group the cluster serves, and use it."""
    for group, (versions, installed_by) in REQUIRED_GROUPS.items():
        for version in versions:
            try:
                api.api_resources(group, version)
            except KubeError as error:
                if error.status == 404:
                    continue
                raise _probe_error(where, error) from None
            api.served[group] = version
            break
        else:
            looked_for = ", ".join(f"{group}/{version}" for version in versions)
            raise ConfigError(f"{where} serves none of {looked_for}: install {installed_by}")


def served_agent_sandbox(api: KubeApi) -> str:
    return "agent-sandbox API " + ", ".join(
        f"{resource.group}/{api.version(resource)}"
        for resource in (Resource.SANDBOX, Resource.SANDBOX_CLAIM)
    )


def _probe_error(where: str, error: KubeError) -> ConfigError:
    if error.status == 0:
        return ClusterUnreachable(f"{where} is unreachable: {error.detail}; {_FIX_CONNECTION}")
    if error.status == 401:
        return ConfigError(f"{where} rejected the credentials (401); {_FIX_CONNECTION}")
    return ConfigError(f"{where}: {error}")
