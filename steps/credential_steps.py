"""Steps about credentials and authentication."""

from behave import given, then, when

from acceptance.domain.credentials import Authentication, Credentials
from acceptance.domain.step_types import StepContext


@given("the Router requires a token")
def step_tokens_required(context: StepContext) -> None:
    context.world.part(Authentication).expect_tokens_required()


@then("the sandbox received none of the callers' tokens")
def step_no_caller_token(context: StepContext) -> None:
    context.world.part(Authentication).expect_sandbox_got_no_caller_token()


@when("I call the echo agent {credentials:Credentials}")
def step_call_with_credentials(context: StepContext, credentials: Credentials) -> None:
    context.world.part(Authentication).call_agent_with(credentials)


@then("the refusal repeats none of the credentials")
def step_refusal_repeats_no_credential(context: StepContext) -> None:
    context.world.part(Authentication).expect_refusal_repeats_no_credential()


@when("another subject calls the echo agent in that session")
def step_other_subject_calls(context: StepContext) -> None:
    context.world.part(Authentication).call_as_other_subject()


@then("the session still serves the subject that opened it")
def step_owner_still_served(context: StepContext) -> None:
    context.world.part(Authentication).expect_owner_still_served()


@when('a subject with the admin role sends "{text}" to the echo agent in that session')
def step_admin_sends(context: StepContext, text: str) -> None:
    context.world.part(Authentication).send_as_admin(text)
