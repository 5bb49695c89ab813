"""`./dev list`: the scenarios a run would select, with their tags, without running any (no
target is needed). Takes behave's selection arguments: paths, --tags, --name, -D..."""

from __future__ import annotations

import sys

from behave.configuration import Configuration
from behave.model import Feature

from acceptance.run.results import run_features, selection


def listing(features: list[Feature], config: Configuration) -> str:
    """One line per selected scenario under its feature file, and how many were left out."""
    lines, total, chosen = [], 0, 0
    for feature in features:
        scenarios = list(feature.walk_scenarios())
        total += len(scenarios)
        selected = selection([feature], config)[0]
        chosen += len(selected)
        if selected:
            lines.append(f"{feature.filename}: {feature.name}")
        for scenario in selected:
            tags = " ".join(f"@{tag}" for tag in sorted(scenario.effective_tags))
            lines.append(f"  :{scenario.line:<4} {scenario.name.strip()}  {tags}")
    expression = " and ".join(f"({tags})" for tags in config.tags) or "none"
    lines.append(f"{chosen} of {total} scenarios selected (tags: {expression})")
    return "\n".join(lines)


def main(arguments: list[str]) -> int:
    config = Configuration(arguments)
    print(listing(run_features(config), config))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
