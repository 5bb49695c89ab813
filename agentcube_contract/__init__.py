"""The AgentCube contract's own vocabulary, which both the suite and localcube import because
upstream defines it: Go durations (``durations``), RFC 1123 names as Kubernetes applies them
(``names``), the session header and the Router's code for an unknown session (``session``),
and the PicoD command template of a PicoD of one's own (``picod_command``).

It imports neither side: a fidelity change in localcube cannot change what the suite
accepts from its users, and the suite runs without localcube.
"""
