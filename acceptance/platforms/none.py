"""The ``none`` platform: HTTP only."""

from __future__ import annotations

from collections.abc import Mapping

from acceptance.core.transport import Transport
from acceptance.platforms.base import Platform, Target, given_urls
from acceptance.platforms.registry import Adapter, RunSettings


class NoPlatform(Platform):
    """Offers no capability: scenarios that need one are skipped before they start."""

    name = "none"
    capabilities = frozenset()


class HttpOnlyTarget(Target):
    """A Router and a WorkloadManager given by URL, and nothing else to reach them by."""

    platform_name = NoPlatform.name

    def platform(self, transport: Transport) -> Platform:
        return NoPlatform()


def open_http_only(run: RunSettings, environ: Mapping[str, str]) -> HttpOnlyTarget:
    """The URLs given, and the tokens; raises ConfigError without a Router."""
    urls = given_urls(run.suite, NoPlatform.name)
    return HttpOnlyTarget.configured(urls, run.suite, NoPlatform.capabilities)


ADAPTER = Adapter(NoPlatform.name, open_http_only)
