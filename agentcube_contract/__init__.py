"""The AgentCube contract's own vocabulary, which the suite, localcube and onemachine import
because upstream defines it: Go durations (``durations``), RFC 1123 names as Kubernetes
applies them (``names``), the session header and the Router's code for an unknown session
(``session``) and the PicoD command template of a PicoD of one's own (``picod_command``).
The plumbing the programs share beside it (certificates, argparse types) is `plumbing`.

It imports none of them: a fidelity change in localcube cannot change what the suite
accepts from its users, and the suite runs without localcube.
"""
