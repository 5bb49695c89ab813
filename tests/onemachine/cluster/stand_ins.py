"""Small programs the launcher's tests put in a bin-dir in place of the real binaries.

Each is a Python script under the real program's name that reads the flags the launcher
gives it, so the tests run the launcher's own command lines: `serving` serves the part's
readiness path where the flags say (HTTP, or HTTPS with the --tls-cert-file the launcher
made) after a delay; `exiting` fails at once with a message; `silent` runs and never serves.
"""

from __future__ import annotations

import stat
import sys
import textwrap
from pathlib import Path

from onemachine.cluster.binaries import BINARIES

_SERVING = textwrap.dedent(
    """\
    import http.server, ssl, sys, time
    flags = dict(a.removeprefix("--").split("=", 1) for a in sys.argv[1:] if "=" in a)
    time.sleep(DELAY)
    if "listen-client-urls" in flags:  # etcd
        host, port = flags["listen-client-urls"].removeprefix("http://").split(":")
        paths, context = ("/health",), None
    else:  # kube-apiserver
        host, port = flags["bind-address"], flags["secure-port"]
        paths = ("/readyz",)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(flags["tls-cert-file"], flags["tls-private-key-file"])

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path in paths else 404)
            self.end_headers()
            self.wfile.write(b"ok")

        do_POST = do_GET

    server = http.server.HTTPServer((host, int(port)), Handler)
    if context:
        server.socket = context.wrap_socket(server.socket, server_side=True)
    print("serving", host, port, flush=True)
    server.serve_forever()
    """
)

_EXITING = textwrap.dedent(
    """\
    import sys
    print("E1201 run.go:72] error: stand-in refuses to start", flush=True)
    sys.exit(3)
    """
)

_SILENT = textwrap.dedent(
    """\
    import time
    print("starting, and never ready", flush=True)
    while True:
        time.sleep(1)
    """
)


def write(path: Path, body: str) -> Path:
    path.write_text(f"#!{sys.executable}\n{body}", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def serving(delay: float = 0.0) -> str:
    return _SERVING.replace("DELAY", repr(delay))


def exiting() -> str:
    return _EXITING


def silent() -> str:
    return _SILENT


def bin_dir(directory: Path, **bodies: str) -> Path:
    """Every binary of the launcher's table, each `silent` unless `bodies` names it
    (by its name with `_` for `-`)."""
    directory.mkdir(parents=True, exist_ok=True)
    for binary in BINARIES:
        write(directory / binary.name, bodies.get(binary.name.replace("-", "_"), silent()))
    return directory


def checkouts(directory: Path) -> tuple[Path, Path]:
    """An agentcube and an agent-sandbox checkout holding one CRD file each."""
    agentcube = directory / "agentcube"
    sandbox = directory / "agent-sandbox"
    for crds in (agentcube / "manifests/charts/base/crds", sandbox / "k8s/crds"):
        crds.mkdir(parents=True)
        (crds / "crd.yaml").write_text("kind: CustomResourceDefinition\n", encoding="utf-8")
    return agentcube, sandbox
