"""Steps about the workspace jail."""

from behave import given, then, when
from behave.runner import Context

from acceptance.domain.jail import JailOperation, WorkspaceJail


@given(
    'next to the workspace, a directory "outside" holds a secret, "link" in the workspace '
    'points to it, and "dangling" points to a file there that does not exist yet'
)
def step_prepare_outside(context: Context) -> None:
    context.world.part(WorkspaceJail).prepare_outside()


@when('I {operation:JailOperation} "{path}"')
def step_attempt(context: Context, operation: JailOperation, path: str) -> None:
    context.world.part(WorkspaceJail).attempt(operation, path)


@then("the call is refused because the path leaves the workspace")
def step_refused_as_escaping(context: Context) -> None:
    context.world.part(WorkspaceJail).expect_refused_as_escaping()


@then("nothing outside the workspace is revealed or changed")
def step_nothing_outside(context: Context) -> None:
    context.world.part(WorkspaceJail).expect_nothing_outside_revealed_or_changed()


@then("the upload succeeds")
def step_upload_succeeded(context: Context) -> None:
    context.world.part(WorkspaceJail).expect_upload_succeeded()


@then('"{path}" downloaded from the workspace holds what was uploaded')
def step_download_holds_upload(context: Context, path: str) -> None:
    context.world.part(WorkspaceJail).expect_download_holds_upload(path)
