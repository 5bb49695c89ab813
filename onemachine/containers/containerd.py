"""containerd with a configuration of its own, started in the runtime namespace.

Debian's containerd 1.6 (or the user's, from a bin directory holding `containerd`,
`containerd-shim-runc-v2` and `runc`), configuration version 2, with every path of its own
under the state directory: `root`, `state`, the gRPC and ttrpc sockets, the `opt` plugin's
directory (else /opt/containerd), and the CNI configuration. Its CRI plugin is set as this
machine needs it (docs/one-machine-cluster.md, "The container runtime"): the pause image
made locally as the sandbox image, overlayfs, runc through the v2 shim with cgroupfs
(`SystemdCgroup = false`), no AppArmor, `restrict_oom_score_adj` (root here lacks
CAP_SYS_RESOURCE, and runc fails on a lower score than its own), pods' network namespaces
mounted under the state directory (not /run/netns), and the streaming server (exec,
attach, port-forward) on the namespace's 127.0.0.1 only.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from onemachine.containers.cni import CNI_BIN_DIR

CRI = "io.containerd.grpc.v1.cri"
STREAM_SERVER_PORT = 10010
# Unused snapshotters: their plugins only warn at start (no aufs module, no devmapper pool).
_DISABLED_PLUGINS = (
    "io.containerd.snapshotter.v1.aufs",
    "io.containerd.snapshotter.v1.btrfs",
    "io.containerd.snapshotter.v1.devmapper",
    "io.containerd.snapshotter.v1.zfs",
)
_SOCKET_PATH_MAX = 100  # sun_path holds 108 bytes; ".ttrpc" is added to the gRPC socket


class ContainerdFailed(RuntimeError):
    """containerd exited or did not answer; the message ends with its log's last lines."""


@dataclass(frozen=True)
class ContainerdPaths:
    """Everything of containerd's under `base` (STATE/containerd)."""

    base: Path

    @property
    def config(self) -> Path:
        return self.base / "config.toml"

    @property
    def root(self) -> Path:
        return self.base / "root"

    @property
    def state(self) -> Path:
        return self.base / "state"

    @property
    def socket(self) -> Path:
        return self.base / "containerd.sock"

    @property
    def log(self) -> Path:
        return self.base / "containerd.log"

    @property
    def cni_conf_dir(self) -> Path:
        return self.base / "cni" / "net.d"

    @property
    def cni_data_dir(self) -> Path:
        return self.base / "cni" / "ipam"


def program(name: str, bin_dir: Path | None) -> str:
    """`name` from `bin_dir` when given (and there), else from PATH; FileNotFoundError
    naming where it comes from otherwise."""
    if bin_dir is not None and (bin_dir / name).is_file():
        return str(bin_dir / name)
    found = shutil.which(name)
    if found is None:
        raise FileNotFoundError(
            f"{name} is not in {bin_dir or 'PATH'}: install Debian's containerd and runc "
            "(apt-get install containerd runc containernetworking-plugins)"
        )
    return found


def _toml(value: object) -> str:
    """A TOML value for a string, bool, int or list of strings (JSON's string escapes
    are TOML's)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    return json.dumps(str(value))


def _table(name: str, values: dict[str, object]) -> str:
    lines = [f"[{name}]"] if name else []
    lines += [f"{key} = {_toml(value)}" for key, value in values.items()]
    return "\n".join(lines) + "\n"


def config(paths: ContainerdPaths, sandbox_image: str, runc: str | None) -> str:
    """containerd's config.toml (version 2) for `paths`."""
    cri = f'plugins."{CRI}"'
    runc_options: dict[str, object] = {"SystemdCgroup": False}
    if runc is not None:
        runc_options["BinaryName"] = runc
    tables = [
        _table(
            "",
            {
                "version": 2,
                "root": paths.root,
                "state": paths.state,
                "disabled_plugins": list(_DISABLED_PLUGINS),
            },
        ),
        _table("grpc", {"address": paths.socket}),
        _table("ttrpc", {"address": f"{paths.socket}.ttrpc"}),
        _table('plugins."io.containerd.internal.v1.opt"', {"path": paths.base / "opt"}),
        _table(
            cri,
            {
                "sandbox_image": sandbox_image,
                "disable_apparmor": True,
                "restrict_oom_score_adj": True,
                "netns_mounts_under_state_dir": True,
                "stream_server_address": "127.0.0.1",
                "stream_server_port": str(STREAM_SERVER_PORT),
            },
        ),
        _table(f"{cri}.containerd", {"snapshotter": "overlayfs", "default_runtime_name": "runc"}),
        _table(f"{cri}.containerd.runtimes.runc", {"runtime_type": "io.containerd.runc.v2"}),
        _table(f"{cri}.containerd.runtimes.runc.options", runc_options),
        _table(
            f"{cri}.cni",
            {"bin_dir": CNI_BIN_DIR, "conf_dir": paths.cni_conf_dir, "max_conf_num": 1},
        ),
    ]
    return "\n".join(tables)


