"""The ``kubernetes`` platform adapter: the suite against a real AgentCube cluster, on the
official ``kubernetes`` client. The README's "Running against a real cluster" tells how to
run it and what it does not claim.

One concern a module; import from the modules themselves (``settings`` loads no Kubernetes
client, so the suite can read the settings of a run that never touches a cluster):

- this module: the adapter as the run chooses it (``ADAPTER``, ``acceptance.platforms.registry``);
- ``settings``: the adapter's settings and the suite settings' defaults on a cluster;
- ``connection``: kubeconfig or in-cluster config, and the probe that names what to fix;
- ``api``: the Kubernetes calls the adapter makes, and their errors;
- ``objects``, ``observation``: sandboxes of sessions, owner references, warm pools;
- ``fixtures``: runtime resources created when missing, deleted only when created here;
- ``port_forward``, ``tokens``, ``rollout``, ``evidence``: a concern each;
- ``cluster``: the run's hold on the cluster (``Cluster``);
- ``platform``: the per-scenario adapter (``KubernetesPlatform``).
"""

from __future__ import annotations

from collections.abc import Mapping

from acceptance.platforms.base import Target
from acceptance.platforms.kubernetes.settings import (
    CLUSTER_DEFAULTS,
    KUBERNETES_SETTINGS,
    load_kubernetes_settings,
)
from acceptance.platforms.registry import Adapter, RunSettings


def open_cluster(run: RunSettings, environ: Mapping[str, str]) -> Target:
    """Connect to the cluster (ClusterTarget.open)."""
    # Imported here: it loads the kubernetes client, which no other run needs.
    from acceptance.platforms.kubernetes.platform import ClusterTarget

    return ClusterTarget.open(run.suite, run.adapter_settings, environ)


ADAPTER = Adapter(
    "kubernetes",
    open_cluster,
    settings=KUBERNETES_SETTINGS,
    load_settings=load_kubernetes_settings,
    suite_defaults=CLUSTER_DEFAULTS,
    defaults_heading="on a cluster",
    # The workers use this process's port forwards and token rather than open and mint
    # their own.
    worker_settings={"port_forward": "false", "token_source": "static"},
    docs="docs/kubernetes.md",
)
