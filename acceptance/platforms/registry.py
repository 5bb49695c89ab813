"""The platform adapters a run can choose from, by name.

An adapter is one module: a module of this package (``localcube``, ``none``,
``kubernetes/``) declares its ``ADAPTER``, and one outside this repository registers it
under the entry-point group ``acceptance.platforms`` (``name = module:ADAPTER``). It says
its name, its own settings, the suite settings whose default it changes, how it opens a
Target and what it hands parallel workers; ``acceptance.platforms.target`` does the rest.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

import acceptance.platforms
from acceptance.core.settings import ConfigError, Setting, Settings, read_setting
from acceptance.platforms.base import Target

ENTRY_POINT_GROUP = "acceptance.platforms"
# Whether a suite setting was given (-D or its environment variable), by name.
Given = Callable[[str], bool]


@dataclass(frozen=True)
class RunSettings:
    """A run's settings, each parsed once: the suite's (with the adapter's defaults), the
    chosen adapter and its own settings as its ``load_settings`` made them."""

    suite: Settings
    adapter: Adapter
    adapter_settings: Any = field(repr=False)


def _no_defaults(given: Given) -> Mapping[str, str]:
    return {}


@dataclass(frozen=True)
class Adapter:
    """A platform adapter as the run knows it.

    - ``open(run, environ)``: the run's Target, its capabilities fixed as it is built;
      raises ConfigError or TargetStartError, and closes what it opened when it fails;
    - ``settings``: its own settings (refused when another platform is chosen), read by
      ``load_settings(userdata, environ)`` (by default: a dict of their values);
    - ``suite_defaults``: suite settings whose default it changes, as (value, why), shown
      in the configuration table's column ``defaults_heading``; ``given_defaults``: those
      that depend on what else was given;
    - ``worker_settings``: -D values the parallel workers get beside the target's URLs,
      tokens and release (so they share what this process opened);
    - ``docs``: the page that tells how to run it.
    """

    name: str
    open: Callable[[RunSettings, Mapping[str, str]], Target]
    settings: tuple[Setting, ...] = ()
    load_settings: Callable[[Mapping[str, str], Mapping[str, str]], Any] | None = None
    suite_defaults: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    defaults_heading: str = ""
    given_defaults: Callable[[Given], Mapping[str, str]] = _no_defaults
    worker_settings: Mapping[str, str] = field(default_factory=dict)
    docs: str = ""

    def defaults(self, given: Given) -> dict[str, str]:
        """The suite settings' defaults under this platform, by name."""
        return {
            **{name: value for name, (value, _) in self.suite_defaults.items()},
            **self.given_defaults(given),
        }

    def own_settings(self, userdata: Mapping[str, str], environ: Mapping[str, str]) -> Any:
        """Its own settings, parsed; raises ConfigError naming the one to fix."""
        if self.load_settings is not None:
            return self.load_settings(userdata, environ)
        return {setting.name: read_setting(setting, userdata, environ) for setting in self.settings}


def adapters() -> dict[str, Adapter]:
    """Every adapter, by name: this package's modules', then the entry points'. Raises
    ConfigError when two share a name or an entry point names no Adapter."""
    found: dict[str, tuple[Adapter, str]] = {}
    modules = pkgutil.iter_modules(acceptance.platforms.__path__, "acceptance.platforms.")
    candidates = [
        (getattr(importlib.import_module(module.name), "ADAPTER", None), module.name)
        for module in modules
    ]
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        adapter = entry.load()
        if not isinstance(adapter, Adapter):
            raise ConfigError(
                f"entry point {entry.name} = {entry.value} (group {ENTRY_POINT_GROUP}) is not "
                f"an acceptance.platforms.registry.Adapter but {type(adapter).__name__}"
            )
        candidates.append((adapter, entry.value))
    for adapter, source in candidates:
        if adapter is None:
            continue
        if adapter.name in found:
            raise ConfigError(
                f"two platform adapters are named {adapter.name}: {found[adapter.name][1]} "
                f"and {source}"
            )
        found[adapter.name] = (adapter, source)
    return {name: adapter for name, (adapter, _) in found.items()}
