"""The container runtime on one machine, whole: `ContainerRuntime.start(...)` and `stop()`.

In order: a runtime namespace (namespace.py) checked to hold only loopback, a cgroup root
of its own (cgroups.py), the CNI conflist (cni.py), containerd (containerd.py) in that
cgroup root and those namespaces, and the pause image (image_builds.py) imported as its
sandbox image. `stop()` undoes it all, last first: containerd stopped,
every process left in the cgroup root (shims, containers) killed and the root removed, the
bridge deleted, the holder ended; the mounts (containers' root file systems, pods' network
namespaces, /run) were only ever in the namespace's own mount namespace and go with it.
What is left is files under the state directory.
"""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from ipaddress import IPv4Network
from pathlib import Path

from onemachine.containers import cni
from onemachine.containers.cgroups import CgroupRoot
from onemachine.containers.containerd import Containerd, ContainerdPaths
from onemachine.containers.image_builds import pause_image
from onemachine.containers.image_cache import ImageCache
from onemachine.containers.namespace import RuntimeNamespace
from onemachine.netns import NotPrivateNamespace

PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
RUNTIME_CGROUP = "runtime"  # containerd and its shims, under the cgroup root
PODS_CGROUP = "pods"  # the pods' parent (the kubelet's cgroupRoot), under the cgroup root


@dataclass(frozen=True)
class RuntimeSettings:
    """What a runtime is started with. `network`: `new` (a network namespace of its own)
    or `inherit` (the caller's, which must be private: the cluster's)."""

    state_dir: Path
    bin_dir: Path | None = None
    network: str = "new"
    pod_subnet: IPv4Network = cni.POD_SUBNET
    sandbox_image: str = PAUSE_IMAGE
    private_directories: Sequence[str] = ()  # besides /run: /var/log for a kubelet
    images: ImageCache = field(default_factory=ImageCache)


class ContainerRuntime:
    """A started runtime: `endpoint` (the CRI socket, for a kubelet or crictl),
    `pods_cgroup` (the kubelet's cgroupRoot), `command()`, `containerd`, `stop()`."""

    def __init__(
        self,
        settings: RuntimeSettings,
        namespace: RuntimeNamespace,
        cgroup_root: CgroupRoot,
        containerd: Containerd,
        stack: ExitStack,
    ) -> None:
        self.settings = settings
        self.namespace = namespace
        self.cgroup_root = cgroup_root
        self.containerd = containerd
        self._stack = stack

    @classmethod
    def start(cls, settings: RuntimeSettings) -> ContainerRuntime:
        """Everything the module docstring lists, or nothing: a failure undoes what was
        started and raises (NotPrivateNamespace, NamespaceFailed, ContainerdFailed,
        FileNotFoundError for a missing program)."""
        stack = ExitStack()
        try:
            namespace = RuntimeNamespace.start(settings.network, settings.private_directories)
            stack.callback(namespace.stop)
            try:
                namespace.require_private()
            except NotPrivateNamespace as refused:
                raise NotPrivateNamespace(
                    "the container runtime puts pod addresses only inside a private network "
                    f"namespace, and {refused}: start it with a network namespace of its own "
                    "(network 'new') or inside the cluster's"
                ) from refused
            cgroup_root = CgroupRoot(cgroup_root_name(settings.state_dir))
            stack.callback(cgroup_root.remove)
            cgroup_root.make(RUNTIME_CGROUP)
            cgroup_root.make(PODS_CGROUP)
            stack.callback(_delete_bridge, namespace)
            paths = ContainerdPaths(settings.state_dir / "containerd")
            cni.write_conf_dir(paths.cni_conf_dir, settings.pod_subnet, paths.cni_data_dir)
            containerd = Containerd.start(
                paths,
                settings.sandbox_image,
                namespace.command,
                lambda pid: cgroup_root.add(pid, RUNTIME_CGROUP),
                settings.bin_dir,
            )
            stack.callback(containerd.stop)
            containerd.import_archive(pause_image(settings.images, settings.sandbox_image))
        except BaseException:
            stack.close()
            raise
        return cls(settings, namespace, cgroup_root, containerd, stack)

    @property
    def endpoint(self) -> str:
        """The CRI endpoint: `unix://STATE/containerd/containerd.sock`."""
        return f"unix://{self.containerd.paths.socket}"

    @property
    def pods_cgroup(self) -> str:
        """The pods' cgroup parent, `/onemachine-NAME/pods`: the kubelet's cgroupRoot."""
        return f"{self.cgroup_root.path}/{PODS_CGROUP}"

    def command(self, argv: Sequence[str], network_only: bool = False) -> list[str]:
        """`argv` run inside the runtime's namespaces (RuntimeNamespace.command)."""
        return self.namespace.command(argv, network_only)

    def import_images(self, *archives: Path) -> None:
        """Images (docker-archives made by image_builds) into the CRI's namespace."""
        for archive in archives:
            self.containerd.import_archive(archive)

    def stop(self) -> None:
        """containerd, every container, the cgroup root, the bridge and the namespace
        gone, last started first."""
        self._stack.close()


def cgroup_root_name(state_dir: Path) -> str:
    """`onemachine-` and 8 hex digits of the state directory's path: one runtime's own,
    found again from its state directory."""
    return f"onemachine-{hashlib.sha256(str(state_dir.resolve()).encode()).hexdigest()[:8]}"


def _delete_bridge(namespace: RuntimeNamespace) -> None:
    """The pods' bridge gone from the namespace (a network namespace the runtime
    inherited outlives it)."""
    subprocess.run(
        namespace.command(["ip", "link", "delete", cni.BRIDGE], network_only=True),
        capture_output=True,
        check=False,
    )
