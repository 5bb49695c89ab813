"""The closed tag vocabulary of the features, and the gate that skips scenarios that do not
fit the target. No tag outside these families is allowed: plain tags (``TAGS``); active
tags ``@use.with_<setting>=<value>`` / ``@not.with_...`` (``ACTIVE_CATEGORIES``);
``@requires.<capability>`` (``platforms.CAPABILITIES``); ``@fixture.<name>``
(``FIXTURES``); and one ``@id.<id>`` per scenario, its key in docgen/coverage.yaml.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from behave.tag_matcher import ActiveTagMatcher

from acceptance.core.settings import RELEASES
from acceptance.platforms.base import CAPABILITIES, CAPABILITY_HINTS
from acceptance.run.fixtures import FIXTURES

TAGS: dict[str, str] = {
    "smoke": "the core contract in seconds; run on every change",
    "slow": "waits for timeouts or garbage collection",
    "agent-runtime": "exercises an AgentRuntime",
    "code-interpreter": "exercises a CodeInterpreter",
    "ttl": "session idle timeout and expiry",
    "wip": "work in progress; excluded by default (behave.ini)",
    "disruptive": "disturbs the target for other scenarios; excluded by default (behave.ini)",
    "serial": "observes or loads the whole target: never run alongside other scenarios",
    "long-task": "calls that run long, and command timeouts",
    "warm-pool": "sandboxes started in advance, and first calls with and without them",
    "errors": "the errors a client must tell apart: their statuses, codes and bodies",
    "security": "workspace jail, session isolation, credentials and authentication",
    "reliability": "concurrency, overload, restarts and crashes",
    "streaming": "server-sent events, answers of unknown length and WebSockets through the Router",
    "load": "sustained load, as upstream's load tests: sessions opened at a steady rate; "
    "excluded by default (behave.ini)",
}

# Active-tag categories are settings: category -> the values the setting allows.
ACTIVE_CATEGORIES: dict[str, tuple[str, ...]] = {
    "agentcube_release": RELEASES,
}

_ID = re.compile(r"^id\.[a-z0-9]+(-[a-z0-9]+)*$")


def known_tags() -> list[str]:
    """Every tag of the vocabulary but the ids, for messages and for wildcard expressions."""
    active = [
        f"{polarity}.with_{category}={value}"
        for category, values in ACTIVE_CATEGORIES.items()
        for value in values
        for polarity in ("use", "not")
    ]
    requires = [f"requires.{capability}" for capability in CAPABILITIES]
    return [*TAGS, *active, *requires, *FIXTURES]


def is_known_tag(tag: str) -> bool:
    """Whether the tag belongs to the vocabulary."""
    return tag in known_tags() or is_id_tag(tag)


def is_id_tag(tag: str) -> bool:
    """Whether the tag is a scenario's id, which names one scenario and groups none."""
    return bool(_ID.match(tag))


class ScenarioGate:
    """Decides, from a scenario's tags, whether it can run against this target."""

    def __init__(
        self,
        active_values: dict[str, str],
        platform: str,
        capabilities: Iterable[str],
        hints: Mapping[str, str] | None = None,  # the target's, in place of CAPABILITY_HINTS
    ):
        self._values = active_values
        self._matcher = ActiveTagMatcher(active_values)
        self._platform = platform
        self.capabilities = frozenset(capabilities)  # what this run's target can do
        self._hints = {**CAPABILITY_HINTS, **(hints or {})}

    def skip_reason(self, tags: Iterable[str]) -> str | None:
        """Why a scenario with these tags cannot run here, or None when it can."""
        tags = list(tags)
        for category, pairs in self._matcher.group_active_tags_by_category(tags):
            if not self._matcher.is_tag_group_enabled(category, pairs):
                tags_text = " ".join(f"@{tag}" for tag, _ in pairs)
                return (
                    f"{tags_text} does not fit {category}={self._values[category]} "
                    f"(choose with -D {category}=...)"
                )
        for tag in tags:
            capability = tag.removeprefix("requires.")
            if capability != tag and capability not in self.capabilities:
                hint = self._hints.get(
                    capability,
                    f"platform {self._platform!r} cannot (choose with -D platform=...)",
                )
                return f"needs a target that can {CAPABILITIES[capability]} ({capability}); {hint}"
        return None
