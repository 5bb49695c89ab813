"""Steps about the errors a client must tell apart."""

from collections.abc import Callable

from behave import given, then, when

from acceptance.core.matchers import Answer
from acceptance.core.runtimes import RuntimeKind
from acceptance.domain.refusals import BadRequest, Refusals
from acceptance.domain.step_types import StepContext


@when("I call {kind:RuntimeKind} that does not exist")
def step_call_missing_runtime(context: StepContext, kind: RuntimeKind) -> None:
    context.world.part(Refusals).call_missing_runtime(kind)


@then("the call is refused {refusal:Refusal}")
def step_refused(context: StepContext, refusal: Callable[[], Answer]) -> None:
    context.world.expect_last_answer(refusal())


@then("the call is refused because the runtime was not found")
def step_refused_runtime_not_found(context: StepContext) -> None:
    context.world.part(Refusals).expect_refused_as_runtime_not_found()


@given("the session has been closed")
def step_session_closed(context: StepContext) -> None:
    context.world.part(Refusals).close_session()


@when("I ask the echo agent in the session for a path it does not serve")
def step_ask_missing_path(context: StepContext) -> None:
    context.world.part(Refusals).ask_agent_for_missing_path()


@then('the agent\'s own "not found" comes back in the session, without the session error code')
def step_agent_not_found_passed_on(context: StepContext) -> None:
    context.world.part(Refusals).expect_agent_not_found_passed_on()


@when("I send the session {request:BadRequest}")
def step_send_bad_request(context: StepContext, request: BadRequest) -> None:
    context.world.part(Refusals).send(request)


@then("the call is refused with an error that says why")
def step_refused_saying_why(context: StepContext) -> None:
    context.world.part(Refusals).expect_refused_saying_why()
