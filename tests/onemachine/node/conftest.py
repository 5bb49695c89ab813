"""Fixtures of the node's tests: a private network namespace for the test's own thread, a
pod runtime on it, and the adapter tests' stand-in API server (`fake`). The test process
never stays in another namespace: the fixture puts the main thread (network namespaces are
per thread) into a fresh one for the test and back into its own after it; threads and
processes started during the test inherit the fresh one."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from onemachine import netns
from onemachine.node.pod_network import AddressPool, PodNetwork
from onemachine.node.pod_runtime import PodRuntime
from tests.kubernetes.conftest import fake  # noqa: F401 (the stand-in API server, started)


@pytest.fixture
def fresh_namespace() -> Iterator[int]:
    """A new network namespace holding only `lo` (a descriptor), for `netns.entered`."""
    if os.geteuid() != 0:
        pytest.skip("needs root for network namespaces (CI runs as root)")
    try:
        descriptor = netns.new_network_namespace()
    except netns.NamespaceUnavailable as refused:
        pytest.skip(f"needs network namespaces: {refused}")
    yield descriptor
    os.close(descriptor)


@pytest.fixture
def other_namespace(fresh_namespace: int) -> Iterator[int]:
    """A second new network namespace, as bare as the first."""
    descriptor = netns.new_network_namespace()
    yield descriptor
    os.close(descriptor)


@pytest.fixture
def pod_namespace(fresh_namespace: int) -> Iterator[int]:
    """A third new network namespace, to hand to PodNetwork.attach as a pod's."""
    descriptor = netns.new_network_namespace()
    yield descriptor
    os.close(descriptor)


@pytest.fixture
def node_netns(fresh_namespace: int) -> Iterator[int]:
    """The test's main thread inside a fresh network namespace for the test: the node's."""
    with netns.entered(fresh_namespace):
        yield fresh_namespace


@pytest.fixture
def pool() -> AddressPool:
    return AddressPool()


@pytest.fixture
def network(node_netns: int, pool: AddressPool) -> PodNetwork:
    return PodNetwork.open(pool)


@pytest.fixture
def runtime(tmp_path: Path, network: PodNetwork) -> Iterator[PodRuntime]:
    pods = PodRuntime(tmp_path / "node", network)
    yield pods
    pods.close()
