"""The rule of acceptance/domain/__init__.py, read from the steps' source (ast): When steps
act, Then steps call an `expect_*`, no step asserts anything itself, and every step is one
line of intent (a single statement)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

STEPS = Path(__file__).resolve().parents[2] / "steps"


def _steps(source: str) -> list[tuple[str, ast.FunctionDef]]:
    """Each step function of a module with its keyword (given, when, then)."""
    found = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef):
            for decorator in node.decorator_list:
                if isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Name):
                    found.append((decorator.func.id, node))
    return found


def _called_names(function: ast.FunctionDef) -> set[str]:
    names = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute):
                names.add(node.func.attr)
            elif isinstance(node.func, ast.Name):
                names.add(node.func.id)
    return names


def rule_breaches(source: str) -> list[str]:
    """What in this steps module breaks the rule, one line per step."""
    breaches = []
    for keyword, step in _steps(source):
        expects = sorted(name for name in _called_names(step) if name.startswith("expect_"))
        if keyword == "then" and not expects:
            breaches.append(f"Then step {step.name} calls no expect_*")
        if keyword == "when" and expects:
            breaches.append(f"When step {step.name} calls {', '.join(expects)}")
        if any(isinstance(node, ast.Assert) for node in ast.walk(step)) or (
            "assert_that" in _called_names(step)
        ):
            breaches.append(f"step {step.name} asserts itself instead of calling an expect_*")
        statements = step.body[1:] if ast.get_docstring(step) else step.body
        if len(statements) != 1:
            breaches.append(f"step {step.name} is {len(statements)} statements, not one")
    return breaches


@pytest.mark.parametrize("module", sorted(STEPS.glob("*.py")), ids=lambda path: path.name)
def test_the_steps_follow_the_rule(module: Path) -> None:
    assert rule_breaches(module.read_text()) == []


def test_the_steps_are_found() -> None:
    steps = [step for module in STEPS.glob("*.py") for step in _steps(module.read_text())]
    assert {keyword for keyword, _ in steps} == {"given", "when", "then"}
    assert len(steps) > 50


BROKEN = """
@then("the answer is fine")
def step_fine(context):
    assert_that(context.world.last_answer, matchers.succeeded("it"))


@then("nothing is checked")
def step_nothing(context):
    context.world.part(Echoes).send(SampleText.EMPTY, Role.ECHO_AGENT)


@when("I act and check")
def step_act(context):
    context.world.part(Echoes).expect_echoed_unchanged()


@when("I act")
def step_acts(context):
    context.world.part(Echoes).send(SampleText.EMPTY, Role.ECHO_AGENT)


@when("I act twice")
def step_acts_twice(context):
    echoes = context.world.part(Echoes)
    echoes.send(SampleText.EMPTY, Role.ECHO_AGENT)


@then("it is checked")
def step_checked(context):
    context.world.part(Echoes).expect_echoed_unchanged()
"""


def test_a_step_breaking_the_rule_is_named() -> None:
    assert rule_breaches(BROKEN) == [
        "Then step step_fine calls no expect_*",
        "step step_fine asserts itself instead of calling an expect_*",
        "Then step step_nothing calls no expect_*",
        "When step step_act calls expect_echoed_unchanged",
        "step step_acts_twice is 2 statements, not one",
    ]
