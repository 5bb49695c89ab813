"""The AgentCube contract's own vocabulary, which the suite, localcube and onemachine import
because upstream defines it: Go durations (``durations``), RFC 1123 names as Kubernetes
applies them (``names``), the session header and the Router's code for an unknown session
(``session``), the PicoD command template of a PicoD of one's own (``picod_command``), and
the TLS of a Kubernetes API server as the Router's in-cluster client trusts it
(``certificates``), which localcube's identity endpoint and the one-machine cluster's
kube-apiserver both present.

It imports none of them: a fidelity change in localcube cannot change what the suite
accepts from its users, and the suite runs without localcube.
"""