class Containerd:
    """A running containerd: `socket`, `ctr(...)`, `stop()`."""

    def __init__(self, process: subprocess.Popen[bytes], paths: ContainerdPaths, ctr: str) -> None:
        self._process = process
        self.paths = paths
        self._ctr = ctr

    @property
    def pid(self) -> int:
        return self._process.pid

    @classmethod
    def start(
        cls,
        paths: ContainerdPaths,
        sandbox_image: str,
        inside: Callable[[list[str]], list[str]],
        place: Callable[[int], None],
        bin_dir: Path | None = None,
        timeout: float = 30.0,
    ) -> Containerd:
        """containerd run as `inside(argv)` (the namespace's nsenter), put by `place(pid)`
        in a cgroup before it is asked anything (so the shims it starts are born there),
        ready to serve."""
        if len(str(paths.socket)) > _SOCKET_PATH_MAX:
            raise ContainerdFailed(
                f"the socket path {paths.socket} is longer than {_SOCKET_PATH_MAX} characters: "
                "use a shorter state directory"
            )
        for directory in (paths.root, paths.state):
            directory.mkdir(parents=True, exist_ok=True)
        runc = program("runc", bin_dir) if bin_dir is not None else None
        paths.config.write_text(config(paths, sandbox_image, runc))
        environment = dict(os.environ)
        if bin_dir is not None:  # the shim is looked up on PATH
            environment["PATH"] = f"{bin_dir}{os.pathsep}{environment.get('PATH', '')}"
        argv = inside([program("containerd", bin_dir), "--config", str(paths.config)])
        with paths.log.open("ab") as log:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=environment,
                start_new_session=True,
            )
        running = cls(process, paths, program("ctr", bin_dir))
        try:
            try:
                place(process.pid)
            except OSError:
                if process.poll() is None:
                    raise
            running._wait_ready(timeout)  # says so if it exited
        except BaseException:
            running.stop()
            raise
        return running

    def ctr(self, *arguments: str, namespace: str = "k8s.io") -> subprocess.CompletedProcess[str]:
        """`ctr` against this containerd (its socket is reachable from anywhere)."""
        return subprocess.run(
            [self._ctr, "--address", str(self.paths.socket), "--namespace", namespace, *arguments],
            capture_output=True,
            text=True,
            check=False,
        )

    def import_archive(self, archive: Path) -> None:
        """The images of a docker-archive (or OCI archive) into the CRI's namespace,
        unpacked for its snapshotter; ContainerdFailed with ctr's message otherwise."""
        imported = self.ctr("images", "import", "--snapshotter", "overlayfs", str(archive))
        if imported.returncode != 0:
            raise ContainerdFailed(f"ctr images import {archive} failed: {imported.stderr.strip()}")

    def _cri_status(self) -> str | None:
        """The CRI plugin's status in `ctr plugins ls` (`ok`, `error`, `skip`); None while
        containerd does not answer."""
        listed = self.ctr("plugins", "ls")
        if listed.returncode != 0:
            return None
        for line in listed.stdout.splitlines():
            words = line.split()
            if words[:2] == ["io.containerd.grpc.v1", "cri"]:
                return words[-1]
        return None

    def _wait_ready(self, timeout: float) -> None:
        """Until the CRI plugin is loaded; ContainerdFailed if containerd exits, its CRI
        plugin fails, or `timeout` passes first."""
        deadline = time.monotonic() + timeout
        while True:
            if self._process.poll() is not None:
                code = self._process.returncode
                raise ContainerdFailed(f"containerd exited ({code}){self.tail()}")
            status = self._cri_status() if self.paths.socket.exists() else None
            if status == "ok":
                return
            if status is not None:
                raise ContainerdFailed(
                    f"containerd's CRI plugin did not load ({status}){self.tail()}"
                )
            if time.monotonic() > deadline:
                raise ContainerdFailed(f"containerd not ready within {timeout:g} s{self.tail()}")
            time.sleep(0.1)

    def tail(self, lines: int = 15) -> str:
        """The end of containerd's log, as a message's last lines."""
        try:
            text = self.paths.log.read_text(errors="replace").splitlines()[-lines:]
        except OSError:
            return ""
        return ":\n" + "\n".join(text) if text else ""

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM, SIGKILL after `grace`; its shims and containers are the caller's
        (CgroupRoot.remove)."""
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGTERM)
            try:
                self._process.wait(grace)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
