"""The one command line that runs the acceptance suite against the launched cluster."""

from __future__ import annotations

import shlex
from pathlib import Path

from onemachine.cluster.layout import LOOPBACK, NEIGHBOUR_NAMESPACE
from onemachine.cluster.parts import ROUTER_MAX_CONCURRENT_REQUESTS


def suite_command(
    kubeconfig: Path,
    router_port: int,
    workload_manager_port: int,
    token_dir: Path,
    port_forward: bool = False,
) -> str:
    """`./dev suite -D platform=kubernetes ...`: the suite calls the Router and the
    WorkloadManager at the host side of the relay, or, with `port_forward` (the real node,
    where they are pods), through port forwards of its own to their Services, as a Kind
    user runs it; the API server through the suite user's kubeconfig; it reads the
    issuer's tokens from their files (token_dir), so no token is ever on the line."""
    urls = {
        "router_url": f"http://{LOOPBACK}:{router_port}",
        "workload_manager_url": f"http://{LOOPBACK}:{workload_manager_port}",
    }
    settings = {
        "platform": "kubernetes",
        "kubeconfig": str(kubeconfig),
        **({} if port_forward else urls),
        "port_forward": "true" if port_forward else "false",
        "neighbour_namespace": NEIGHBOUR_NAMESPACE,
        "max_concurrent_requests": str(ROUTER_MAX_CONCURRENT_REQUESTS),
        "token_dir": str(token_dir),
    }
    return "./dev suite " + " ".join(
        f"-D {shlex.quote(f'{name}={value}')}" for name, value in settings.items()
    )
