"""The garbage collector's rules with upstream's whole-second clocks, decided on given
times (the tests in test_lifecycle.py show a running localcube applying them)."""

from __future__ import annotations

from localcube.collection_rules import CollectionRules, whole_seconds


def test_activity_is_the_second_a_call_fell_in() -> None:
    """Upstream: pkg/store/store_redis.go:314-330"""
    assert whole_seconds(100.999) == 100
    assert whole_seconds(100.0) == 100


def test_a_session_idles_out_counting_from_the_second_of_its_last_call() -> None:
    """A call at 100.9 s with a 2 s timeout is idle once 102 s have passed: 1.1 s later.

    Upstream: pkg/workloadmanager/garbage_collection.go:92-104"""
    rules = CollectionRules()
    last = whole_seconds(100.9)
    assert not rules.is_idle(last, 2.0, now=102.0)
    assert rules.is_idle(last, 2.0, now=102.001)


def test_a_session_idles_out_only_after_the_lookback() -> None:
    """Only sessions idle since the lookback are candidates: `(now - lookback).Unix()`.

    Upstream: pkg/workloadmanager/garbage_collection.go:81-85"""
    rules = CollectionRules(idle_lookback=60.0)
    last = 100
    assert not rules.is_idle(last, 2.0, now=159.999)
    assert rules.is_idle(last, 2.0, now=160.0)
    assert not CollectionRules(idle_lookback=60.0).is_idle(last, 90.0, now=160.0)
    assert CollectionRules(idle_lookback=60.0).is_idle(last, 90.0, now=190.001)


def test_a_session_expires_in_the_second_its_lifetime_ends() -> None:
    """An expiry at 102.7 s is due from 102.0 s on: up to a second early.

    Upstream: pkg/store/store_redis.go:230-248"""
    assert not CollectionRules.is_expired(102.7, now=101.999)
    assert CollectionRules.is_expired(102.7, now=102.0)
