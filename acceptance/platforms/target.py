"""The one place that chooses the target of a run.

``read_settings`` chooses the platform adapter (``acceptance.platforms.registry``) and parses
each setting once: the suite's, with the adapter's defaults, and the adapter's own.
``resolve_target`` then lets the adapter open the Target every other module receives: URLs
that are never None, the tokens, the platform and what the run can do with it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from acceptance.core.evidence import register_secret
from acceptance.core.settings import (
    FOREIGN_USERDATA,
    SETTINGS,
    ConfigError,
    Given,
    given_names,
    load_settings,
    one_of,
    read_setting,
)
from acceptance.platforms import registry
from acceptance.platforms.base import Target
from acceptance.platforms.registry import Adapter, RunSettings

PLATFORM = next(setting for setting in SETTINGS if setting.name == "platform")
# The platform of a run that names none: the suite starts a localcube when no Router is
# configured, and otherwise can only call the URLs given.
STARTED_PLATFORM = "localcube"
GIVEN_URLS_PLATFORM = "none"


def read_settings(userdata: Mapping[str, str], environ: Mapping[str, str]) -> RunSettings:
    """The run's settings, each parsed once, and which the user set. An adapter's setting
    given as -D with another platform is refused rather than ignored. Raises ConfigError."""
    given = given_names(SETTINGS, userdata, environ)
    adapter = chosen_adapter(registry.names(), userdata, environ, given)
    given |= given_names(adapter.settings, userdata, environ)
    own = {setting.name for setting in adapter.settings}
    known = own | {setting.name for setting in SETTINGS}
    left_out = own | _other_platforms_settings(userdata, known, adapter)
    suite_userdata = {k: v for k, v in userdata.items() if k not in left_out}
    settings = load_settings(suite_userdata, environ, adapter.defaults(given))
    return RunSettings(settings, adapter, adapter.own_settings(userdata, environ), given)


def chosen_adapter(
    names: tuple[str, ...],
    userdata: Mapping[str, str],
    environ: Mapping[str, str],
    given: Given,
) -> Adapter:
    """The adapter the platform setting names, else the default for the Router given or not;
    only it is imported."""
    choice = dataclasses.replace(PLATFORM, parse=one_of(names))
    name = read_setting(choice, userdata, environ)
    if name is None:
        name = GIVEN_URLS_PLATFORM if "router_url" in given else STARTED_PLATFORM
    return registry.adapter(name)


def _other_platforms_settings(
    userdata: Mapping[str, str], known: set[str], chosen: Adapter
) -> set[str]:
    """The names of other platforms' settings given empty (-D kubeconfig=), to leave out;
    one given a value is refused naming its platform rather than ignored. Only when a name
    is neither the suite's nor the chosen platform's are the other adapters imported."""
    unknown = {k for k in userdata if k not in known and not k.startswith(FOREIGN_USERDATA)}
    if not unknown:
        return set()
    empty = set()
    for other in registry.adapters().values():
        if other.name == chosen.name:
            continue
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
