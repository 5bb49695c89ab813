"""Steps about the hard lifetime of sessions (the idle timeout's are in session_steps)."""

from behave import given, then, when

from acceptance.core.runtimes import Role
from acceptance.domain.lifetimes import Lifetimes
from acceptance.domain.step_types import StepContext


@given("an echo agent with a short maximum session duration")
def step_apply_short_lifetime_agent(context: StepContext) -> None:
    context.world.part(Lifetimes).apply_short_lifetime_agent()


@given("a session of the {runtime:Runtime} that asks for a short lifetime")
def step_open_session_with_ttl(context: StepContext, runtime: Role) -> None:
    context.world.part(Lifetimes).open_session_with_short_ttl(runtime)


@when("the session is called continuously until it is no longer served")
def step_keep_session_busy(context: StepContext) -> None:
    context.world.part(Lifetimes).keep_session_busy_until_it_ends()


@then("the session lasted its hard lifetime")
def step_session_lasted_lifetime(context: StepContext) -> None:
    context.world.part(Lifetimes).expect_session_lasted_its_lifetime()
