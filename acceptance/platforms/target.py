"""The one place that chooses the target of a run: ``read_settings`` chooses the platform
adapter (``registry``) and parses each setting once, the suite's with the adapter's defaults
and the adapter's own; ``resolve_target`` lets the adapter open the Target."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from acceptance.core.evidence import register_secret
from acceptance.core.settings import (
    FOREIGN_USERDATA,
    SETTINGS,
    ConfigError,
    given_names,
    load_settings,
    one_of,
    read_all,
    read_setting,
)
from acceptance.platforms import registry
from acceptance.platforms.base import Target
from acceptance.platforms.registry import Adapter, RunSettings

PLATFORM = next(setting for setting in SETTINGS if setting.name == "platform")


def read_settings(userdata: Mapping[str, str], environ: Mapping[str, str]) -> RunSettings:
    """The run's settings, each parsed once, and which the user set. An adapter's setting
    given as -D with another platform is refused rather than ignored. Raises ConfigError."""
    given = given_names(SETTINGS, userdata, environ)
    choice = dataclasses.replace(PLATFORM, parse=one_of(registry.names()))
    # Unnamed: the suite starts a localcube when no Router is given, else calls the URLs.
    name = read_setting(choice, userdata, environ) or (
        "none" if "router_url" in given else "localcube"
    )
    adapter = registry.adapter(name)  # only it is imported
    own = {setting.name for setting in adapter.settings}
    known = own | {setting.name for setting in SETTINGS}
    left_out = own | _other_platforms_settings(userdata, known, adapter)
    suite_userdata = {k: v for k, v in userdata.items() if k not in left_out}
    given |= given_names(adapter.settings, userdata, environ)
    settings = load_settings(suite_userdata, environ, adapter.defaults(given))
    values = read_all(adapter.settings, userdata, environ)
    # Its own settings, checked together as they are made.
    adapter_settings = adapter.settings_class(**values) if adapter.settings_class else None
    return RunSettings(settings, adapter, adapter_settings, given)


def _other_platforms_settings(
    userdata: Mapping[str, str], known: set[str], chosen: Adapter
) -> set[str]:
    """Other platforms' settings given empty (-D kubeconfig=), to leave out; one given a
    value is refused naming its platform. The other adapters are imported only for a name
    neither the suite's nor the chosen platform's."""
    unknown = {k for k in userdata if k not in known and not k.startswith(FOREIGN_USERDATA)}
    empty: set[str] = set()
    others = [a for a in registry.adapters().values() if a.name != chosen.name] if unknown else []
    for other in others:
        theirs = {s.name for s in other.settings} & unknown
        if stray := sorted(name for name in theirs if userdata[name]):
            docs = f" ({other.docs})" if other.docs else ""
            raise ConfigError(
                f"setting {stray[0]} (-D {stray[0]}) applies only with -D "
                f"platform={other.name}{docs}"
            )
        empty |= theirs
    return empty


def resolve_target(run: RunSettings, environ: Mapping[str, str]) -> Target:
    """The run's target, as its adapter opens it; raises ConfigError (ClusterUnreachable
    among them) or TargetStartError. What it started or opened is the Target's to close."""
    target = run.adapter.open(run, environ)
    for token in (target.api_token, target.second_api_token, target.admin_api_token):
        register_secret(token)
    register_secret(run.suite.workload_manager_token)
    return target
