"""Steps about calls that run long and commands that outlive their timeout."""

from behave import then, when

from acceptance.domain.long_tasks import LongTasks, finished_long_call, timed_out_after
from acceptance.domain.sessions import Sessions
from acceptance.domain.step_types import StepContext


@when("I run a long command in the session, within its own timeout")
def step_run_long_command(context: StepContext) -> None:
    context.world.part(LongTasks).run_long_command()


@then("the long command completes with every line it printed")
def step_long_command_complete(context: StepContext) -> None:
    context.world.part(LongTasks).expect_full_output()


@when(
    "I run a command that sleeps for {sleep:d} seconds in the session "
    "with a timeout of {seconds:d} second"
)
def step_run_with_timeout(context: StepContext, sleep: int, seconds: int) -> None:
    context.world.part(LongTasks).run_with_timeout(["sleep", str(sleep)], seconds)


@then("the command is stopped because it timed out after {seconds:d} second")
def step_command_timed_out(context: StepContext, seconds: int) -> None:
    context.world.expect_last_answer(timed_out_after(seconds))


@when(
    "I run a command in the session that leaves a background process running long past "
    "its timeout of {seconds:d} second"
)
def step_run_leaving_background(context: StepContext, seconds: int) -> None:
    context.world.part(LongTasks).run_leaving_a_background_process(seconds)


@then("the answer came at the timeout, without waiting for the background process")
def step_answered_at_timeout(context: StepContext) -> None:
    context.world.part(LongTasks).expect_answered_without_waiting_for_the_background()


@when("the agent works on one call for longer than its idle timeout")
def step_agent_works_long(context: StepContext) -> None:
    context.world.part(LongTasks).agent_works_past_idle_timeout()


@then("the long call completes")
def step_long_call_completes(context: StepContext) -> None:
    context.world.expect_last_answer(finished_long_call())


@then("the session still answers, from the same sandbox")
def step_session_still_answers(context: StepContext) -> None:
    context.world.part(Sessions).expect_still_served("after its long call")
