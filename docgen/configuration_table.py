"""The settings tables, generated from the settings themselves: docs/configuration.md's, every
suite setting with its default (the shortest that keeps each check meaningful on localcube)
beside each platform's that changes it (a cluster's); and each platform adapter's own
settings and defaults, for its page (docs/kubernetes.md). `python -m
docgen.configuration_table` prints the first; tests/test_readme.py keeps the
documents in step."""

from __future__ import annotations

import sys

from acceptance.core.settings import SETTINGS
from acceptance.platforms.registry import Adapter, adapters


def settings_table() -> str:
    changing = [adapter for adapter in adapters().values() if adapter.suite_defaults]
    headings = "".join(f" {adapter.defaults_heading} |" for adapter in changing)
    rows = [
        f"| `-D` name | environment variable | default |{headings} meaning |",
        "|---|---|---|" + "---|" * len(changing) + "---|",
    ]
    for s in SETTINGS:
        defaults = "".join(
            f" `{adapter.suite_defaults[s.name][0]}` |"
            if s.name in adapter.suite_defaults
            else " same |"
            for adapter in changing
        )
        rows.append(f"| `{s.name}` | `{s.env}` | {s.describe_default()} |{defaults} {s.meaning} |")
    return "\n".join(rows)


def adapter_settings_rows(adapter: Adapter) -> list[str]:
    """The adapter's own settings as rows (columns: -D name, environment variable, default,
    meaning); a secret one has no -D name, being read from the environment only."""
    return [
        f"| {'—' if s.secret else f'`{s.name}`'} | `{s.env}` | {s.describe_default()} | "
        f"{s.meaning} |"
        for s in adapter.settings
    ]


def adapter_default_rows(adapter: Adapter) -> list[str]:
    """The suite settings whose default the adapter changes, and why (columns: setting,
    default, why)."""
    return [
        f"| `{name}` | `{value}` | {why} |" for name, (value, why) in adapter.suite_defaults.items()
    ]


if __name__ == "__main__":
    sys.stdout.write(settings_table() + "\n")
