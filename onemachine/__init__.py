"""The one-machine cluster: the real AgentCube control plane from a maintainer's builds on
one machine (`cluster/`), with pods run as local processes by a process kubelet (`node/`),
in network namespaces of its own (`netns`). It shares only `agentcube_contract` with the
suite and with localcube (see README.md, "The one-machine cluster")."""
