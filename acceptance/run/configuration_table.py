"""The settings table of docs/configuration.md, generated from the settings themselves:
every suite setting with its default (the shortest that keeps each check meaningful on
localcube) beside a cluster's. `python -m acceptance.run.configuration_table` prints it;
tests/test_readme.py keeps the document in step."""

from __future__ import annotations

import sys

from acceptance.core.settings import SETTINGS
from acceptance.platforms.kubernetes.settings import CLUSTER_DEFAULTS


def settings_table() -> str:
    rows = [
        "| `-D` name | environment variable | default | on a cluster | meaning |",
        "|---|---|---|---|---|",
    ]
    for s in SETTINGS:
        cluster = f"`{CLUSTER_DEFAULTS[s.name][0]}`" if s.name in CLUSTER_DEFAULTS else "same"
        rows.append(
            f"| `{s.name}` | `{s.env}` | {s.describe_default()} | {cluster} | {s.meaning} |"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    sys.stdout.write(settings_table() + "\n")
