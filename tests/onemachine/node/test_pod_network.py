"""Pod addresses and links: allocation, release and reuse; the refusal outside a private
namespace; an address that exists only inside the node's namespace.

No packet is ever sent from the host's namespace: there, 198.18.0.0/16 may follow the default
route onto the machine's network. That a pod's address is not the host's is shown by where
it is (`ip -o addr` in the pod's namespace, not the node's) and by the host's `ip -o addr`
and `ip route`, unchanged while the pod runs and after."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from ipaddress import IPv4Address, IPv4Network
from pathlib import Path

import pytest

from onemachine import netns
from onemachine.netns import NotPrivateNamespace
from onemachine.node.container_logs import log_text
from onemachine.node.pod_network import (
    BRIDGE,
    GATEWAY,
    AddressesExhausted,
    AddressPool,
    PodNetwork,
    PodNetworkError,
)
from onemachine.node.pod_runtime import ContainerLaunch, PodRuntime
from tests.onemachine.node.pod_support import wait_for_text


def _ip(*arguments: str) -> str:
    return subprocess.run(["ip", *arguments], capture_output=True, text=True, check=True).stdout


def test_addresses_start_at_two_and_a_released_one_returns_only_after_the_others() -> None:
    pool = AddressPool(IPv4Network("198.18.0.0/29"))  # .2 to .6
    first = [pool.allocate() for _ in range(3)]
    assert first == [IPv4Address(f"198.18.0.{n}") for n in (2, 3, 4)]
    pool.release(IPv4Address("198.18.0.3"))
    assert pool.in_use == {IPv4Address("198.18.0.2"), IPv4Address("198.18.0.4")}
    assert [pool.allocate() for _ in range(3)] == [IPv4Address(f"198.18.0.{n}") for n in (5, 6, 3)]
    with pytest.raises(AddressesExhausted, match="all 5 pod addresses are in use"):
        pool.allocate()
    pool.release(IPv4Address("198.18.0.6"))
    pool.release(IPv4Address("198.18.0.6"))  # twice: no harm
    assert pool.allocate() == IPv4Address("198.18.0.6")


def test_the_node_refuses_a_namespace_that_holds_another_interface(node_netns: int) -> None:
    _ip("link", "add", "stray0", "type", "bridge")
    with pytest.raises(NotPrivateNamespace) as refused:
        PodNetwork.open()
    assert str(refused.value) == (
        "the node makes pod networks only inside a private network namespace, and this "
        "network namespace is not private: it holds stray0 besides lo; run it through "
        "`python -m onemachine cluster`, which creates one holding only loopback"
    )
    assert BRIDGE not in netns.interfaces()


def test_the_bridge_holds_the_gateway_and_opening_again_keeps_it(node_netns: int) -> None:
    PodNetwork.open()
    PodNetwork.open()
    assert "inet 198.18.0.1/16" in _ip("-o", "addr", "show", "dev", BRIDGE)
    assert netns.interfaces() == ["lo", BRIDGE]


def test_a_link_that_cannot_be_made_fails_with_ips_reason_and_keeps_no_address(
    tmp_path: Path, network: PodNetwork, pool: AddressPool
) -> None:
    (tmp_path / "plain").write_text("not a namespace")
    with open(tmp_path / "plain") as plain, pytest.raises(PodNetworkError) as refused:
        descriptor = plain.fileno()
        network.attach(descriptor)
    assert str(refused.value).startswith(
        f"ip link add lcv2 type veth peer name eth0 netns /proc/self/fd/{descriptor}; "
        f"link set lcv2 master {BRIDGE} up: "
    )
    assert pool.in_use == frozenset()
    assert netns.interfaces() == ["lo", BRIDGE]


def test_the_nodes_own_namespace_never_gets_a_pod_address(
    node_netns: int, network: PodNetwork, pool: AddressPool
) -> None:
    with pytest.raises(PodNetworkError, match="refusing to give the node's own network"):
        network.attach(node_netns)
    assert pool.in_use == frozenset()
    assert netns.interfaces() == ["lo", BRIDGE]


def test_a_pod_network_is_made_only_by_open_which_checks_the_namespace() -> None:
    with pytest.raises(TypeError, match=r"made by PodNetwork.open\(\), which checks"):
        PodNetwork(AddressPool(), 0, object())


def test_a_thread_in_another_namespace_can_neither_attach_nor_detach(
    network: PodNetwork, pool: AddressPool, other_namespace: int, pod_namespace: int
) -> None:
    """Namespaces belong to threads: the one open() checked is the only one links are made
    or removed in, whichever thread calls."""
    address = network.attach(pod_namespace)
    with netns.entered(other_namespace):
        with pytest.raises(PodNetworkError) as refused:
            network.attach(pod_namespace)
        assert str(refused.value) == (
            "refusing to attach a pod from another network namespace than the node's "
            "(the one PodNetwork.open() checked)"
        )
        with pytest.raises(PodNetworkError, match="refusing to detach a pod from another"):
            network.detach(address)
        assert netns.interfaces() == ["lo"]
    assert pool.in_use == {address}
    assert netns.interfaces() == ["lo", BRIDGE, "lcv2"]
    network.detach(address)
    assert netns.interfaces() == ["lo", BRIDGE]


_SERVE = (
    "import socket, sys\n"
    "server = socket.create_server(('0.0.0.0', 8080))\n"
    "print('listening', flush=True)\n"
    "while True:\n"
    "    connection, peer = server.accept()\n"
    "    connection.sendall(f'{socket.gethostname()} {peer[0]}'.encode())\n"
    "    connection.close()\n"
)


def _ask(address: IPv4Address) -> str:
    with socket.create_connection((str(address), 8080), timeout=2) as connection:
        return connection.recv(100).decode()


def test_a_pods_address_lives_in_its_own_namespace_and_the_node_reaches_it(
    tmp_path: Path, fresh_namespace: int
) -> None:
    host = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        host_addresses, host_routes = _ip("-o", "addr"), _ip("route")
        with netns.entered(fresh_namespace):
            pods = PodRuntime(tmp_path / "node", PodNetwork.open())
            try:
                sandbox = pods.create("default", "echo", "uid-1")
                assert sandbox.address == IPv4Address("198.18.0.2")
                serving = ContainerLaunch("serve", [sys.executable, "-c", _SERVE], {})
                wait_for_text(sandbox.start_container(serving).log_path, "listening")
                # from the node's namespace (the control plane's) the pod answers, and sees
                # the node at the gateway address
                assert _ask(sandbox.address) == "echo 198.18.0.1"
                # the address is the pod's eth0's, in the pod's namespace only: not the
                # node's (which holds the gateway's and a route to the pods) nor the host's
                with netns.entered(f"/proc/{sandbox.holder_pid}/ns/net"):
                    in_pod = _ip("-o", "addr")
                assert "eth0    inet 198.18.0.2/16 " in in_pod
                in_node = _ip("-o", "addr")
                assert "198.18.0.2/" not in in_node and in_node.count("198.18.") == 1
                assert f" dev {BRIDGE} " in _ip("route", "get", "198.18.0.2")
                with netns.entered(host):
                    assert (_ip("-o", "addr"), _ip("route")) == (host_addresses, host_routes)
            finally:
                pods.close()
            assert netns.interfaces() == ["lo", BRIDGE]  # the pod's veth went with it
    finally:
        os.close(host)
    assert (_ip("-o", "addr"), _ip("route")) == (host_addresses, host_routes)
    assert "198.18." not in host_addresses + host_routes
    # asked, not tried: the host would send it to its default route, if it has one
    lookup = subprocess.run(["ip", "route", "get", "198.18.0.2"], capture_output=True, text=True)
    assert BRIDGE not in lookup.stdout and " dev lo " not in lookup.stdout


def test_a_pod_reaches_the_node_at_the_gateway_address(runtime: PodRuntime) -> None:
    with socket.create_server((str(GATEWAY), 0)) as server:
        server.settimeout(10)
        port = server.getsockname()[1]
        sandbox = runtime.create("default", "caller", "uid")
        call = (
            "import socket\n"
            f"with socket.create_connection(('{GATEWAY}', {port}), timeout=5) as node:\n"
            "    print(node.recv(100).decode())\n"
        )
        container = sandbox.start_container(
            ContainerLaunch("main", [sys.executable, "-c", call], {})
        )
        connection, peer = server.accept()
        with connection:
            connection.sendall(b"node here")
        assert peer[0] == str(sandbox.address)
        assert container.wait(10) is not None
        assert log_text(container.log_path) == "node here\n"
