"""Steps about the files in a code-interpreter session's workspace, and its jail."""

from behave import given, then, when

from acceptance.domain.jail import UPLOADED, AbsoluteAttempt, JailOperation, WorkspaceJail
from acceptance.domain.step_types import StepContext
from acceptance.domain.workspace import Workspace, stored


@when('I upload the script "{name}" to the workspace')
def step_upload_script(context: StepContext, name: str) -> None:
    context.world.part(Workspace).upload_script(name)


@then("the workspace lists these files:")
def step_workspace_lists(context: StepContext) -> None:
    context.world.part(Workspace).expect_lists([row["file"] for row in context.table])


@then('"{path}" downloaded from the workspace holds the Fibonacci numbers {numbers:Integers}')
def step_download_fibonacci(context: StepContext, path: str, numbers: list[int]) -> None:
    context.world.part(Workspace).expect_holds_fibonacci(path, numbers)


@when("I upload a file of several megabytes to the workspace")
def step_upload_large_file(context: StepContext) -> None:
    context.world.part(Workspace).upload_large_file()


@then("the file downloaded from the workspace is byte for byte the one uploaded")
def step_large_file_unchanged(context: StepContext) -> None:
    context.world.part(Workspace).expect_large_file_unchanged()


@then("the workspace listing shows the file with its full size")
def step_large_file_listed(context: StepContext) -> None:
    context.world.part(Workspace).expect_large_file_listed_with_its_size()


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


@then("nothing outside the workspace is revealed or changed")
def step_nothing_outside(context: StepContext) -> None:
    context.world.part(WorkspaceJail).expect_nothing_outside_revealed_or_changed()


@when("I {attempt:AbsoluteAttempt}, by its absolute path")
def step_attempt_absolute(context: StepContext, attempt: AbsoluteAttempt) -> None:
    context.world.part(WorkspaceJail).attempt_absolute(attempt)


@then("the upload succeeds")
def step_upload_succeeded(context: StepContext) -> None:
    context.world.expect_last_answer(stored("the upload", UPLOADED))


@then("the file downloaded by that same path holds what was uploaded")
def step_download_holds_upload(context: StepContext) -> None:
    context.world.part(WorkspaceJail).expect_download_holds_upload()
