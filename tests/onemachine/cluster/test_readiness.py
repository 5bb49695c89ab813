"""onemachine/cluster/readiness.py: the cluster's one waiting loop."""

from __future__ import annotations

import itertools

import pytest

from onemachine.cluster.readiness import wait_until


def test_the_first_true_value_ends_the_wait() -> None:
    tries = itertools.count(1)
    assert wait_until(lambda: next(tries) >= 3 and "ready", timeout=30, interval=0.01) == "ready"
    assert next(tries) == 4, "tried once after the value came"


def test_a_wait_that_times_out_is_none_after_trying_at_least_once() -> None:
    tries = []
    assert wait_until(lambda: tries.append(1), timeout=-1, interval=0.01) is None
    assert tries == [1]


def test_an_exception_ends_the_wait_as_it_is() -> None:
    def exits() -> bool:
        raise RuntimeError("the part exited")

    with pytest.raises(RuntimeError, match="the part exited"):
        wait_until(exits, timeout=None, interval=0.01)
