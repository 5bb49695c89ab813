"""Small programs the launcher's tests put in a bin-dir in place of the real binaries.

Each is a Python script under the real program's name that reads the flags the launcher
gives it, so the tests run the launcher's own command lines: `serving` serves the part's
readiness path where the flags say (HTTP, or HTTPS with the --tls-cert-file the launcher
made) after a delay; `exiting` fails at once with a message; `silent` runs and never serves.

`cluster_bin_dir` is the bin-dir of a whole cluster that gets to ready: the programs of
tests/onemachine/cluster/programs/ (an API server on fake_api, a controller-manager with the
controllers the cluster needs, and the health endpoints of the rest), and `redis_path` a
directory for PATH with a redis-server answering PING, for a machine without one.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
import textwrap
from pathlib import Path

from onemachine.cluster.binaries import BINARIES

ROOT = Path(__file__).resolve().parents[3]
PROGRAMS = "tests.onemachine.cluster.programs"
# A CRD of each checkout, as its crds/ directory holds them (the fields the API server and
# the client's models need).
CRDS = {
    "agentcube/manifests/charts/base/crds": ("runtime.agentcube.volcano.sh", "AgentRuntime"),
    "agent-sandbox/k8s/crds": ("agents.x-k8s.io", "Sandbox"),
}

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


def program(module: str) -> str:
    """A script running `main()` of tests/onemachine/cluster/programs/`module` from this
    checkout, whatever the .venv's path says."""
    return (
        f"import sys\nsys.path.insert(0, {str(ROOT)!r})\n"
        f"from {PROGRAMS}.{module} import main\nmain()\n"
    )


def cluster_bin_dir(directory: Path) -> Path:
    """Every binary a cluster needs to reach ready (picod stays `silent`: only the node runs
    it, for an image the tests do not use)."""
    health = program("serving")
    return bin_dir(
        directory,
        etcd=health,
        kube_apiserver=program("kube_apiserver"),
        kube_controller_manager=program("kube_controller_manager"),
        agent_sandbox_controller=health,
        workloadmanager=health,
        agentcube_router=health,
    )


def redis_path(directory: Path) -> str:
    """The PATH of the cluster's tests: the machine's, ahead of it a directory with a
    stand-in redis-server when the machine has none (CI installs Debian's)."""
    path = os.environ.get("PATH", "")
    if shutil.which("redis-server", path=path):
        return path
    directory.mkdir(parents=True, exist_ok=True)
    write(directory / "redis-server", program("redis_server"))
    return f"{directory}{os.pathsep}{path}"


def bin_dir(directory: Path, **bodies: str) -> Path:
    """Every binary of the launcher's table, each `silent` unless `bodies` names it
    (by its name with `_` for `-`)."""
    directory.mkdir(parents=True, exist_ok=True)
    for binary in BINARIES:
        write(directory / binary.name, bodies.get(binary.name.replace("-", "_"), silent()))
    return directory


def checkouts(directory: Path) -> tuple[Path, Path]:
    """An agentcube and an agent-sandbox checkout holding one CRD file each."""
    for inside, (group, kind) in CRDS.items():
        crds = directory / inside
        crds.mkdir(parents=True)
        (crds / "crd.yaml").write_text(crd(group, kind), encoding="utf-8")
    return directory / "agentcube", directory / "agent-sandbox"


def crd(group: str, kind: str) -> str:
    plural = f"{kind.lower()}s"
    return textwrap.dedent(
        f"""\
        apiVersion: apiextensions.k8s.io/v1
        kind: CustomResourceDefinition
        metadata:
          name: {plural}.{group}
        spec:
          group: {group}
          names: {{kind: {kind}, listKind: {kind}List, plural: {plural}, singular: {kind.lower()}}}
          scope: Namespaced
          versions:
            - name: v1alpha1
              served: true
              storage: true
              schema:
                openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}
        """
    )
