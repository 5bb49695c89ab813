"""The process kubelet: `python -m onemachine node` runs a Kubernetes node's pods as local
processes, each in namespaces of its own (see onemachine/README.md)."""
