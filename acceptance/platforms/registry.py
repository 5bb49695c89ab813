"""The platform adapters a run can choose from, by name, each imported only when chosen.

An adapter is a module declaring its ``ADAPTER``: one of this package's (``BUILT_IN``), or
one registered under the entry-point group ``acceptance.platforms`` (``name = module:ADAPTER``).
A run imports only the one it chooses (a Kubernetes run never imports localcube); the generated
documents, and naming the platform a stray setting belongs to, import all.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from acceptance.core.settings import ConfigError, Given, Setting, Settings, declared
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
    chosen adapter and its own settings, and which of both the user set."""

    suite: Settings
    adapter: Adapter
    adapter_settings: Any = field(repr=False)
    given: Given = frozenset()


@dataclass(frozen=True)
class Adapter:
    name: str
    # The run's Target, its capabilities fixed; raises ConfigError or TargetStartError,
    # closing what it opened.
    open: Callable[[RunSettings, Mapping[str, str]], Target]
    # Its own settings (refused with another platform): a dataclass declaring each with
    # acceptance.core.settings.setting, which checks them together as it is made.
    settings_class: type | None = None
    # Suite settings whose default it changes, as (value, why), in the configuration table's
    # column `defaults_heading`.
    suite_defaults: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    defaults_heading: str = ""
    # Suite defaults that hold unless a setting named beside them is given.
    defaults_unless_given: tuple[tuple[str, str, frozenset[str]], ...] = ()
    # -D values the parallel workers get beside the URLs, tokens and release (to share what
    # this process opened).
    worker_settings: Mapping[str, str] = field(default_factory=dict)
    docs: str = ""  # the page that tells how to run it

    @property
    def settings(self) -> tuple[Setting, ...]:
        return declared(self.settings_class) if self.settings_class else ()


def names() -> tuple[str, ...]:
    """Every platform's name, this package's first, none of them imported."""
    return tuple(dict.fromkeys([*BUILT_IN, *(entry.name for entry in _entry_points())]))


def adapter(name: str) -> Adapter:
    """The adapter of the platform `name` (one of ``names()``), imported now; raises
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
