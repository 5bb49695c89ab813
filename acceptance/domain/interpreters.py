"""Code and commands run in a code interpreter, with or without a session, and what their
answers must show: the lines printed, the exit code, the error output, a kernel's death."""

from __future__ import annotations

from hamcrest import assert_that

from acceptance.core import matchers
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
        self._world.in_session(self._world.session).execute(command)

    def prepare_session_with_python(self, code: str) -> None:
        """Run code that sets the scenario up; it must succeed."""
        self.run_python_in_session(code)
        succeeded = (
            matchers.ran_without_error()
            if self._is_stateful(self._world.session.runtime)
            else matchers.exits_with(0)
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
        assert_that(self._world.last_answer, matchers.prints_line(line))

    def expect_exits_with(self, code: int) -> None:
        assert_that(self._world.last_answer, matchers.exits_with(code))

    def expect_fails_because_undefined(self, name: str) -> None:
        assert_that(self._world.last_answer, matchers.fails_because_undefined(name))

    def expect_no_error_output(self) -> None:
        assert_that(self._world.last_answer, matchers.wrote_no_error_output())

    def expect_kernel_died(self) -> None:
        assert_that(self._world.last_answer, matchers.failed_because_the_kernel_died())
