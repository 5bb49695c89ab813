"""The tests' CRI client: crictl (kubernetes-sigs/cri-tools), the CRI's own command-line
client, built at set-up from the Go module proxy with `go install` at a pinned version
and kept in ~/.cache/onemachine/tools/ (Debian has no crictl package).

Why crictl rather than Python stubs generated from cri-api's api.proto: crictl is what
people debug a kubelet's runtime with, and its `exec` and `attach` go through containerd's
streaming server (the path a kubelet's exec and port-forward take), which a gRPC client
alone would not prove; it adds no Python dependency. It runs in the runtime's network
namespace (the streaming server listens on that namespace's 127.0.0.1).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from onemachine.containers.runtime import ContainerRuntime

CRI_TOOLS = "sigs.k8s.io/cri-tools/cmd/crictl"
CRICTL_VERSION = "v1.34.0"
_GO_ELSEWHERE = (Path("/usr/local/go/bin/go"),)  # Go's own installer's place, off PATH in CI


def tools_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "onemachine" / "tools"


def crictl_binary() -> Path:
    """crictl CRICTL_VERSION, built once (about a minute on 2 cores); the test is skipped,
    saying why, where Go is missing."""
    target = tools_dir() / f"crictl-{CRICTL_VERSION}" / "crictl"
    if target.exists():
        return target
    go = shutil.which("go") or next((str(path) for path in _GO_ELSEWHERE if path.exists()), None)
    if go is None:
        pytest.skip("needs Go to build crictl (the CRI's client) from the Go module proxy")
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.exists():
            built = subprocess.run(
                [go, "install", f"{CRI_TOOLS}@{CRICTL_VERSION}"],
                env={**os.environ, "GOBIN": str(target.parent / "bin"), "GOFLAGS": "-mod=mod"},
                capture_output=True,
                text=True,
                check=False,
            )
            assert built.returncode == 0, f"go install crictl failed:\n{built.stderr[-3000:]}"
            (target.parent / "bin" / "crictl").rename(target)
    return target


class Crictl:
    """crictl against one runtime, inside its network namespace."""

    def __init__(self, binary: Path, runtime: ContainerRuntime, scratch: Path) -> None:
        self._runtime = runtime
        self._scratch = scratch
        self._config = scratch / "crictl.yaml"
        self._config.write_text(
            f"runtime-endpoint: {runtime.endpoint}\nimage-endpoint: {runtime.endpoint}\n"
            "timeout: 30\n"
        )
        self._binary = binary

    def completed(self, *arguments: str) -> subprocess.CompletedProcess[str]:
        argv = [str(self._binary), "--config", str(self._config), *arguments]
        return subprocess.run(
            self._runtime.command(argv, network_only=True),
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )

    def __call__(self, *arguments: str) -> str:
        """crictl's output; the test fails with its error otherwise."""
        done = self.completed(*arguments)
        assert done.returncode == 0, f"crictl {' '.join(arguments)} failed: {done.stderr}"
        return done.stdout.strip()

    def json(self, *arguments: str) -> dict[str, Any]:
        """crictl's JSON output (`inspectp ID`, `inspect ID`), read."""
        return dict(json.loads(self(*arguments)))

    def _file(self, name: str, content: dict[str, Any]) -> str:
        path = self._scratch / name
        path.write_text(json.dumps(content))
        return str(path)

    def run_pod(self, name: str) -> tuple[str, str]:
        """A pod sandbox `name` (its hostname too) on the CNI bridge: (its id, its config
        file, for the containers created in it)."""
        config = self._file(
            f"pod-{name}.json",
            {
                "metadata": {"name": name, "namespace": "tests", "uid": f"uid-{name}"},
                "hostname": name,
                "log_directory": str(self._scratch / "logs" / name),
                "linux": {"cgroup_parent": f"{self._runtime.pods_cgroup}/{name}"},
            },
        )
        return self("runp", config), config

    def start_container(
        self, pod: tuple[str, str], name: str, image: str, command: list[str]
    ) -> str:
        """A container `name` of `image` running `command` in `pod`, started; its id."""
        config = self._file(
            f"container-{name}.json",
            {
                "metadata": {"name": name},
                "image": {"image": image},
                "command": command,
                "log_path": f"{name}.log",
            },
        )
        container = self("create", pod[0], config, pod[1])
        self("start", container)
        return container
