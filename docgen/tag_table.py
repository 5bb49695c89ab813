"""The tag vocabulary's table in docs/configuration.md, generated from acceptance/run/tags.py:
`python -m docgen.tag_table` prints it; tests/test_readme.py keeps the document in step."""

from __future__ import annotations

import sys

from acceptance.platforms.base import CAPABILITIES, CAPABILITY_HINTS
from acceptance.run.fixtures import FIXTURES
from acceptance.run.tags import ACTIVE_CATEGORIES, TAGS


def tag_table() -> str:
    """The tag vocabulary as docs/configuration.md shows it (generated, kept in step by a
    test): plain tags, active tags, a row per capability with how to obtain it, and a row
    per fixture."""
    rows = ["| tag | meaning |", "|---|---|"]
    rows += [f"| `@{tag}` | {meaning} |" for tag, meaning in TAGS.items()]
    rows += [
        f"| `@use.with_{category}=VALUE`, `@not.with_{category}=VALUE` | runs only when the "
        f"setting `{category}` is (or is not) VALUE, one of {', '.join(values)} |"
        for category, values in ACTIVE_CATEGORIES.items()
    ]
    rows += [
        f"| `@requires.{capability}` | runs only on a target that can {meaning}"
        + (f" ({CAPABILITY_HINTS[capability]})" if capability in CAPABILITY_HINTS else "")
        + " |"
        for capability, meaning in CAPABILITIES.items()
    ]
    rows += [
        f"| `@{tag}` | gives the scenario {' '.join((set_up.__doc__ or '').split())} |"
        for tag, set_up in FIXTURES.items()
    ]
    return "\n".join(rows)


if __name__ == "__main__":
    sys.stdout.write(tag_table() + "\n")
