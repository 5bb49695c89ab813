"""Steps about runtimes: missing ones, and ones a scenario applies for itself."""

from behave import given, then, when
from behave.runner import Context
from hamcrest import assert_that

from acceptance.core import matchers
from acceptance.core.runtimes import RuntimeKind
from acceptance.domain.lifetimes import Lifetimes


@when("I call {kind:RuntimeKind} that does not exist")
def step_call_missing_runtime(context: Context, kind: RuntimeKind) -> None:
    context.world.call_missing_runtime(kind)


@then("the call is refused because the runtime was not found")
def step_refused_runtime_not_found(context: Context) -> None:
    call = context.world.last_call
    assert_that(call.response, matchers.refused_because_runtime_not_found(call.runtime))


@given("an echo agent with a short idle timeout")
def step_apply_short_timeout_agent(context: Context) -> None:
    context.world.part(Lifetimes).apply_short_timeout_agent()
