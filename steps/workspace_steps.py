"""Steps about the files in a code-interpreter session's workspace."""

from behave import then, when
from behave.runner import Context
from hamcrest import assert_that

from acceptance.core import matchers


@when('I upload the script "{name}" to the workspace')
def step_upload_script(context: Context, name: str) -> None:
    context.world.upload_script(name)


@then("the workspace lists these files:")
def step_workspace_lists(context: Context) -> None:
    names = [row["file"] for row in context.table]
    assert_that(context.world.list_workspace(), matchers.lists_files(names))


@then('"{path}" downloaded from the workspace holds the Fibonacci numbers {numbers:Integers}')
def step_download_fibonacci(context: Context, path: str, numbers: list[int]) -> None:
    assert_that(context.world.download(path), matchers.holds_fibonacci(numbers))
