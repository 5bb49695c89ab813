"""`python -m onemachine node`: the process kubelet's command line, and its run until SIGTERM
or Ctrl-C."""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import sys
import threading
from ipaddress import IPv4Network
from pathlib import Path

from kubernetes import config
from kubernetes.config.config_exception import ConfigException
from urllib3.exceptions import HTTPError

from onemachine.netns import NamespaceUnavailable, NotPrivateNamespace
from onemachine.node.agent import NodeAgent, Timing
from onemachine.node.api import ApiError, NodeApi
from onemachine.node.images import ImageMap, ImageMapError
from onemachine.node.kubelet_server import KubeletApiError, KubeletServer, KubeletTls
from onemachine.node.pod_network import GATEWAY, PodNetwork, PodNetworkError
from onemachine.node.pod_runtime import PodRuntime
from onemachine.node.pod_worker import Backoff, NodeContext
from onemachine.node.service_proxy import ServiceProxy
from plumbing.arguments import positive_duration

_LOG = logging.getLogger("onemachine.node")
_BACKOFF_GROWTH = 30  # the kubelet's back-off tops out at 30 times its start: 10 s to 5 min
# Where a service CIDR may lie: the benchmarking block's half that holds no pod (RFC 2544).
_SERVICE_BLOCK = IPv4Network("198.19.0.0/16")


def service_cidr(value: str) -> IPv4Network:
    """An argparse type: a network inside 198.19.0.0/16."""
    try:
        network = IPv4Network(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{value!r}: {error}") from None
    if not network.subnet_of(_SERVICE_BLOCK):
        raise argparse.ArgumentTypeError(
            f"{value!r}: must lie inside {_SERVICE_BLOCK} (the benchmarking block beside the "
            "pods' 198.18.0.0/16: never the machine's network)"
        )
    return network


_TLS_FLAGS = ("tls_cert_file", "tls_private_key_file", "client_ca_file")


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    node = commands.add_parser("node", help="run a process kubelet: pods as local processes")
    node.add_argument("--kubeconfig", required=True, type=Path, help="the API server to join")
    node.add_argument("--name", default="onemachine-node", help="the Node's name")
    node.add_argument(
        "--root", required=True, type=Path, help="directory of the pods' scratch roots and logs"
    )
    node.add_argument(
        "--image",
        action="append",
        default=[],
        metavar="PATTERN=COMMAND",
        help="run images matching PATTERN (fnmatch) with the local COMMAND as entrypoint, "
        "e.g. 'python:*=python3' (repeatable); any other image fails its pod",
    )
    node.add_argument(
        "--service-cidr",
        type=service_cidr,
        metavar="CIDR",
        help="the API server's --service-cluster-ip-range: proxy every Service with a "
        "ClusterIP in it and name them in pods' /etc/hosts (default: no Services)",
    )
    node.add_argument(
        "--restart-backoff",
        type=positive_duration,
        default=10.0,
        metavar="DURATION",
        help="first crash-loop back-off, doubling up to 30 times it (default 10s, the kubelet's)",
    )
    node.add_argument(
        "--heartbeat",
        type=positive_duration,
        default=10.0,
        metavar="DURATION",
        help="how often the Lease and the Node's status are renewed (default 10s)",
    )
    api = node.add_argument_group(
        "the kubelet API (container logs) on the node's address, port 10250; all three or none"
    )
    api.add_argument("--tls-cert-file", type=Path, help="its serving certificate (PEM)")
    api.add_argument("--tls-private-key-file", type=Path, help="that certificate's key (PEM)")
    api.add_argument(
        "--client-ca-file",
        type=Path,
        help="the CA a caller's client certificate must chain to (the API server's)",
    )


def _kubelet_tls(arguments: argparse.Namespace) -> KubeletTls | None:
    """The kubelet API's TLS files, None without them; KubeletApiError if only some given."""
    given = [getattr(arguments, flag) for flag in _TLS_FLAGS]
    if not any(given):
        return None
    if not all(given):
        missing = [
            f"--{flag.replace('_', '-')}"
            for flag, value in zip(_TLS_FLAGS, given, strict=True)
            if not value
        ]
        raise KubeletApiError(f"the kubelet API needs {' and '.join(missing)} too")
    return KubeletTls(*given)


class _CannotRun(Exception):
    """Why the node stops before it is ready, and its exit code."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


def run(arguments: argparse.Namespace) -> int:
    """Run the node until SIGTERM or SIGINT; 2 for bad input or a machine that cannot, 1 if
    the Node cannot be registered.

    Each part registers its clean-up on one exit stack as it starts, so a start that fails
    and a stop release the same parts, in the reverse order of their start."""
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    with contextlib.ExitStack() as parts:
        try:
            _start(arguments, parts)
        except _CannotRun as failure:
            print(f"onemachine node: {failure}", file=sys.stderr)
            return failure.code
        print(f"onemachine node {arguments.name} ready", file=sys.stderr, flush=True)
        stop.wait()
    return 0


def _start(arguments: argparse.Namespace, parts: contextlib.ExitStack) -> None:
    """Start the node's parts, each stopped by `parts`; raises _CannotRun."""
    try:
        images = ImageMap.parse(arguments.image)
        tls = _kubelet_tls(arguments)
        serving = tls.context() if tls else None
        if not arguments.kubeconfig.is_file():
            raise ConfigException(f"--kubeconfig {arguments.kubeconfig}: no such file")
        api_client = config.new_client_from_config(config_file=str(arguments.kubeconfig))
        api_client.configuration.connection_pool_maxsize = 64  # watches plus every pod's calls
        api = NodeApi(api_client)
        parts.callback(api.close)
        network = PodNetwork.open(service_cidr=arguments.service_cidr)
    except (
        ImageMapError,
        KubeletApiError,
        ConfigException,
        OSError,
        NotPrivateNamespace,
        NamespaceUnavailable,
        PodNetworkError,
    ) as error:
        raise _CannotRun(str(error)) from None
    proxy = None
    if arguments.service_cidr is not None:
        try:
            proxy = ServiceProxy(api, network).start()
        except (NamespaceUnavailable, PodNetworkError) as error:
            raise _CannotRun(f"no Service proxy: {error}") from None
        parts.callback(proxy.stop)
    runtime = PodRuntime(arguments.root, network, proxy.hosts if proxy else None)
    parts.callback(runtime.close)
    backoff = Backoff(arguments.restart_backoff, arguments.restart_backoff * _BACKOFF_GROWTH)
    context = NodeContext(api, runtime, images, arguments.name, str(GATEWAY), backoff)
    agent = NodeAgent(context, Timing(heartbeat=arguments.heartbeat))
    parts.callback(agent.stop)  # after the kubelet API's stop, which reads its pods
    if serving is None:
        _LOG.warning("no kubelet API (no --tls-cert-file): logs through the API server fail")
    else:
        server = KubeletServer(agent.pod, serving, str(GATEWAY))
        parts.callback(server.stop)
        try:
            server.start()
        except OSError as error:
            raise _CannotRun(f"the kubelet API: {error}") from None
    try:
        agent.start()
    except (ApiError, HTTPError, OSError) as error:
        raise _CannotRun(f"the Node could not be registered: {error}", code=1) from None
