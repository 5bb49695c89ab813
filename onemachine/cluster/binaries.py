"""The programs the launcher runs, each named once, with where it comes from.

The launcher builds nothing: every program but redis-server (taken from PATH) must be in the
user's `--bin-dir`. A missing one is reported with the command that builds it in the user's
own checkout, and nothing starts.
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


class MissingBinaries(Exception):
    """Programs the launcher needs and did not find; the message names each and its origin."""


def locate(bin_dir: Path, path: str | None = None) -> dict[str, Path]:
    """Every program by name, or MissingBinaries naming all that are missing."""
    found: dict[str, Path] = {}
    missing: list[str] = []
    for binary in BINARIES:
        candidate = bin_dir / binary.name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            found[binary.name] = candidate.resolve()
        else:
            missing.append(f"  {candidate}: {binary.origin}")
    redis = shutil.which(REDIS.name, path=path)
    if redis is None:
        missing.append(f"  {REDIS.origin}")
    else:
        found[REDIS.name] = Path(redis)
    if missing:
        raise MissingBinaries(
            "missing programs (the launcher builds nothing; nothing was started):\n"
            + "\n".join(missing)
        )
    return found
