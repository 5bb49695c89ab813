"""When the garbage collector ends a session, with the clocks of upstream's store.

Upstream keeps a session's last activity and its expiry as whole Unix seconds (Redis sorted
set scores, pkg/store/store_redis.go), and its GC (pkg/workloadmanager/garbage_collection.go)
looks only at sessions idle since at least `gcMinInactiveLookback` (1 minute on a cluster)
before applying each session's own idle timeout. So a session may end up to a second before
its idle timeout or hard lifetime, and never sooner than the lookback after its last call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


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

    @staticmethod
    def is_expired(expires_at: float, now: float) -> bool:
        """Past its hard lifetime: expiry score at most `now.Unix()`."""
        return whole_seconds(expires_at) <= whole_seconds(now)
