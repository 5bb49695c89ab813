"""The runtime's start and stop: nothing of it is left on the machine after a stop (no
process, mount, cgroup, network device or file outside its state directory), even with
pods still running; and it refuses a network namespace that is not private."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from onemachine import netns
from onemachine.containers import cni
from onemachine.containers.cgroups import hierarchies
from onemachine.containers.namespace import RuntimeNamespace
from onemachine.containers.runtime import ContainerRuntime, RuntimeSettings, cgroup_root_name
from tests.onemachine.containers.conftest import BUSYBOX, TOOLBOX_IMAGE, needs_runtime
from tests.onemachine.containers.cri import Crictl
from tests.processes import alive

pytestmark = needs_runtime

# Where a containerd, a CNI plugin or `ip netns` would leave something on the machine.
MACHINE_PATHS = (
    "/run/containerd",
    "/var/run/containerd",
    "/var/lib/containerd",
    "/opt/containerd",
    "/var/lib/cni",
    "/etc/cni",
    "/run/netns",
    "/var/log/pods",
    "/var/log/containers",
)


def _machine_paths() -> dict[str, list[str] | None]:
    """What each of MACHINE_PATHS holds (None where it does not exist)."""
    return {
        path: sorted(os.listdir(path)) if os.path.isdir(path) else None for path in MACHINE_PATHS
    }


def _mount_points() -> set[str]:
    with open("/proc/self/mountinfo") as mountinfo:
        return {line.split()[4] for line in mountinfo}


def _in_namespaces(identities: set[str]) -> list[int]:
    """Processes whose network or mount namespace is one of `identities`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            held = {os.readlink(entry / "ns/net"), os.readlink(entry / "ns/mnt")}
        except OSError:
            continue
        if held & identities and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def test_a_stop_with_pods_running_leaves_nothing_on_the_machine(
    runtime: ContainerRuntime, crictl: Crictl, state_dir: Path
) -> None:
    interfaces, paths, mounts = netns.interfaces(), _machine_paths(), _mount_points()
    pod = crictl.run_pod("left")
    crictl.start_container(pod, "busy", TOOLBOX_IMAGE, [str(BUSYBOX), "sleep", "600"])
    holder = runtime.namespace.pid
    identities = {os.readlink(f"/proc/{holder}/ns/{kind}") for kind in ("net", "mnt")}
    started = runtime.cgroup_root.processes() | {holder, runtime.containerd.pid}
    assert len(started) >= 5, f"containerd, a shim, pause and sleep in the cgroup root: {started}"
    cgroup_directories = runtime.cgroup_root.directories()

    runtime.stop()

    left = {pid: Path(f"/proc/{pid}/status").read_text()[:300] for pid in started if alive(pid)}
    assert left == {}, "processes left running"
    assert _in_namespaces(identities) == [], "processes left in the runtime's namespaces"
    assert [path for path in cgroup_directories if path.exists()] == [], "cgroups left"
    assert netns.interfaces() == interfaces
    assert _machine_paths() == paths
    new_mounts = _mount_points() - mounts
    ours = {point for point in new_mounts if str(state_dir) in point or "netns" in point}
    assert ours == set(), f"mounts left on the machine: {ours}"


@contextmanager
def _inside(descriptor: int) -> Iterator[None]:
    with netns.entered(descriptor):
        yield
    os.close(descriptor)


def test_it_refuses_a_network_namespace_that_holds_another_interface(state_dir: Path) -> None:
    with _inside(netns.new_network_namespace()):
        os.system("ip link add stray0 type bridge")
        with pytest.raises(netns.NotPrivateNamespace) as refused:
            ContainerRuntime.start(RuntimeSettings(state_dir, network="inherit")).stop()
        assert netns.interfaces() == ["lo", "stray0"]
    assert str(refused.value) == (
        "the container runtime puts pod addresses only inside a private network namespace, "
        "and this network namespace is not private: it holds stray0 besides lo: start it "
        "with a network namespace of its own (network 'new') or inside the cluster's"
    )
    made = [f"{h.mount_point}/{cgroup_root_name(state_dir)}" for h in hierarchies()]
    assert [path for path in made if os.path.exists(path)] == [], "no cgroup made"
    assert not (state_dir / "containerd").exists(), "nothing written before the refusal"


def test_in_the_callers_private_namespace_its_bridge_goes_with_it(
    state_dir: Path, toolbox_image: Path, crictl_path: Path
) -> None:
    with _inside(netns.new_network_namespace()):
        os.system("ip link set lo up")
        runtime = ContainerRuntime.start(RuntimeSettings(state_dir, network="inherit"))
        try:
            runtime.containerd.import_archive(toolbox_image)
            (state_dir / "crictl").mkdir()
            crictl = Crictl(crictl_path, runtime, state_dir / "crictl")
            crictl.run_pod("guest")
            assert cni.BRIDGE in netns.interfaces(), netns.interfaces()
        finally:
            runtime.stop()
        assert netns.interfaces() == ["lo"]


def test_the_namespace_has_a_run_of_its_own_and_the_directories_asked_for() -> None:
    namespace = RuntimeNamespace.start(private=("/var/log",))
    try:
        mounts = subprocess.run(
            namespace.command(["findmnt", "-rn", "-o", "TARGET,FSTYPE"]),
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
    finally:
        namespace.stop()
    assert {"/run tmpfs", "/var/log tmpfs", "/sys sysfs"} <= set(mounts), mounts
    # The machine's own mounts under /sys are listed too, above the new sysfs that hides them.
    on_new_sys = mounts[len(mounts) - 1 - mounts[::-1].index("/sys sysfs") :]
    assert [line for line in on_new_sys if line.startswith("/sys/fs/cgroup/")] == [
        f"{hierarchy.mount_point} {hierarchy.fstype}" for hierarchy in hierarchies()
    ]
