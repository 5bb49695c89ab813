"""The ``none`` platform: HTTP only."""

from __future__ import annotations

from acceptance.core.transport import Transport
from acceptance.platforms.base import Platform, Target


class NoPlatform(Platform):
    """Offers no capability: scenarios that need one are skipped before they start."""

    name = "none"
    capabilities = frozenset()


class HttpOnlyTarget(Target):
    """A Router and a WorkloadManager given by URL, and nothing else to reach them by."""

    platform_name = NoPlatform.name

    def platform(self, transport: Transport) -> Platform:
        return NoPlatform(transport, self.workload_manager_url)
