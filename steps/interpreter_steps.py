"""Steps about running code and commands in a code interpreter. The features name what the
code does ("prints the sum of 1 and 1"); the code itself is here."""

from behave import given, then, when

from acceptance.core.runtimes import Role
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
    context.world.part(Interpreters).run_python("print(1+1)", runtime)


@when("I run a command that exits with code {code:d} in the {runtime:Runtime} without a session")
def step_exit_with_without_session(context: StepContext, code: int, runtime: Role) -> None:
    context.world.part(Interpreters).run_command(["sh", "-c", f"exit {code}"], runtime)


@given('the session has set the variable "{name}" to {value}')
def step_session_set_variable(context: StepContext, name: str, value: str) -> None:
    context.world.part(Interpreters).prepare_session_with_python(f"{name} = {value}")


@given('the session has written "{text}" to the file "{path}"')
def step_session_wrote_file(context: StepContext, text: str, path: str) -> None:
    context.world.part(Interpreters).prepare_session_with_python(
        f"open({path!r}, 'w').write({text!r})"
    )


@when('I print the variable "{name}" in the session')
def step_print_variable(context: StepContext, name: str) -> None:
    context.world.part(Interpreters).run_python(f"print({name})")


@when('I print the file "{path}" in the session')
def step_print_file(context: StepContext, path: str) -> None:
    context.world.part(Interpreters).run_python(f"print(open({path!r}).read())")


@when('I run a command that prints "{text}" in the session')
def step_print_text(context: StepContext, text: str) -> None:
    context.world.part(Interpreters).run_command(["echo", text])


@when('I run the uploaded script "{name}" in the session')
def step_run_script(context: StepContext, name: str) -> None:
    context.world.part(Interpreters).run_command(["python3", name])


@when("code run in the session stops its own kernel")
def step_stop_own_kernel(context: StepContext) -> None:
    context.world.part(Interpreters).run_python("import os; os._exit(1)")


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
