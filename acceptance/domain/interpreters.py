"""Code and commands run in a code interpreter, with or without a session, and what their
answers must show: the lines printed, the exit code, the error output, a kernel's death."""

from __future__ import annotations

from typing import Any

from hamcrest import assert_that, contains_string, has_entries, has_entry, is_not, none

from acceptance.core.matchers import Answer
from acceptance.core.runtimes import Role, Runtime, configured_runtime
from acceptance.core.settings import Settings
from acceptance.domain.calls import Calls
from acceptance.domain.world import World


class Interpreters:
    def __init__(self, world: World, settings: Settings) -> None:
        self._world = world
        self._settings = settings

    def run_python(self, role: Role, code: str, *, in_session: bool) -> None:
        self._python(
            self._world.runtime(role), self._world.calls_to(role, in_session=in_session), code
        )

    def run_python_in_session(self, code: str) -> None:
        session = self._world.session
        self._python(session.runtime, self._world.in_session(session), code)

    def run_command(self, role: Role, command: list[str], *, in_session: bool) -> None:
        self._world.calls_to(role, in_session=in_session).execute(command)

    def run_command_in_session(self, command: list[str]) -> None:
        self._world.in_session().execute(command)

    def prepare_session_with_python(self, code: str) -> None:
        """Run code that sets the scenario up; it must succeed."""
        self.run_python_in_session(code)
        succeeded = (
            ran_without_error() if self._is_stateful(self._world.session.runtime) else exits_with(0)
        )
        assert_that(self._world.last_answer, succeeded, "setting the session up failed")

    def _python(self, runtime: Runtime, calls: Calls, code: str) -> None:
        """Python code run as a command, or in the session's kernel where the interpreter
        is the stateful one (the stateful_interpreter setting)."""
        if self._is_stateful(runtime):
            calls.run_code(code)
        else:
            calls.execute(["python3", "-c", code])

    def _is_stateful(self, runtime: Runtime) -> bool:
        """Whether this is the stateful interpreter, which runs code in a kernel."""
        settings = self._settings
        return settings.stateful_interpreter is not None and runtime == configured_runtime(
            Role.STATEFUL_INTERPRETER, settings
        )

    def expect_prints(self, line: str) -> None:
        assert_that(self._world.last_answer, prints_line(line))

    def expect_exits_with(self, code: int) -> None:
        assert_that(self._world.last_answer, exits_with(code))

    def expect_fails_because_undefined(self, name: str) -> None:
        assert_that(self._world.last_answer, fails_because_undefined(name))

    def expect_no_error_output(self) -> None:
        assert_that(self._world.last_answer, wrote_no_error_output())

    def expect_kernel_died(self) -> None:
        assert_that(self._world.last_answer, failed_because_the_kernel_died())


# What its answers are expected to be.


def _as_command_result(body: Any) -> Any:
    """PicoD's ExecuteResponse as it is; a kernel's E2B Execution (a stateful
    interpreter's run_code) with its logs joined into stdout and stderr, beside its error."""
    if isinstance(body, dict) and isinstance(body.get("logs"), dict):
        logs = body["logs"]
        return {
            "stdout": "".join(logs.get("stdout") or []),
            "stderr": "".join(logs.get("stderr") or []),
            "error": body.get("error"),
        }
    return body


def command_result(expectation: str, **entries: Any) -> Answer:
    """The answer to a command or to code run in a kernel: 200 and a result with these
    entries (a kernel's output in the same words as a command's)."""
    return Answer(expectation, status=200, body=has_entries(**entries), view=_as_command_result)


def ran_without_error() -> Answer:
    """A kernel's answer to code that ran to its end, raising nothing."""
    return command_result("the code to run without an error", error=none())


def wrote_no_error_output() -> Answer:
    return command_result("the command to write nothing to its error output", stderr="")


def failed_because_the_kernel_died() -> Answer:
    """A stateful interpreter's answer when its kernel died during the run (localcube's)."""
    return Answer(
        "the interpreter to answer 500 because the session's kernel died",
        status=500,
        body=has_entry("error", contains_string("kernel died")),
    )


def prints_line(line: str) -> Answer:
    return command_result(f"the command to print {line!r} and nothing else", stdout=f"{line}\n")


def exits_with(code: int) -> Answer:
    return command_result(f"the command to exit with code {code}", exit_code=code)


def fails_because_undefined(name: str) -> Answer:
    return command_result(
        f"the command to fail with NameError because {name!r} is not defined",
        exit_code=is_not(0),
        stderr=contains_string(f"NameError: name '{name}' is not defined"),
    )
