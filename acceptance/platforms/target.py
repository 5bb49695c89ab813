"""The one place that chooses the target of a run: ``read_settings`` chooses the platform
adapter (``registry``) and parses each setting once, the suite's with the adapter's defaults
and the adapter's own; ``open_target`` lets the adapter open the Target."""

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

PLATFORM = next(setting for setting in SETTINGS if setting.name == "platform")
SUITE_NAMES = frozenset(setting.name for setting in SETTINGS)


def read_settings(userdata: Mapping[str, str], environ: Mapping[str, str]) -> registry.RunSettings:
    """The run's settings, each parsed once, and which the user set: the suite's, with the
    defaults of the adapter the platform setting names (else the default for the Router
    given or not; only it is imported), and the adapter's own. Raises ConfigError.

    Read top to bottom: the platform first, then the settings it brings, in one place."""
    given = given_names(SETTINGS, userdata, environ)
    platform = dataclasses.replace(PLATFORM, parse=one_of(registry.names()))
    # Unnamed: the suite starts a localcube when no Router is given, else calls the URLs.
    choice = read_setting(platform, userdata, environ)
    adapter = registry.adapter(choice or ("none" if "router_url" in given else "localcube"))
    given |= given_names(adapter.settings, userdata, environ)
    own = {setting.name for setting in adapter.settings}
    # Another platform's setting given empty (-D kubeconfig=) is left out; given a value it
    # is refused, naming its platform, rather than ignored. Only a name that is neither the
    # suite's nor the chosen platform's has the other adapters imported.
    strange = {
        name
        for name in userdata
        if name not in SUITE_NAMES | own and not name.startswith(FOREIGN_USERDATA)
    }
    theirs = {
        setting.name: other
        for other in (registry.adapters().values() if strange else ())
        for setting in other.settings
        if setting.name in strange
    }
    if stray := sorted(name for name in theirs if userdata[name]):
        other = theirs[stray[0]]
        docs = f" ({other.docs})" if other.docs else ""
        raise ConfigError(
            f"setting {stray[0]} (-D {stray[0]}) applies only with -D platform={other.name}{docs}"
        )
    defaults = {name: value for name, (value, _) in adapter.suite_defaults.items()}
    defaults |= {
        name: value for name, value, unless in adapter.defaults_unless_given if not unless & given
    }
    suite = load_settings(
        {name: value for name, value in userdata.items() if name not in own | set(theirs)},
        environ,
        defaults,
    )
    # The adapter's own settings, checked together as they are made.
    values = read_all(adapter.settings, userdata, environ)
    own_settings = adapter.settings_class(**values) if adapter.settings_class else None
    return registry.RunSettings(suite, adapter, own_settings, given)


def open_target(
    userdata: Mapping[str, str], environ: Mapping[str, str]
) -> tuple[registry.RunSettings, Target]:
    """The run's settings (``read_settings``) and its target, as the chosen adapter opens it;
    raises ConfigError (ClusterUnreachable among them) or TargetStartError. What it started
    or opened is the Target's to close."""
    run = read_settings(userdata, environ)
    target = run.adapter.open(run, environ)
    for token in target.callers_tokens().values():
        register_secret(token)
    register_secret(run.suite.workload_manager_token)
    return run, target
