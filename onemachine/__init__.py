"""The one-machine cluster: the real AgentCube control plane from a maintainer's builds on
one machine (`cluster/`), with pods run as local processes by a process kubelet (`node/`),
in network namespaces of its own (`netns`). Of this repository it uses only
`agentcube_contract`, `plumbing` and the OIDC issuer (`oidc_issuer`), never the suite or
localcube
(module map: onemachine/README.md)."""
