"""The platform adapters a run can choose from, by name, each imported only when chosen.

An adapter is one module that declares its ``ADAPTER``: a module of this package named in
``BUILT_IN`` (``localcube``, ``none``, ``kubernetes/``), or one outside this repository
registered under the entry-point group ``acceptance.platforms`` (``name = module:ADAPTER``).
It says its name, its own settings, the suite settings whose default it changes, how it
opens a Target and what it hands parallel workers; ``acceptance.platforms.target`` does the
rest. ``names()`` lists them without importing any, ``adapter(name)`` imports the one a run
chooses (so a Kubernetes run never imports localcube), and ``adapters()`` all of them, for
the generated documents and for naming the platform a stray setting belongs to.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from acceptance.core.settings import ConfigError, Given, Setting, Settings
from acceptance.platforms.base import Target

ENTRY_POINT_GROUP = "acceptance.platforms"
# This package's adapters: platform name -> the module whose ADAPTER it is.
BUILT_IN = {
    "kubernetes": "acceptance.platforms.kubernetes",
    "localcube": "acceptance.platforms.localcube",
    "none": "acceptance.platforms.none",
}


@dataclass(frozen=True)
class RunSettings:
    """A run's settings, each parsed once: the suite's (with the adapter's defaults), the
    chosen adapter, its own settings as its ``load_settings`` made them, and which of both
    the user set."""

    suite: Settings
    adapter: Adapter
    adapter_settings: Any = field(repr=False)
    given: Given = frozenset()


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


def names() -> tuple[str, ...]:
    """Every platform's name, this package's first, none of them imported."""
    return tuple(dict.fromkeys([*BUILT_IN, *(entry.name for entry in _entry_points())]))


def adapter(name: str) -> Adapter:
    """The adapter of the platform `name` (one of ``names()``), imported now. Raises
    ConfigError when it is no Adapter or names itself otherwise."""
    if name in BUILT_IN:
        found, source = getattr(importlib.import_module(BUILT_IN[name]), "ADAPTER", None), name
    else:
        entry = next(entry for entry in _entry_points() if entry.name == name)
        found, source = entry.load(), f"entry point {entry.name} = {entry.value}"
    if not isinstance(found, Adapter):
        raise ConfigError(
            f"{source} (group {ENTRY_POINT_GROUP}) is not an "
            f"acceptance.platforms.registry.Adapter but {type(found).__name__}"
        )
    if found.name != name:
        raise ConfigError(f"{source} is registered as {name} but names itself {found.name}")
    return found


def adapters() -> dict[str, Adapter]:
    """Every adapter, by name, all imported: this package's, then the entry points'. Raises
    ConfigError when one is no Adapter or two share a name."""
    sources = {name: [module] for name, module in BUILT_IN.items()}
    for entry in _entry_points():
        sources.setdefault(entry.name, []).append(f"entry point {entry.name} = {entry.value}")
    for name, where in sources.items():
        if len(where) > 1:
            raise ConfigError(f"two platform adapters are named {name}: {' and '.join(where)}")
    return {name: adapter(name) for name in names()}


def _entry_points() -> tuple[EntryPoint, ...]:
    return tuple(entry_points(group=ENTRY_POINT_GROUP))
