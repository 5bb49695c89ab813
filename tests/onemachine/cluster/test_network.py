"""Each way entering the launcher's private namespace fails is a message naming what the
machine refused, never a traceback."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from onemachine import netns
from onemachine.cluster.network import map_to_root
from tests.onemachine.cluster import stand_ins
from tests.onemachine.cluster.conftest import ROOT, launcher_command, started_pids


def test_a_user_mapping_the_kernel_refuses_is_named_with_the_file_and_the_way_out() -> None:
    """In the machine's own user namespace the kernel refuses every write of the map (as
    it does under a policy against unprivileged user namespaces); nothing is changed."""
    with pytest.raises(netns.NamespaceUnavailable) as refusal:
        map_to_root(os.getuid(), os.getgid())
    assert str(refusal.value) == (
        "this machine does not let this user map itself to root in a new user namespace: "
        "writing /proc/self/setgroups failed: Operation not permitted; run as root or allow "
        "unprivileged user namespaces"
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="as root, the namespace is entered without ip")
def test_a_machine_without_ip_stops_the_launch_saying_what_is_needed(tmp_path: Path) -> None:
    bin_dir = stand_ins.bin_dir(tmp_path / "bin")
    path = tmp_path / "path"  # what the launcher needs before the namespace: not ip
    path.mkdir()
    stand_ins.write(path / "redis-server", stand_ins.silent())
    result = subprocess.run(
        launcher_command(bin_dir, tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={"PATH": str(path)},
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        "onemachine cluster: cannot bring up lo in the new network namespace: ip: No such file "
        "or directory (iproute2's ip is needed on the PATH)"
    )
    assert started_pids(result.stderr) == {}
