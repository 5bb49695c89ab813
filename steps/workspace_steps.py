"""Steps about the files in a code-interpreter session's workspace."""

from behave import then, when

from acceptance.domain.large_files import LargeFiles
from acceptance.domain.step_types import StepContext
from acceptance.domain.workspace import Workspace


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
    context.world.part(LargeFiles).upload()


@then("the file downloaded from the workspace is byte for byte the one uploaded")
def step_large_file_unchanged(context: StepContext) -> None:
    context.world.part(LargeFiles).expect_downloaded_unchanged()


@then("the workspace listing shows the file with its full size")
def step_large_file_listed(context: StepContext) -> None:
    context.world.part(LargeFiles).expect_listed_with_its_size()
