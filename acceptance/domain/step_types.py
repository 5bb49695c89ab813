"""What a step is given: the parameter types of the step phrases, registered with behave by
environment.py, and the context as the steps use it."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, Protocol

from parse_type import TypeBuilder

from acceptance.core.runtimes import Role, RuntimeKind
from acceptance.domain.credentials import (
    UNAUTHORIZED_BECAUSE,
    Credentials,
    refused_as_missing_role,
    refused_as_not_the_owner,
    refused_as_unauthorized,
)
from acceptance.domain.jail import (
    ABSOLUTE_ATTEMPTS,
    JailOperation,
    refused_as_escaping_the_workspace,
)
from acceptance.domain.refusals import BadRequest
from acceptance.domain.sessions import SampleText
from acceptance.domain.streams import Together
from acceptance.domain.world import World


class StepContext(Protocol):
    """behave's context as a step sees it: the scenario's World and the step's table."""

    world: World
    table: Any


def _phrases(mapping: dict[str, Any]) -> Callable[[str], Any]:
    # Longest first, so that "echo agent with a short idle timeout" is not cut short.
    parse: Callable[[str], Any] = TypeBuilder.make_enum(
        dict(sorted(mapping.items(), key=lambda item: -len(item[0])))
    )
    return parse


def _integers(text: str) -> list[int]:
    return [int(number) for number in text.split(",")]


_integers.pattern = r"\d+(?:, *\d+)*"  # type: ignore[attr-defined]

STEP_TYPES: dict[str, Callable[[str], Any]] = {
    # "the {runtime:Runtime}": a runtime by its role in the features.
    "Runtime": _phrases({role.phrase: role for role in Role}),
    # "{kind:RuntimeKind} that does not exist": a runtime kind, with its article.
    "RuntimeKind": _phrases(
        {
            "an agent runtime": RuntimeKind.AGENT_RUNTIME,
            "a code interpreter": RuntimeKind.CODE_INTERPRETER,
        }
    ),
    "Integers": _integers,
    # "I send the session {request:BadRequest}": a request a code interpreter must refuse.
    "BadRequest": _phrases({request.phrase: request for request in BadRequest}),
    # "I {operation:JailOperation} "{path}"": a file operation or a working directory.
    "JailOperation": _phrases({operation.value: operation for operation in JailOperation}),
    # "I {attempt:AbsoluteAttempt}, by its absolute path": an operation on the outside directory.
    "AbsoluteAttempt": _phrases(ABSOLUTE_ATTEMPTS),
    "Credentials": _phrases({credentials.phrase: credentials for credentials in Credentials}),
    # "the call is refused {refusal:Refusal}": a refusal the last answer alone shows.
    "Refusal": _phrases(
        {
            "as forbidden for want of the required role": refused_as_missing_role,
            "because the session belongs to another subject": refused_as_not_the_owner,
            "because the path leaves the workspace": refused_as_escaping_the_workspace,
            **{
                f"as unauthorized because {why}": partial(refused_as_unauthorized, words)
                for why, words in UNAUTHORIZED_BECAUSE.items()
            },
        }
    ),
    "SampleText": _phrases({sample.phrase: sample for sample in SampleText}),
    "InSession": _phrases({"without a session": False, "in that session": True}),
    "IdleHalfway": _phrases(
        {
            "in text and binary": False,
            "idle halfway for longer than the Router's read timeout": True,
        }
    ),
    "SandboxOrigin": _phrases({"that was waiting in the pool": True, "started for it": False}),
    "Together": _phrases({act.phrase: act for act in Together}),
    "OwnAnswers": _phrases({act.answers: act for act in Together}),
}
