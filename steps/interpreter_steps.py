"""Steps about running code and commands in a code interpreter."""

from behave import given, then, when

from acceptance.core.runtimes import Role
from acceptance.domain import programs
from acceptance.domain.interpreters import (
    Interpreters,
    exits_with,
    failed_because_the_kernel_died,
    fails_because_undefined,
    prints_line,
    wrote_no_error_output,
)
from acceptance.domain.step_types import StepContext


@when("I run code that prints the sum of 1 and 1 in the {runtime:Runtime} without a session")
def step_print_sum_without_session(context: StepContext, runtime: Role) -> None:
    context.world.part(Interpreters).run_python(programs.PRINT_SUM, runtime)


@when("I run a command that exits with code {code:d} in the {runtime:Runtime} without a session")
def step_exit_with_without_session(context: StepContext, code: int, runtime: Role) -> None:
    context.world.part(Interpreters).run_command(programs.exit_with(code), runtime)


@given('the session has set the variable "{name}" to {value}')
def step_session_set_variable(context: StepContext, name: str, value: str) -> None:
    context.world.part(Interpreters).prepare_session_with_python(programs.set_variable(name, value))


@given('the session has written "{text}" to the file "{path}"')
def step_session_wrote_file(context: StepContext, text: str, path: str) -> None:
    context.world.part(Interpreters).prepare_session_with_python(programs.write_file(path, text))


@when('I print the variable "{name}" in the session')
def step_print_variable(context: StepContext, name: str) -> None:
    context.world.part(Interpreters).run_python(programs.print_variable(name))


@when('I print the file "{path}" in the session')
def step_print_file(context: StepContext, path: str) -> None:
    context.world.part(Interpreters).run_python(programs.print_file(path))


@when('I run a command that prints "{text}" in the session')
def step_print_text(context: StepContext, text: str) -> None:
    context.world.part(Interpreters).run_command(programs.print_text(text))


@when('I run the uploaded script "{name}" in the session')
def step_run_script(context: StepContext, name: str) -> None:
    context.world.part(Interpreters).run_command(programs.run_script(name))


@when("code run in the session stops its own kernel")
def step_stop_own_kernel(context: StepContext) -> None:
    context.world.part(Interpreters).run_python(programs.STOP_OWN_KERNEL)


@then('the command prints "{line}"')
def step_command_prints(context: StepContext, line: str) -> None:
    context.world.expect_last_answer(prints_line(line))


@then("the command exits with code {code:d}")
def step_command_exits_with(context: StepContext, code: int) -> None:
    context.world.expect_last_answer(exits_with(code))


@then('the command fails because "{name}" is not defined')
def step_command_fails_undefined(context: StepContext, name: str) -> None:
    context.world.expect_last_answer(fails_because_undefined(name))


@then("the command wrote nothing to its error output")
def step_no_error_output(context: StepContext) -> None:
    context.world.expect_last_answer(wrote_no_error_output())


@then("the run fails because the session's kernel died")
def step_kernel_died(context: StepContext) -> None:
    context.world.expect_last_answer(failed_because_the_kernel_died())
