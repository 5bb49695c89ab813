"""The health endpoints of etcd, the agent-sandbox controller, the WorkloadManager and the
Router, each where the launcher's flags say (onemachine/cluster/parts.py) and at the path its
probe asks; the program is told by its name in the bin-dir."""

from __future__ import annotations

import http.server
import sys
import threading
from pathlib import Path

from tests.onemachine.cluster.programs.flags import parse, wait_for_sigterm


def address(program: str, flags: dict[str, str]) -> tuple[str, int, tuple[str, ...]]:
    """host, port and the paths that answer 200, for the program `program`."""
    if program == "etcd":
        host, port = flags["listen-client-urls"].removeprefix("http://").split(":")
        return host, int(port), ("/health",)
    if program == "agent-sandbox-controller":
        host, port = flags["health-probe-bind-address"].rsplit(":", 1)
        return host, int(port), ("/readyz", "/healthz")
    if program == "workloadmanager":
        return "127.0.0.1", int(flags["port"]), ("/health",)
    if program == "agentcube-router":
        return "127.0.0.1", int(flags["port"]), ("/health/ready", "/health/live")
    raise SystemExit(f"stand-in: no health endpoint known for {program}")


def main() -> None:
    host, port, paths = address(Path(sys.argv[0]).name, parse())

    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            found = self.path in paths
            self.send_response(200 if found else 404)
            self.end_headers()
            self.wfile.write(b"ok" if found else b"404 page not found\n")

        def log_message(self, format: str, *args: object) -> None:
            print(format % args, flush=True)

    server = http.server.ThreadingHTTPServer((host, port), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"serving {', '.join(paths)} on {host}:{port}", flush=True)
    wait_for_sigterm()
    server.shutdown()
