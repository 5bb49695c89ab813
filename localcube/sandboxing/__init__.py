"""The sandbox machinery: a runtime's sandbox as a real local process, started in its own
session, probed until it serves and ended without orphans (launcher), forked from the PicoD
template for a code interpreter (picod_template), with a bare Python on its PATH
(bare_python) and a loopback port no other sandbox holds (ports)."""
