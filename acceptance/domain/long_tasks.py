"""Calls that run long: a command that outlasts an ordinary call, a command that outlives
its own timeout, and an agent busy on one call for longer than its idle timeout."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

from hamcrest import assert_that, contains_string, has_entries

from acceptance.core.matchers import Answer, holds_json
from acceptance.core.settings import Settings
from acceptance.domain.interpreters import command_result
from acceptance.domain.world import World, required

# The long command prints at least this many lines, spread over its duration.
MIN_LINES = 3


class LongTasks:
    def __init__(self, world: World, settings: Settings) -> None:
        self._world = world
        self._settings = settings
        self._lines: list[str] = []
        # The timeout of the command that left a background process, and when it was answered.
        self._answered: tuple[int, float] | None = None

    def run_long_command(self) -> None:
        """A command that prints numbered lines over long_task_duration, with a timeout
        twice as long; the suite waits as long as the timeout allows (as the SDK does)."""
        duration = self._settings.long_task_duration
        count = max(MIN_LINES, math.ceil(duration))
        self._lines = [f"line {number}" for number in range(count)]
        code = (
            "import time\n"
            f"for number in range({count}):\n"
            "    print(f'line {number}', flush=True)\n"
            f"    time.sleep({duration / count})\n"
        )
        timeout = math.ceil(2 * duration)
        self._world.in_session().execute(
            ["python3", "-c", code],
            fields={"timeout": f"{timeout}s"},
            wait=timeout + self._settings.answer_allowance,
        )

    def expect_full_output(self) -> None:
        assert_that(self._world.last_answer, completes_with_lines(self._lines))

    def run_with_timeout(self, command: list[str], seconds: int) -> None:
        self._world.in_session().execute(command, fields={"timeout": f"{seconds}s"})

    def run_leaving_a_background_process(self, seconds: int) -> None:
        """A command whose shell runs a child that holds the output open well past the
        command's timeout: stopping the shell alone leaves the child (and the answer)
        waiting; stopping all it started answers at the timeout."""
        allowance = self._settings.answer_allowance
        lingers = seconds + allowance + 2
        started = time.monotonic()
        self._world.in_session().execute(
            ["sh", "-c", f"sleep {lingers:g}; echo too late"],
            fields={"timeout": f"{seconds}s"},
            wait=lingers + allowance,
        )
        self._answered = (seconds, time.monotonic() - started)

    def expect_answered_without_waiting_for_the_background(self) -> None:
        missing = "the scenario has not run a command leaving a background process"
        seconds, answered_after = required(self._answered, missing)
        limit = seconds + self._settings.answer_allowance
        assert_that(
            answered_after <= limit,
            f"the command with a timeout of {seconds} s was answered after {answered_after:.1f} s, "
            f"past its timeout and answer_allowance ({limit:g} s): the target waited for the "
            "background process it left running instead of stopping it at the timeout",
        )

    def agent_works_past_idle_timeout(self) -> None:
        """One call that keeps the agent busy for the idle timeout and ttl_grace: had the
        platform not counted the call as activity, it would have ended the session
        meanwhile, as the idle-expiry scenario requires it to end an idle one by then."""
        seconds = self._settings.short_session_timeout + self._settings.ttl_grace
        self._world.in_session().invoke(
            "echo/sleep",
            json={"seconds": seconds},
            timeout=seconds + self._settings.answer_allowance,
        )


# What its answers are expected to be.


def completes_with_lines(lines: Sequence[str]) -> Answer:
    return command_result(
        f"the command to complete with exit code 0 and all {len(lines)} lines it printed",
        exit_code=0,
        stdout="".join(f"{line}\n" for line in lines),
    )


def timed_out_after(seconds: int) -> Answer:
    return command_result(
        f"the command to be stopped with exit code 124 after its timeout of {seconds} s",
        exit_code=124,
        stderr=contains_string(f"Command timed out after {seconds} seconds"),
    )


def finished_long_call() -> Answer:
    """The echo agent's answer to POST /echo/sleep, once it has slept."""
    return holds_json("the echo agent to finish its long call", has_entries(output="slept"))
