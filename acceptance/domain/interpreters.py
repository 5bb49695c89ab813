"""Code and commands run in a code interpreter, with or without a session, and what their
answers must show: the lines printed, the exit code, the error output, a kernel's death."""

from __future__ import annotations

from typing import Any

from hamcrest import assert_that, contains_string, has_entries, has_entry, is_not, none

from acceptance.core.matchers import Answer
from acceptance.core.runtimes import Role, Runtime, configured_runtimes
from acceptance.core.settings import Settings
from acceptance.domain.calls import Calls
from acceptance.domain.world import World


class Interpreters:
    def __init__(self, world: World, settings: Settings) -> None:
        self._world = world
        self._settings = settings

    def run_python(self, code: str, role: Role | None = None) -> None:
        """Python code in a call that opens a session of the role's runtime (None: in the
        scenario's session), run as a command, or in the session's kernel where the
        interpreter is the stateful one (the stateful_interpreter setting)."""
        calls = self._calls(role)
        if self._is_stateful(calls.runtime):
            calls.run_code(code)
        else:
            calls.execute(["python3", "-c", code])

    def run_command(self, command: list[str], role: Role | None = None) -> None:
        self._calls(role).execute(command)

    def prepare_session_with_python(self, code: str) -> None:
        """Run code that sets the scenario up; it must succeed."""
        self.run_python(code)
        succeeded = (
            ran_without_error() if self._is_stateful(self._world.session.runtime) else exits_with(0)
        )
        assert_that(self._world.last_answer, succeeded, "setting the session up failed")

    def _calls(self, role: Role | None) -> Calls:
        world = self._world
        return world.in_session() if role is None else world.calls(world.runtime(role))

    def _is_stateful(self, runtime: Runtime) -> bool:
        """Whether this is the stateful interpreter, which runs code in a kernel."""
        return runtime == configured_runtimes(self._settings).get(Role.STATEFUL_INTERPRETER)


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
