"""Steps about how sessions end: the idle timeout and the hard lifetime."""

from behave import given, then, when

from acceptance.core.runtimes import Role
from acceptance.domain.lifetimes import Lifetimes
from acceptance.domain.step_types import StepContext


@given("an echo agent with a short idle timeout")
def step_apply_short_timeout_agent(context: StepContext) -> None:
    context.world.part(Lifetimes).apply_short_timeout_agent()


@then("the call is refused because the session was not found")
def step_refused_session_not_found(context: StepContext) -> None:
    context.world.part(Lifetimes).expect_call_refused_as_not_found()


@when("the session is called more often than its idle timeout, for twice that timeout")
def step_call_session_often(context: StepContext) -> None:
    context.world.part(Lifetimes).call_often_for_twice_the_timeout()


@then("every call is served in the session, by the same sandbox")
def step_served_throughout(context: StepContext) -> None:
    context.world.part(Lifetimes).expect_served_throughout()


@when("the session is left idle for longer than its idle timeout")
def step_leave_session_idle(context: StepContext) -> None:
    context.world.part(Lifetimes).leave_session_idle_until_it_ends()


@then("calls in the session are refused because the session was not found")
def step_expired_session_refused(context: StepContext) -> None:
    context.world.part(Lifetimes).expect_session_refused_as_not_found()


@then("the sandbox that served the session is gone")
def step_sandbox_gone(context: StepContext) -> None:
    context.world.part(Lifetimes).expect_sandbox_gone()


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
