"""localcube: an embedded, single-machine AgentCube.

The Router, WorkloadManager and PicoD wire contract of volcano-sh/agentcube served from
one process, with sandboxes that are real local processes. Not a security boundary.
"""
