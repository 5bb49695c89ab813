"""Steps about running code and commands in a code interpreter."""

from behave import given, then, when
from behave.runner import Context
from hamcrest import assert_that

from acceptance.core import matchers
from acceptance.core.runtimes import Role


@when('I run the Python code "{code}" in the {runtime:Runtime} without a session')
def step_run_python_without_session(context: Context, code: str, runtime: Role) -> None:
    context.world.run_python(runtime, code, in_session=False)


@when('I run the command "{command_line}" in the {runtime:Runtime} without a session')
def step_run_command_without_session(context: Context, command_line: str, runtime: Role) -> None:
    context.world.run_command(runtime, command_line, in_session=False)


@when('I run the Python code "{code}" in the session')
def step_run_python_in_session(context: Context, code: str) -> None:
    context.world.run_python_in_session(code)


@when('I run the command "{command_line}" in the session')
def step_run_command_in_session(context: Context, command_line: str) -> None:
    context.world.run_command_in_session(command_line)


@given('the session has run the Python code "{code}"')
def step_session_has_run(context: Context, code: str) -> None:
    context.world.prepare_session_with_python(code)


@then('the command prints "{line}"')
def step_command_prints(context: Context, line: str) -> None:
    assert_that(context.world.last_answer, matchers.prints_line(line))


@then("the command exits with code {code:d}")
def step_command_exits_with(context: Context, code: int) -> None:
    assert_that(context.world.last_answer, matchers.exits_with(code))


@then('the command fails because "{name}" is not defined')
def step_command_fails_undefined(context: Context, name: str) -> None:
    assert_that(context.world.last_answer, matchers.fails_because_undefined(name))


@then("the command wrote nothing to its error output")
def step_no_error_output(context: Context) -> None:
    assert_that(context.world.last_answer, matchers.wrote_no_error_output())


@then("the run fails because the session's kernel died")
def step_kernel_died(context: Context) -> None:
    assert_that(context.world.last_answer, matchers.failed_because_the_kernel_died())
