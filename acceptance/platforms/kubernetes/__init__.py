"""The ``kubernetes`` platform adapter: the suite against a real AgentCube cluster, on the
official ``kubernetes`` client. The README's "Running against a real cluster" tells how to
run it and what it does not claim.

One concern a module; import from the modules themselves (``settings`` loads no Kubernetes
client, so the suite can read the settings of a run that never touches a cluster):

- ``settings``: the adapter's settings, ``with_cluster_defaults``, the README's table rows;
- ``connection``: kubeconfig or in-cluster config, and the probe that names what to fix;
- ``api``: the Kubernetes calls the adapter makes, and their errors;
- ``objects``, ``observation``: sandboxes of sessions, owner references, warm pools;
- ``fixtures``: runtime resources created when missing, deleted only when created here;
- ``port_forward``, ``tokens``, ``rollout``, ``evidence``: a concern each;
- ``cluster``: the run's hold on the cluster (``Cluster``);
- ``platform``: the per-scenario adapter (``KubernetesPlatform``).
"""
