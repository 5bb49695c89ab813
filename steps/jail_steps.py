"""Steps about the workspace jail."""

from behave import given, then, when

from acceptance.domain.jail import (
    AbsoluteAttempt,
    JailOperation,
    WorkspaceJail,
    refused_as_escaping_the_workspace,
)
from acceptance.domain.step_types import StepContext


@given('next to the workspace, a directory "outside" that holds a secret')
def step_prepare_outside(context: StepContext) -> None:
    context.world.part(WorkspaceJail).prepare_outside()


@given('a link "{name}" in the workspace to the outside directory')
def step_link_to_outside(context: StepContext, name: str) -> None:
    context.world.part(WorkspaceJail).link(name)


@given(
    'a link "{name}" in the workspace to a file of the outside directory that does not exist yet'
)
def step_dangling_link(context: StepContext, name: str) -> None:
    context.world.part(WorkspaceJail).link(name, to_missing_file=True)


@when('I {operation:JailOperation} "{path}"')
def step_attempt(context: StepContext, operation: JailOperation, path: str) -> None:
    context.world.part(WorkspaceJail).attempt(operation, path)


@then("the call is refused because the path leaves the workspace")
def step_refused_as_escaping(context: StepContext) -> None:
    context.world.expect_last_answer(refused_as_escaping_the_workspace())


@then("nothing outside the workspace is revealed or changed")
def step_nothing_outside(context: StepContext) -> None:
    context.world.part(WorkspaceJail).expect_nothing_outside_revealed_or_changed()


@when("I {attempt:AbsoluteAttempt}, by its absolute path")
def step_attempt_absolute(context: StepContext, attempt: AbsoluteAttempt) -> None:
    context.world.part(WorkspaceJail).attempt_absolute(attempt)


@then("the upload succeeds")
def step_upload_succeeded(context: StepContext) -> None:
    context.world.part(WorkspaceJail).expect_upload_succeeded()


@then("the file downloaded by that same path holds what was uploaded")
def step_download_holds_upload(context: StepContext) -> None:
    context.world.part(WorkspaceJail).expect_download_holds_upload()
