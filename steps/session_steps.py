"""Steps about sessions: opening, reusing, unknown and expired ones."""

from behave import given, then, when

from acceptance.core.runtimes import Role
from acceptance.domain.lifetimes import Lifetimes
from acceptance.domain.sessions import Sessions
from acceptance.domain.step_types import StepContext


@given("a session of the {runtime:Runtime}")
def step_open_session(context: StepContext, runtime: Role) -> None:
    context.world.part(Sessions).open(runtime)


@then("the answer carries a new session id")
def step_new_session_id(context: StepContext) -> None:
    context.world.part(Sessions).expect_new_session_id()


@then("the answer carries the same session id")
def step_same_session_id(context: StepContext) -> None:
    context.world.part(Sessions).expect_same_session_id()


@when("I call the {runtime:Runtime} with a session id that was never issued")
def step_call_unknown_session(context: StepContext, runtime: Role) -> None:
    context.world.part(Sessions).call_with_unknown_session(runtime)


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
