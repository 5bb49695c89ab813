"""Sandbox ports: reserved while their sandbox lives, so concurrent starts never collide."""

from __future__ import annotations

import socket
from concurrent.futures import ThreadPoolExecutor

import pytest

from localcube.sandboxing.ports import PortAllocator, kernel_free_port
from tests.localcube.support import SESSION_HEADER, Client, open_sessions


def test_a_port_the_kernel_hands_out_twice_is_given_to_one_sandbox_only() -> None:
    allocator = PortAllocator(probe=iter([5000, 5000, 5000, 5001]).__next__)
    assert [allocator.allocate(), allocator.allocate()] == [[5000], [5001]]
    assert allocator.reserved == {5000, 5001}


def test_a_released_port_can_be_handed_out_again() -> None:
    allocator = PortAllocator(probe=iter([5000, 5000]).__next__)
    allocator.allocate()
    allocator.release([5000])
    assert allocator.allocate() == [5000]


def test_ports_of_adopted_sandboxes_are_never_handed_out() -> None:
    allocator = PortAllocator(probe=iter([5000, 5002, 5003]).__next__)
    allocator.reserve([5000, 5002])
    assert allocator.allocate() == [5003]


def test_an_allocator_that_finds_only_reserved_ports_gives_up() -> None:
    allocator = PortAllocator(probe=lambda: 5000)
    allocator.reserve([5000])
    with pytest.raises(RuntimeError, match="no 1 free loopback ports"):
        allocator.allocate()


def test_ports_for_one_sandbox_are_distinct_and_reserved_all_or_none() -> None:
    allocator = PortAllocator(probe=iter([5000, 5000, 5001]).__next__)
    assert allocator.allocate(2) == [5000, 5001]
    exhausted = PortAllocator(probe=lambda: 5000)
    with pytest.raises(RuntimeError):
        exhausted.allocate(2)
    assert exhausted.reserved == frozenset()


def test_concurrent_allocations_from_the_kernel_are_distinct_and_bindable() -> None:
    allocator = PortAllocator()
    with ThreadPoolExecutor(20) as threads:
        ports = [port for ports in threads.map(allocator.allocate, [1] * 200) for port in ports]
    assert len(set(ports)) == 200
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", kernel_free_port()))


def test_twenty_sandboxes_started_at_once_each_get_their_own_port(start_localcube) -> None:
    client = Client(start_localcube().url)
    sandboxes = open_sessions(client, 20)
    endpoints = {box["endpoint"] for box in sandboxes}
    assert len(endpoints) == 20
    for box in sandboxes:
        answer = client.agent("echo-agent", json={}, session=box["sessionId"])
        assert answer.status_code == 200
        assert answer.headers[SESSION_HEADER] == box["sessionId"]
        assert answer.json()["sandbox"]["pid"] == box["pid"], "each session reaches its own sandbox"
