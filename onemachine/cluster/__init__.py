"""`python -m onemachine cluster`: the real AgentCube control plane on one machine.

From binaries the user provides (binaries.py), the launcher starts etcd, kube-apiserver,
kube-controller-manager, redis, the agent-sandbox controller, AgentCube's WorkloadManager and
Router, and the process kubelet (`python -m onemachine node`), all in one private
network namespace that holds only loopback (network.py); the suite on the host reaches the
API server, the Router and the WorkloadManager through 127.0.0.1 ports relayed into it
(relay.py). It builds nothing and fetches nothing.
"""
