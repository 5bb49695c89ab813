"""Steps about sessions kept apart: their files, their ids, many at once."""

from behave import given, then, when

from acceptance.core.runtimes import Role
from acceptance.domain.isolation import Isolation
from acceptance.domain.step_types import StepContext


@given('two sessions of the {runtime:Runtime}, "{first}" and "{second}"')
def step_open_two_sessions(context: StepContext, runtime: Role, first: str, second: str) -> None:
    context.world.part(Isolation).open_named(runtime, [first, second])


@when('session "{name}" stores "{path}" holding "{text}"')
def step_session_stores(context: StepContext, name: str, path: str, text: str) -> None:
    context.world.part(Isolation).store(name, path, text)


@then('session "{name}" cannot find "{path}"')
def step_session_cannot_find(context: StepContext, name: str, path: str) -> None:
    context.world.part(Isolation).expect_cannot_find(name, path)


@then('session "{name}" reads "{text}" from "{path}"')
def step_session_reads(context: StepContext, name: str, text: str, path: str) -> None:
    context.world.part(Isolation).expect_holds(name, path, text)


@when("I open and close {count:d} sessions of the {runtime:Runtime}, one after another")
def step_open_and_close(context: StepContext, count: int, runtime: Role) -> None:
    context.world.part(Isolation).open_and_close_in_turn(count, runtime)


@then("each of them got a UUID v4 session id that no earlier session of the run had")
def step_ids_never_reused(context: StepContext) -> None:
    context.world.part(Isolation).expect_ids_never_issued_before()


@when(
    "{count:d} callers each open a session of the {runtime:Runtime}, as many at the same "
    "moment as the concurrency limit allows, writing a file of their own"
)
def step_open_together(context: StepContext, count: int, runtime: Role) -> None:
    context.world.part(Isolation).open_together(count, runtime)


@then("every caller got a session of its own")
def step_each_got_session(context: StepContext) -> None:
    context.world.part(Isolation).expect_each_got_a_session()


@then("each session's workspace holds its caller's file and no other caller's")
def step_each_holds_own_file(context: StepContext) -> None:
    context.world.part(Isolation).expect_each_holds_its_file_and_no_others()


@when("all those sessions are closed")
def step_close_together(context: StepContext) -> None:
    context.world.part(Isolation).close_together()


@then("no sandbox of theirs is left")
def step_no_sandbox_left(context: StepContext) -> None:
    context.world.part(Isolation).expect_no_sandbox_left()


@when("I call the {runtime:Runtime} under a namespace it is not in")
def step_call_under_other_namespace(context: StepContext, runtime: Role) -> None:
    context.world.part(Isolation).call_under_a_namespace_without(runtime)


@given("an echo agent of the same name in another namespace")
def step_apply_neighbour_echo_agent(context: StepContext) -> None:
    context.world.part(Isolation).apply_neighbour_echo_agent()


@then("the call is served by the session's own sandbox or refused, never by the other one")
def step_served_only_by_own_sandbox(context: StepContext) -> None:
    context.world.part(Isolation).expect_served_only_by_the_sessions_own_sandbox()
