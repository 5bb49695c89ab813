"""The `cluster` subcommand's command line."""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path

from onemachine.cluster import service_forwards
from onemachine.cluster.binaries import BINARIES, NODE_KINDS
from onemachine.cluster.launcher import Options, launch
from plumbing.arguments import positive_duration


def add_cluster_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`python -m onemachine cluster --bin-dir DIR ...`"""
    cluster = commands.add_parser(
        "cluster",
        help="the real AgentCube control plane from your binaries, in a private namespace",
        description=(
            "Start etcd, kube-apiserver, kube-controller-manager, redis, the agent-sandbox "
            "controller, the WorkloadManager, the Router and a process kubelet in one private "
            "network namespace; print the suite's command line; stop everything on exit."
        ),
    )
    cluster.add_argument(
        "--bin-dir",
        type=Path,
        required=True,
        metavar="DIR",
        help=", ".join(binary.name for binary in BINARIES),
    )
    cluster.add_argument(
        "--agentcube-src", type=Path, metavar="DIR", help="volcano-sh/agentcube checkout (its CRDs)"
    )
    cluster.add_argument(
        "--agent-sandbox-src",
        type=Path,
        metavar="DIR",
        help="kubernetes-sigs/agent-sandbox checkout (its CRDs)",
    )
    cluster.add_argument(
        "--state-dir",
        type=Path,
        metavar="DIR",
        help="a new or empty directory for keys, data and logs "
        "(default: a new temporary one, kept)",
    )
    cluster.add_argument(
        "--image",
        action="append",
        default=[],
        metavar="PATTERN=COMMAND",
        help="passed to the node before its defaults 'picod:*=BIN-DIR/picod' "
        "and 'python:*=python3'",
    )
    cluster.add_argument(
        "--dockerfile-image",
        action="append",
        default=[],
        type=dockerfile_image_entry,
        metavar="NAME=DOCKERFILE",
        help="on the real node, one more image made under NAME as DOCKERFILE (a path in "
        "--agentcube-src) lays it out (repeatable)",
    )
    cluster.add_argument(
        "--oidc-clients",
        type=Path,
        metavar="FILE",
        help="a 0600 JSON file of confidential clients the OIDC issuer grants client "
        "credentials to at its token endpoint, as Keycloak's realm agentcube "
        "(passed to it as --clients-file; see docs/one-machine-cluster.md)",
    )
    cluster.add_argument(
        "--forward-service",
        action="append",
        default=[],
        type=service_forwards.parse,
        metavar="NAMESPACE/NAME:PORT",
        help="a free 127.0.0.1 port of the host relayed to that Service's port (repeatable; "
        "the Service may come later); the ports are printed and written to "
        "STATE/service-forwards.json",
    )
    cluster.add_argument(
        "--router-auth",
        choices=("oidc", "none"),
        default="oidc",
        help="oidc (default): the Router checks the issuer's tokens, as the chart's "
        "router.jwt.* set it; none: no external authentication, as the chart without them",
    )
    cluster.add_argument(
        "--node",
        choices=NODE_KINDS,
        default="auto",
        help="real: your kubelet and kube-scheduler (in --bin-dir) with containerd run the "
        "pods as containers (needs root); process: this project's process kubelet runs them "
        "as local processes (runs without root); auto (default): real where its programs are "
        "found and this is root, else process",
    )
    cluster.add_argument(
        "--ready-timeout",
        type=positive_duration,
        default=120.0,
        metavar="DURATION",
        help="how long each part may take to be ready (default 2m)",
    )


def dockerfile_image_entry(text: str) -> tuple[str, str]:
    """`NAME=DOCKERFILE` as (name, path); argparse's error for anything else."""
    name, equals, dockerfile = text.partition("=")
    if not equals or not name or not dockerfile:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=DOCKERFILE")
    return name, dockerfile


def run_cluster(arguments: argparse.Namespace) -> int:
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s: %(message)s"
    )
    state_dir = arguments.state_dir or Path(tempfile.mkdtemp(prefix="localcube-cluster-"))
    options = Options(
        bin_dir=arguments.bin_dir,
        state_dir=state_dir.resolve(),
        sources={
            "--agentcube-src": arguments.agentcube_src,
            "--agent-sandbox-src": arguments.agent_sandbox_src,
        },
        images=tuple(arguments.image),
        dockerfile_images=tuple(arguments.dockerfile_image),
        forwards=tuple(dict.fromkeys(arguments.forward_service)),
        ready_timeout=arguments.ready_timeout,
        oidc_clients=arguments.oidc_clients.resolve() if arguments.oidc_clients else None,
        router_oidc=arguments.router_auth == "oidc",
        node=arguments.node,
    )
    return launch(options)
