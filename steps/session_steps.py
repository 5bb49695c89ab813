"""Steps about sessions and the echoes in them: opening, reusing, unknown ones."""

from behave import given, then, when

from acceptance.core import matchers
from acceptance.core.runtimes import Role
from acceptance.domain.sessions import SampleText, Sessions, open_session
from acceptance.domain.step_types import StepContext


@given("a session of the {runtime:Runtime}")
def step_open_session(context: StepContext, runtime: Role) -> None:
    open_session(context.world, runtime)


@then("the answer carries a new session id")
def step_new_session_id(context: StepContext) -> None:
    context.world.part(Sessions).expect_new_session_id()


@then("the answer carries the same session id")
def step_same_session_id(context: StepContext) -> None:
    context.world.part(Sessions).expect_same_session_id()


@when("I call the {runtime:Runtime} with a session id that was never issued")
def step_call_unknown_session(context: StepContext, runtime: Role) -> None:
    context.world.part(Sessions).call_with_unknown_session(runtime)


@when('I send "{text}" to the {runtime:Runtime} {in_session:InSession}')
def step_send_text(context: StepContext, text: str, runtime: Role, in_session: bool) -> None:
    context.world.part(Sessions).send_text(runtime, text, in_session=in_session)


@then('the agent echoes "{text}"')
def step_agent_echoes(context: StepContext, text: str) -> None:
    context.world.expect_last_answer(matchers.echoes(text))


@then("both calls were served by the same sandbox, one after the other")
def step_same_sandbox(context: StepContext) -> None:
    context.world.part(Sessions).expect_served_by_one_sandbox()


@when("I send {sample:SampleText} to the {runtime:Runtime} without a session")
def step_send_sample(context: StepContext, sample: SampleText, runtime: Role) -> None:
    context.world.part(Sessions).send(sample, runtime)


@then("the agent echoes that text back unchanged")
def step_echoes_unchanged(context: StepContext) -> None:
    context.world.part(Sessions).expect_echoed_unchanged()
