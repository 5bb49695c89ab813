"""onemachine.netns: namespaces entered and left per thread, the private-namespace check, and
the message when the machine refuses a namespace."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from onemachine import netns


def test_a_fresh_network_namespace_holds_only_loopback(fresh_namespace: int) -> None:
    with netns.entered(fresh_namespace):
        assert netns.interfaces() == ["lo"]
        netns.only_loopback()


def test_entering_changes_the_calling_thread_only_and_leaving_restores_it(
    fresh_namespace: int,
) -> None:
    before = netns.interfaces()
    seen_by_another_thread: list[list[str]] = []
    with netns.entered(fresh_namespace):
        other = threading.Thread(target=lambda: seen_by_another_thread.append(netns.interfaces()))
        other.start()
        other.join()
        assert netns.interfaces() == ["lo"]
    assert netns.interfaces() == before
    # a thread started inside inherits the namespace of the thread that started it
    assert seen_by_another_thread == [["lo"]]


def test_only_loopback_names_every_other_interface(fresh_namespace: int) -> None:
    """A bridge stands for any other interface (this kernel may lack the dummy driver)."""
    with netns.entered(fresh_namespace):
        subprocess.run(["ip", "link", "add", "stray0", "type", "bridge"], check=True)
        with pytest.raises(netns.NotPrivateNamespace, match="it holds stray0 besides lo"):
            netns.only_loopback()
        netns.only_loopback(also=lambda name: name == "stray0")


def test_a_refused_namespace_says_what_the_machine_refused(fresh_namespace: int) -> None:
    """Run without CAP_SYS_ADMIN (dropped from the bounding set by setpriv): the kernel
    refuses unshare(CLONE_NEWNET) as on a machine that does not allow namespaces."""
    refused = subprocess.run(
        [
            "setpriv",
            "--bounding-set=-sys_admin",
            sys.executable,
            "-c",
            "from onemachine import netns; netns.unshare(netns.CLONE_NEWNET | netns.CLONE_NEWUTS)",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines()[-1] == (
        "onemachine.netns.NamespaceUnavailable: this machine does not allow network and UTS "
        "namespaces: unshare(CLONE_NEWNET|CLONE_NEWUTS) failed: Operation not permitted"
    )


def test_entering_what_is_no_namespace_says_so(tmp_path) -> None:
    (tmp_path / "plain").write_text("not a namespace")
    with pytest.raises(netns.NamespaceUnavailable) as refused, netns.entered(tmp_path / "plain"):
        pass
    assert str(refused.value) == (
        "cannot enter that network namespace: setns(CLONE_NEWNET) failed: Invalid argument"
    )
