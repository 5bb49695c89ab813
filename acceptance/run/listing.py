"""`./dev list`: the scenarios a run would select, with their tags, without running any (no
target is needed). Takes behave's selection arguments: paths, --tags, --name, -D..."""

from __future__ import annotations

import sys
from itertools import groupby

from behave.configuration import Configuration

from acceptance.run.results import run_features, selection


def main(arguments: list[str]) -> int:
    """One line per selected scenario under its feature file, and how many were left out."""
    config = Configuration(arguments)
    features = run_features(config)
    selected = selection(features, config)[0]
    lines = []
    for (filename, name), scenarios in groupby(
        selected, lambda s: (s.feature.filename, s.feature.name)
    ):
        lines.append(f"{filename}: {name}")
        for scenario in scenarios:
            tags = " ".join(f"@{tag}" for tag in sorted(scenario.effective_tags))
            lines.append(f"  :{scenario.line:<4} {scenario.name.strip()}  {tags}")
    total = sum(len(list(feature.walk_scenarios())) for feature in features)
    expression = " and ".join(f"({tags})" for tags in config.tags) or "none"
    lines.append(f"{len(selected)} of {total} scenarios selected (tags: {expression})")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
