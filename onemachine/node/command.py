"""`python -m onemachine node`: the process kubelet's command line, and its run until SIGTERM
or Ctrl-C."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from ipaddress import IPv4Network
from pathlib import Path

from kubernetes import config
from kubernetes.config.config_exception import ConfigException
from urllib3.exceptions import HTTPError

from agentcube_contract.durations import positive_duration
from onemachine.netns import NamespaceUnavailable, NotPrivateNamespace
from onemachine.node.agent import NodeAgent, Timing
from onemachine.node.api import ApiError, NodeApi
from onemachine.node.images import ImageMap, ImageMapError
from onemachine.node.pod_network import GATEWAY, PodNetwork, PodNetworkError
from onemachine.node.pod_runtime import PodRuntime
from onemachine.node.pod_worker import Backoff, NodeContext
from onemachine.node.service_proxy import ServiceProxy

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


def add_parser(commands: argparse._SubParsersAction) -> None:
    node = commands.add_parser("node", help="run a process kubelet: pods as local processes")
    node.add_argument("--kubeconfig", required=True, type=Path, help="the API server to join")
    node.add_argument("--name", default="localcube-node", help="the Node's name")
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


def run(arguments: argparse.Namespace) -> int:
    """Run the node until SIGTERM or SIGINT; 2 for bad input or a machine that cannot."""
    try:
        images = ImageMap.parse(arguments.image)
        if not arguments.kubeconfig.is_file():
            raise ConfigException(f"--kubeconfig {arguments.kubeconfig}: no such file")
        api_client = config.new_client_from_config(config_file=str(arguments.kubeconfig))
        network = PodNetwork.open(service_cidr=arguments.service_cidr)
    except (
        ImageMapError,
        ConfigException,
        OSError,
        NotPrivateNamespace,
        NamespaceUnavailable,
        PodNetworkError,
    ) as error:
        print(f"onemachine node: {error}", file=sys.stderr)
        return 2
    api_client.configuration.connection_pool_maxsize = 64  # watches plus every pod's calls
    api = NodeApi(api_client)
    proxy = None
    if arguments.service_cidr is not None:
        try:
            proxy = ServiceProxy(api, network).start()
        except (NamespaceUnavailable, PodNetworkError) as error:
            print(f"onemachine node: no Service proxy: {error}", file=sys.stderr)
            api.close()
            return 2
    runtime = PodRuntime(arguments.root, network, proxy.hosts if proxy else None)
    backoff = Backoff(arguments.restart_backoff, arguments.restart_backoff * _BACKOFF_GROWTH)
    context = NodeContext(api, runtime, images, arguments.name, str(GATEWAY), backoff)
    agent = NodeAgent(context, Timing(heartbeat=arguments.heartbeat))
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    try:
        agent.start()
    except (ApiError, HTTPError, OSError) as error:
        print(f"onemachine node: the Node could not be registered: {error}", file=sys.stderr)
        if proxy:
            proxy.stop()
        api.close()
        return 1
    print(f"onemachine node {arguments.name} ready", file=sys.stderr, flush=True)
    stop.wait()
    agent.stop()
    runtime.close()
    if proxy:
        proxy.stop()
    api.close()
    return 0
