"""The ``none`` platform: a Router and a WorkloadManager given by URL, HTTP only; scenarios
that need a capability are skipped before they start."""

from __future__ import annotations

from collections.abc import Mapping

from acceptance.platforms.base import Platform, Target, given_urls
from acceptance.platforms.registry import Adapter, RunSettings


def open_http_only(run: RunSettings, environ: Mapping[str, str]) -> Target:
    urls = given_urls(run.suite, Platform.name)
    return Target.configured(urls, run.suite, Platform.capabilities)


ADAPTER = Adapter(Platform.name, open_http_only)
