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


def test_a_pass_looks_at_no_more_than_100_idle_candidates_the_oldest_first() -> None:
    """100 sessions idle since 100 s with a long timeout hide an idle one behind them, as
    in upstream issue #454; equal scores are taken by session id, as a sorted set orders
    them.

    Upstream: pkg/workloadmanager/garbage_collection.go:45,84, pkg/store/store_redis.go:255-266"""
    rules = CollectionRules(idle_lookback=60.0)
    long_idle = {f"long-{number:03}": 100 for number in range(100)}
    candidates = rules.idle_candidates({**long_idle, "idle": 200, "a-recent": 1000}, now=1000.0)
    assert candidates == sorted(long_idle)
    assert rules.idle_candidates({**long_idle, "0-first": 100}, now=1000.0)[0] == "0-first"
    assert "idle" in rules.idle_candidates({"idle": 200, "long-000": 100}, now=1000.0)


def test_a_pass_ends_no_more_than_100_expired_sessions_the_earliest_first() -> None:
    """Expiry scores are whole seconds: 102.7 and 102.1 tie and are taken by id.

    Upstream: pkg/workloadmanager/garbage_collection.go:108, pkg/store/store_redis.go:230-248"""
    expired = {f"s-{number:03}": 50.0 + number for number in range(120)}
    chosen = CollectionRules.expired_sessions({**expired, "later": 500.0}, now=200.0)
    assert chosen == [f"s-{number:03}" for number in range(100)]
    tied = CollectionRules.expired_sessions({"b": 102.1, "a": 102.7, "c": 103.0}, now=102.5)
    assert tied == ["a", "b"]
