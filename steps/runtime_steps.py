"""Steps about runtimes: missing ones, and ones a scenario applies for itself."""

from behave import given, then, when

from acceptance.core.runtimes import RuntimeKind
from acceptance.domain.lifetimes import Lifetimes
from acceptance.domain.refusals import Refusals
from acceptance.domain.step_types import StepContext


@when("I call {kind:RuntimeKind} that does not exist")
def step_call_missing_runtime(context: StepContext, kind: RuntimeKind) -> None:
    context.world.part(Refusals).call_missing_runtime(kind)


@then("the call is refused because the runtime was not found")
def step_refused_runtime_not_found(context: StepContext) -> None:
    context.world.part(Refusals).expect_refused_as_runtime_not_found()


@given("an echo agent with a short idle timeout")
def step_apply_short_timeout_agent(context: StepContext) -> None:
    context.world.part(Lifetimes).apply_short_timeout_agent()
