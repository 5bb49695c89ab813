"""Steps about calling agents."""

from behave import then, when

from acceptance.core import matchers
from acceptance.core.runtimes import Role
from acceptance.domain.echoes import Echoes, SampleText
from acceptance.domain.step_types import StepContext


@when('I send "{text}" to the {runtime:Runtime} without a session')
def step_send_without_session(context: StepContext, text: str, runtime: Role) -> None:
    context.world.part(Echoes).send_text(runtime, text, in_session=False)


@when('I send "{text}" to the {runtime:Runtime} in that session')
def step_send_in_session(context: StepContext, text: str, runtime: Role) -> None:
    context.world.part(Echoes).send_text(runtime, text, in_session=True)


@then('the agent echoes "{text}"')
def step_agent_echoes(context: StepContext, text: str) -> None:
    context.world.expect_last_answer(matchers.echoes(text))


@then("both calls were served by the same sandbox, one after the other")
def step_same_sandbox(context: StepContext) -> None:
    context.world.part(Echoes).expect_served_by_one_sandbox()


@when("I send {sample:SampleText} to the {runtime:Runtime} without a session")
def step_send_sample(context: StepContext, sample: SampleText, runtime: Role) -> None:
    context.world.part(Echoes).send(sample, runtime)


@then("the agent echoes that text back unchanged")
def step_echoes_unchanged(context: StepContext) -> None:
    context.world.part(Echoes).expect_echoed_unchanged()
