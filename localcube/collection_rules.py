"""When the garbage collector ends a session, with the clocks of upstream's store.

Upstream keeps a session's last activity and its expiry as whole Unix seconds (Redis sorted
set scores, pkg/store/store_redis.go), and its GC (pkg/workloadmanager/garbage_collection.go)
looks only at sessions idle since at least `gcMinInactiveLookback` (1 minute on a cluster)
before applying each session's own idle timeout. So a session may end up to a second before
its idle timeout or hard lifetime, and never sooner than the lookback after its last call.

Each pass looks at no more than 100 candidates of each kind (`gcCandidateLimit`), the lowest
scores first and always from the start of the index (upstream issue #454): where more than
100 sessions are candidates, one behind 100 that are not yet idle is never ended.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

CANDIDATES_PER_PASS = 100  # gcCandidateLimit, pkg/workloadmanager/garbage_collection.go:45


def whole_seconds(moment: float) -> int:
    """A Unix time as upstream stores it: Go's `Time.Unix()`, the second it falls in."""
    return math.floor(moment)


@dataclass(frozen=True)
class CollectionRules:
    """`idle_lookback`: the GC's minimum idle lookback in seconds (upstream: 60)."""

    idle_lookback: float = 0.0

    def is_idle(self, last_activity: int, idle_timeout: float, now: float) -> bool:
        """Idle past its timeout: among the candidates idle since the lookback (a score at
        most `(now - lookback).Unix()`), and `last_activity + idle_timeout` before `now`."""
        if last_activity > whole_seconds(now - self.idle_lookback):
            return False
        return last_activity + idle_timeout < now

    def idle_candidates(self, last_activity: Mapping[str, int], now: float) -> list[str]:
        """The sessions (by id, from their whole-second activity) one pass considers for
        idleness: activity at most `(now - lookback).Unix()`, the first CANDIDATES_PER_PASS
        in the order of upstream's sorted set (score, then id)."""
        cutoff = whole_seconds(now - self.idle_lookback)
        return _first_by_score({sid: at for sid, at in last_activity.items() if at <= cutoff})

    @staticmethod
    def is_expired(expires_at: float, now: float) -> bool:
        """Past its hard lifetime: expiry score at most `now.Unix()`."""
        return whole_seconds(expires_at) <= whole_seconds(now)

    @classmethod
    def expired_sessions(cls, expires_at: Mapping[str, float], now: float) -> list[str]:
        """The sessions one pass ends for their hard lifetime: expired, the first
        CANDIDATES_PER_PASS by expiry score, then id."""
        return _first_by_score(
            {sid: whole_seconds(at) for sid, at in expires_at.items() if cls.is_expired(at, now)}
        )


def _first_by_score(scores: Mapping[str, int]) -> list[str]:
    """As `ZRANGEBYSCORE ... LIMIT 0 100` answers: lowest score first, equal scores by member."""
    return sorted(scores, key=lambda sid: (scores[sid], sid))[:CANDIDATES_PER_PASS]
