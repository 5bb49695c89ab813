"""Runtimes as the suite names them: kinds, roles in the features, fixture manifests."""

from __future__ import annotations

import copy
import enum
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from acceptance.core.settings import Settings

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURE_RUNTIMES = REPO_ROOT / "fixtures" / "runtimes"
FIXTURE_SCRIPTS = REPO_ROOT / "fixtures" / "scripts"
# The stateful interpreter of fixtures/runtimes, which localcube serves (an extension).
STATEFUL_FIXTURE = "python-interpreter-stateful"


class RuntimeKind(enum.Enum):
    """The two custom resources, with the names each API spells them by."""

    AGENT_RUNTIME = ("AgentRuntime", "agentruntimes", "agent-runtimes", "agent-runtime")
    CODE_INTERPRETER = (
        "CodeInterpreter",
        "codeinterpreters",
        "code-interpreters",
        "code-interpreter",
    )

    def __init__(self, kind: str, plural: str, router_segment: str, wm_segment: str) -> None:
        self.kind = kind
        self.plural = plural
        self.router_segment = router_segment
        self.wm_segment = wm_segment

    @property
    def resource(self) -> str:
        """The resource as Kubernetes errors name it: agentruntimes.agentcube.volcano.sh."""
        return f"{self.plural}.agentcube.volcano.sh"


@dataclass(frozen=True)
class Runtime:
    kind: RuntimeKind
    namespace: str
    name: str

    @classmethod
    def of_manifest(cls, manifest: Mapping[str, Any]) -> Runtime:
        named, metadata = manifest["kind"], manifest["metadata"]
        kind = next((kind for kind in RuntimeKind if kind.kind == named), None)
        if kind is None:
            raise ValueError(f"{named!r} is neither an AgentRuntime nor a CodeInterpreter")
        return cls(kind, metadata["namespace"], metadata["name"])

    def __str__(self) -> str:
        return f"{self.kind.kind} {self.namespace}/{self.name}"


class Role(enum.Enum):
    """A runtime as the features refer to it; its name comes from the settings."""

    ECHO_AGENT = ("echo agent", RuntimeKind.AGENT_RUNTIME, "echo_agent")
    PYTHON_INTERPRETER = ("python interpreter", RuntimeKind.CODE_INTERPRETER, "python_interpreter")
    WARM_INTERPRETER = ("warm-pool interpreter", RuntimeKind.CODE_INTERPRETER, "warm_interpreter")
    STATEFUL_INTERPRETER = (
        "stateful interpreter",
        RuntimeKind.CODE_INTERPRETER,
        "stateful_interpreter",
    )
    SHORT_TIMEOUT_AGENT = ("echo agent with a short idle timeout", RuntimeKind.AGENT_RUNTIME, None)
    SHORT_LIFETIME_AGENT = (
        "echo agent with a short maximum session duration",
        RuntimeKind.AGENT_RUNTIME,
        None,
    )
    # The echo agent's namespace's neighbour, serving an echo agent of the same name.
    NEIGHBOUR_ECHO_AGENT = ("echo agent of the other namespace", RuntimeKind.AGENT_RUNTIME, None)

    def __init__(self, phrase: str, kind: RuntimeKind, setting: str | None) -> None:
        self.phrase = phrase
        self.kind = kind
        self.setting = setting


def configured_runtime(role: Role, settings: Settings) -> Runtime:
    """The runtime the settings name for a role that has a setting (a fixture runtime)."""
    assert role.setting is not None, f"the {role.phrase} is applied by its scenario"
    name = getattr(settings, role.setting)
    if name is None:
        raise AssertionError(f"no {role.phrase} is configured (setting {role.setting})")
    return Runtime(role.kind, settings.namespace, name)


def configured_runtimes(settings: Settings) -> dict[Role, Runtime]:
    """Every runtime the features call by a setting's name that is set: the ones the
    target must serve."""
    return {
        role: configured_runtime(role, settings)
        for role in Role
        if role.setting is not None and getattr(settings, role.setting) is not None
    }


def fixture_manifest(kind: RuntimeKind, name: str) -> dict[str, Any]:
    """A copy of the fixture resource of this kind and name from fixtures/runtimes."""
    for path in sorted(FIXTURE_RUNTIMES.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if (
                document
                and document.get("kind") == kind.kind
                and document["metadata"]["name"] == name
            ):
                return copy.deepcopy(document)
    raise LookupError(f"no {kind.kind} named {name} in {FIXTURE_RUNTIMES}")


def derive_manifest(
    base: dict[str, Any],
    *,
    name: str,
    namespace: str,
    session_timeout: float,
    max_session_duration: float | None = None,
) -> dict[str, Any]:
    """The base resource renamed, with its sessionTimeout and maxSessionDuration (given)."""
    manifest = copy.deepcopy(base)
    manifest["metadata"] = {**manifest["metadata"], "name": name, "namespace": namespace}
    manifest["spec"]["sessionTimeout"] = f"{session_timeout:g}s"
    if max_session_duration is not None:
        manifest["spec"]["maxSessionDuration"] = f"{max_session_duration:g}s"
    return manifest
