"""Steps about the Router under stress: overload, sustained load, Router restarts and
sandboxes that die."""

from behave import given, then, when

from acceptance.core.runtimes import Role
from acceptance.domain.load import SustainedLoad
from acceptance.domain.resilience import Resilience
from acceptance.domain.step_types import StepContext


@given("a session of the echo agent on a Router whose concurrency limit is known")
def step_session_on_limited_router(context: StepContext) -> None:
    context.world.part(Resilience).open_session_on_limited_router()


@when(
    "as many slow calls as the limit, and {extra:d} more, arrive in the session at the same moment"
)
def step_burst(context: StepContext, extra: int) -> None:
    context.world.part(Resilience).burst(extra)


@then("as many calls as the limit are served")
def step_limit_served(context: StepContext) -> None:
    context.world.part(Resilience).expect_limit_served()


@then("the {extra:d} others are refused at once because the Router is overloaded")
def step_extra_refused(context: StepContext, extra: int) -> None:
    context.world.part(Resilience).expect_extra_refused_at_once(extra)


@then("once the slow calls are done, the session is served again")
def step_served_again(context: StepContext) -> None:
    context.world.part(Resilience).expect_served_again()


@given("a session of the {runtime:Runtime} that has answered a call")
def step_session_answered(context: StepContext, runtime: Role) -> None:
    context.world.part(Resilience).open_answered_session(runtime)


@given('a session of the {runtime:Runtime} that holds "{path}"')
def step_session_holds(context: StepContext, runtime: Role, path: str) -> None:
    context.world.part(Resilience).open_session_holding(runtime, path)


@when("the Router restarts")
def step_router_restarts(context: StepContext) -> None:
    context.world.platform.restart_router()


@then("the session of the {runtime:Runtime} is still served by the same sandbox")
def step_agent_session_survived(context: StepContext, runtime: Role) -> None:
    context.world.part(Resilience).expect_agent_session_survived(runtime)


@then('the session of the {runtime:Runtime} still holds "{path}"')
def step_file_survived(context: StepContext, runtime: Role, path: str) -> None:
    context.world.part(Resilience).expect_file_survived(runtime, path)


@when("the sandbox serving the session is killed and the platform shows it gone")
def step_kill_sandbox(context: StepContext) -> None:
    context.world.part(Resilience).kill_sandbox()


@when("I call the session again")
def step_call_again(context: StepContext) -> None:
    context.world.part(Resilience).call_dead_session()


@then("the call fails fast, with an error saying the sandbox is gone")
def step_failed_fast(context: StepContext) -> None:
    context.world.part(Resilience).expect_failed_fast()


@when("sessions of the {runtime:Runtime} are opened at a steady rate, each running one command")
def step_apply_load(context: StepContext, runtime: Role) -> None:
    context.world.part(SustainedLoad).apply(runtime)


@then("at least the required share of those sessions succeeded")
def step_required_share(context: StepContext) -> None:
    context.world.part(SustainedLoad).expect_required_share()
