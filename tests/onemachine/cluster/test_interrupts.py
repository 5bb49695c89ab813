"""The launcher's signal handling, by calling its handler as the kernel would: the first
signal stops the launch (never in the middle of starting a part), any later one asks the
stop to kill at once and raises nothing."""

from __future__ import annotations

import signal

import pytest

from onemachine.cluster.interrupts import Interrupts, Stop


def test_the_first_signal_raises_stop_inside_the_launch() -> None:
    interrupts = Interrupts()
    with pytest.raises(Stop), interrupts.raising():
        interrupts.handle(signal.SIGINT, None)
    assert not interrupts.kill_at_once


def test_a_first_signal_before_the_launch_is_raised_when_it_begins() -> None:
    interrupts = Interrupts()
    interrupts.handle(signal.SIGTERM, None)
    entered = False
    with pytest.raises(Stop), interrupts.raising():
        entered = True
    assert not entered


def test_a_signal_while_a_part_starts_waits_until_the_part_is_recorded() -> None:
    interrupts, recorded = Interrupts(), []
    with pytest.raises(Stop), interrupts.raising():
        with interrupts.held():
            interrupts.handle(signal.SIGINT, None)
            recorded.append("etcd")
        recorded.append("never")
    assert recorded == ["etcd"]


def test_a_second_signal_raises_nothing_and_asks_to_kill_at_once() -> None:
    """Even one that comes before the stop has begun: it must not interrupt the stop."""
    interrupts = Interrupts()
    with pytest.raises(Stop), interrupts.raising():
        interrupts.handle(signal.SIGTERM, None)
    interrupts.handle(signal.SIGTERM, None)
    assert interrupts.kill_at_once


def test_a_signal_after_the_launch_block_raises_nothing() -> None:
    """A part failed and the stop is under way: a first Ctrl-C then does not cut it short."""
    interrupts = Interrupts()
    with interrupts.raising():
        pass
    interrupts.handle(signal.SIGINT, None)
    assert not interrupts.kill_at_once
    interrupts.handle(signal.SIGINT, None)
    assert interrupts.kill_at_once
