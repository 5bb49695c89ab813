"""What the runtime writes and reads: the cgroup hierarchies it mounts again, containerd's
configuration, the CNI conflist."""

from __future__ import annotations

import tomllib
from ipaddress import IPv4Network
from pathlib import Path

import pytest

from onemachine.containers import cni
from onemachine.containers.cgroups import Hierarchy, hierarchies, mount_commands
from onemachine.containers.containerd import ContainerdPaths, config

MOUNTINFO = """\
23 1 0:21 / /sys rw,nosuid - sysfs sysfs rw
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
40 31 0:37 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,release_agent=/r,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw,nsdelegate
50 1 0:40 / /elsewhere rw - cgroup cgroup rw,memory
"""


def test_the_hierarchies_are_read_by_type_and_name_from_mountinfo() -> None:
    assert hierarchies(MOUNTINFO) == [
        Hierarchy("/sys/fs/cgroup/cpu", "cgroup", "cpu"),
        Hierarchy("/sys/fs/cgroup/cpuset", "cgroup", "cpuset"),
        Hierarchy("/sys/fs/cgroup/systemd", "cgroup", "xattr,name=systemd"),
        Hierarchy("/sys/fs/cgroup/unified", "cgroup2", ""),
    ]


def test_each_hierarchy_is_mounted_again_on_a_tmpfs() -> None:
    commands = mount_commands(hierarchies(MOUNTINFO))
    assert commands[0] == ["mount", "-t", "tmpfs", "-o", "mode=755", "cgroup", "/sys/fs/cgroup"]
    assert ["mount", "-t", "cgroup", "-o", "cpu", "cgroup", "/sys/fs/cgroup/cpu"] in commands
    assert ["mount", "-t", "cgroup2", "cgroup", "/sys/fs/cgroup/unified"] in commands


def test_a_cgroup2_only_machine_gets_no_tmpfs() -> None:
    only = [Hierarchy("/sys/fs/cgroup", "cgroup2", "")]
    assert mount_commands(only) == [
        ["mkdir", "-p", "/sys/fs/cgroup"],
        ["mount", "-t", "cgroup2", "cgroup", "/sys/fs/cgroup"],
    ]


def test_containerds_config_keeps_every_path_under_the_state_directory(tmp_path: Path) -> None:
    paths = ContainerdPaths(tmp_path / "containerd")
    read = tomllib.loads(config(paths, "registry.k8s.io/pause:3.10", "/opt/bin/runc"))
    assert (read["version"], read["root"], read["state"]) == (
        2,
        str(paths.root),
        str(paths.state),
    )
    assert read["grpc"]["address"] == str(paths.socket)
    assert read["ttrpc"]["address"] == f"{paths.socket}.ttrpc"
    assert read["plugins"]["io.containerd.internal.v1.opt"]["path"] == str(paths.base / "opt")
    cri = read["plugins"]["io.containerd.grpc.v1.cri"]
    assert {key: cri[key] for key in cri if not isinstance(cri[key], dict)} == {
        "sandbox_image": "registry.k8s.io/pause:3.10",
        "disable_apparmor": True,
        "restrict_oom_score_adj": True,
        "netns_mounts_under_state_dir": True,
        "stream_server_address": "127.0.0.1",
        "stream_server_port": "10010",
    }
    assert cri["containerd"]["snapshotter"] == "overlayfs"
    runc = cri["containerd"]["runtimes"]["runc"]
    assert runc == {
        "runtime_type": "io.containerd.runc.v2",
        "options": {"SystemdCgroup": False, "BinaryName": "/opt/bin/runc"},
    }
    assert cri["cni"] == {
        "bin_dir": "/usr/lib/cni",
        "conf_dir": str(paths.cni_conf_dir),
        "max_conf_num": 1,
    }


def test_without_a_bin_dir_runc_is_the_one_on_path(tmp_path: Path) -> None:
    read = tomllib.loads(config(ContainerdPaths(tmp_path), "pause:1", None))
    runc = read["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]["runc"]
    assert runc["options"] == {"SystemdCgroup": False}


def test_the_conflist_is_one_bridge_with_leases_of_its_own(tmp_path: Path) -> None:
    written = cni.write_conf_dir(tmp_path / "net.d", cni.POD_SUBNET, tmp_path / "ipam")
    assert written == tmp_path / "net.d" / "10-onemachine-pods.conflist"
    assert cni.conflist(cni.POD_SUBNET, tmp_path / "ipam") == {
        "cniVersion": "1.0.0",
        "name": "onemachine-pods",
        "plugins": [
            {
                "type": "bridge",
                "bridge": "ompods0",
                "isGateway": True,
                "hairpinMode": True,
                "ipMasq": False,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": "198.18.0.0/16", "gateway": "198.18.0.1"}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(tmp_path / "ipam"),
                },
            }
        ],
    }


@pytest.mark.parametrize("subnet", ["10.88.0.0/16", "198.17.0.0/16", "198.16.0.0/14"])
def test_a_pod_subnet_outside_the_benchmarking_block_is_refused(
    tmp_path: Path, subnet: str
) -> None:
    with pytest.raises(ValueError, match=f"pod subnet {subnet} is outside 198.18.0.0/15"):
        cni.write_conf_dir(tmp_path / "net.d", IPv4Network(subnet), tmp_path / "ipam")
    assert not (tmp_path / "net.d").exists()
