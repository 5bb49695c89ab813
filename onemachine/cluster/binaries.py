"""The programs the launcher runs, each named once, with where it comes from, and which
node runs the pods.

The launcher builds nothing: every program but redis-server (taken from PATH) must be in the
user's `--bin-dir`. A missing one is reported with the command that builds it in the user's
own checkout, and nothing starts. The real node (the user's kubelet and kube-scheduler, with
containerd) is chosen where its programs are found and the launcher runs as root; the
process node otherwise (`choose_node`).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Binary:
    """A program in the bin-dir, and how the user gets it."""

    name: str
    origin: str


BINARIES: tuple[Binary, ...] = (
    Binary(
        "etcd",
        "envtest's etcd: `setup-envtest use -p path 1.36.x` (controller-runtime's "
        "tools/setup-envtest) prints the directory that holds it; or an etcd release",
    ),
    Binary(
        "kube-apiserver",
        "envtest's kube-apiserver (in the same directory as its etcd), or "
        "`make WHAT=cmd/kube-apiserver` in a kubernetes checkout: _output/bin/kube-apiserver",
    ),
    Binary(
        "kube-controller-manager",
        "`make WHAT=cmd/kube-controller-manager` in a kubernetes checkout: "
        "_output/bin/kube-controller-manager",
    ),
    Binary(
        "agent-sandbox-controller",
        "`go build -o agent-sandbox-controller ./cmd/agent-sandbox-controller` in a "
        "kubernetes-sigs/agent-sandbox checkout",
    ),
    Binary(
        "workloadmanager",
        "`go build -o workloadmanager ./cmd/workload-manager` in a volcano-sh/agentcube checkout",
    ),
    Binary(
        "agentcube-router",
        "`go build -o agentcube-router ./cmd/router` in a volcano-sh/agentcube checkout",
    ),
    Binary(
        "picod",
        "`go build -o picod ./cmd/picod` in a volcano-sh/agentcube checkout, as its "
        "docker/Dockerfile.picod does (no make target builds it)",
    ),
)

REDIS = Binary("redis-server", "redis-server on PATH (Debian: `apt-get install redis-server`)")

# The real node's programs in the bin-dir: from the Kubernetes tree kube-apiserver came from.
REAL_NODE_BINARIES: tuple[Binary, ...] = (
    Binary(
        "kubelet",
        "`make WHAT=cmd/kubelet` in the kubernetes checkout kube-apiserver came from: "
        "_output/bin/kubelet (or `go build ./cmd/kubelet` there)",
    ),
    Binary(
        "kube-scheduler",
        "`make WHAT=cmd/kube-scheduler` in the same kubernetes checkout: "
        "_output/bin/kube-scheduler",
    ),
)
# The Services' network on the real node, used where found (real_node.py): a pod reaches a
# Service by its name (cluster DNS) and ClusterIP (kube-proxy), as upstream's MCP server does.
SERVICE_NETWORK_BINARIES: tuple[Binary, ...] = (
    Binary(
        "kube-proxy",
        "`make WHAT=cmd/kube-proxy` in the kubernetes checkout kube-apiserver came from",
    ),
    Binary("coredns", "`go install github.com/coredns/coredns@VERSION` (CoreDNS's own go.mod)"),
)
CONTAINERD = Binary(
    "containerd",
    "containerd in --bin-dir or on PATH (Debian: `apt-get install containerd runc "
    "containernetworking-plugins`)",
)
NODE_KINDS = ("auto", "real", "process")


class MissingBinaries(Exception):
    """Programs the launcher needs and did not find; the message names each and its origin."""


@dataclass(frozen=True)
class NodeChoice:
    """Which node runs the pods, and why (logged at the start)."""

    real: bool
    why: str


def choose_node(
    requested: str, bin_dir: Path, path: str | None = None, is_root: bool | None = None
) -> NodeChoice:
    """`--node auto` (the real node where its programs are found and this is root),
    `real` (MissingBinaries when one is missing or this is not root) or `process`."""
    root = os.geteuid() == 0 if is_root is None else is_root
    if requested == "process":
        return NodeChoice(False, "the process node, as --node process asks")
    _found, missing = _find_real_node(bin_dir, path)
    if requested == "real":
        if not root:
            missing["root"] = (
                "  root: the real node mounts cgroups and runs containerd; run as root, or "
                "give --node process (the process node runs without root)"
            )
        if missing:
            raise MissingBinaries(
                "--node real cannot run here (nothing was started):\n" + "\n".join(missing.values())
            )
        return NodeChoice(True, "the real node, as --node real asks")
    if missing:
        names = ", ".join(missing)
        return NodeChoice(False, f"the process node: the real node's {names} not found")
    if not root:
        return NodeChoice(False, "the process node: the real node needs root")
    return NodeChoice(True, "the real node: kubelet, kube-scheduler and containerd found")


def locate(bin_dir: Path, path: str | None = None, real_node: bool = False) -> dict[str, Path]:
    """Every program by name (with the real node's when `real_node`, and its Services'
    network where found), or MissingBinaries naming all that are missing."""
    found, missing = _find(bin_dir, BINARIES)
    redis = shutil.which(REDIS.name, path=path)
    if redis is None:
        missing[REDIS.name] = f"  {REDIS.origin}"
    else:
        found[REDIS.name] = Path(redis)
    if real_node:
        node_found, node_missing = _find_real_node(bin_dir, path)
        found.update(node_found)
        missing.update(node_missing)
        found.update(_find(bin_dir, SERVICE_NETWORK_BINARIES)[0])  # only where found
    if missing:
        raise MissingBinaries(
            "missing programs (the launcher builds nothing; nothing was started):\n"
            + "\n".join(missing.values())
        )
    return found


def _find(bin_dir: Path, binaries: tuple[Binary, ...]) -> tuple[dict[str, Path], dict[str, str]]:
    """The programs found, and a line naming each missing one with its origin."""
    found: dict[str, Path] = {}
    missing: dict[str, str] = {}
    for binary in binaries:
        candidate = bin_dir / binary.name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            found[binary.name] = candidate.resolve()
        else:
            missing[binary.name] = f"  {candidate}: {binary.origin}"
    return found, missing


def _find_real_node(bin_dir: Path, path: str | None) -> tuple[dict[str, Path], dict[str, str]]:
    """The kubelet and kube-scheduler from the bin-dir, containerd from it or PATH."""
    found, missing = _find(bin_dir, REAL_NODE_BINARIES)
    own = bin_dir / CONTAINERD.name
    if own.is_file() and os.access(own, os.X_OK):
        found[CONTAINERD.name] = own.resolve()
    elif (containerd := shutil.which(CONTAINERD.name, path=path)) is not None:
        found[CONTAINERD.name] = Path(containerd)
    else:
        missing[CONTAINERD.name] = f"  {CONTAINERD.origin}"
    return found, missing
