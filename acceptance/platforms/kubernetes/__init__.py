"""The ``kubernetes`` platform adapter: the suite against a real AgentCube cluster, on the
official ``kubernetes`` client (docs/kubernetes.md). One concern a module, each saying its
own; ``settings`` loads no Kubernetes client, so a run that never touches a cluster can read
them, and ``cluster`` (the run's Cluster, each scenario's platform, and the run's target) is
imported only here, when the run chooses this platform."""

from __future__ import annotations

from collections.abc import Mapping

from acceptance.platforms.base import Target
from acceptance.platforms.kubernetes.settings import CLUSTER_DEFAULTS, KubernetesSettings
from acceptance.platforms.registry import Adapter, RunSettings


def open_cluster(run: RunSettings, environ: Mapping[str, str]) -> Target:
    from acceptance.platforms.kubernetes.cluster import ClusterTarget

    return ClusterTarget.open(run.suite, run.adapter_settings, environ)


ADAPTER = Adapter(
    "kubernetes",
    open_cluster,
    settings_class=KubernetesSettings,
    suite_defaults=CLUSTER_DEFAULTS,
    defaults_heading="on a cluster",
    # The workers share this process's port forwards and token.
    worker_settings={"port_forward": "false", "token_source": "static"},
    docs="docs/kubernetes.md",
)
