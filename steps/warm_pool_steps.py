"""Steps about warm pools and first-call latency."""

from behave import given, then, when

from acceptance.core.runtimes import Role
from acceptance.domain.step_types import StepContext
from acceptance.domain.warm_pools import WarmPools


@given("the warm pool of the {runtime:Runtime} is full")
def step_pool_full(context: StepContext, runtime: Role) -> None:
    context.world.part(WarmPools).wait_until_full(runtime)


@given("the {runtime:Runtime} has no warm pool")
def step_no_pool(context: StepContext, runtime: Role) -> None:
    context.world.part(WarmPools).expect_no_pool(runtime)


@then("the session is served by a sandbox {from_pool:SandboxOrigin}")
def step_served_from_pool(context: StepContext, from_pool: bool) -> None:
    context.world.part(WarmPools).expect_served_from_pool(from_pool)


@then("the warm pool of the {runtime:Runtime} is soon full again")
def step_pool_refilled(context: StepContext, runtime: Role) -> None:
    context.world.part(WarmPools).expect_pool_refilled(runtime)


@when("I time the first calls of new sessions of the {runtime:Runtime}")
def step_time_first_calls(context: StepContext, runtime: Role) -> None:
    context.world.part(WarmPools).time_first_calls(runtime)


@when("I time calls in the last of those sessions")
def step_time_calls_in_session(context: StepContext) -> None:
    context.world.part(WarmPools).time_calls_in_session()


@then("the fastest first call took at most half a second longer than a call in its session")
def step_claim_within_budget(context: StepContext) -> None:
    context.world.part(WarmPools).expect_claim_within_budget()


@given("a session of the {runtime:Runtime} served by a sandbox that was waiting in the pool")
def step_session_from_pool(context: StepContext, runtime: Role) -> None:
    context.world.part(WarmPools).open_session_from_pool(runtime)


@when("the session is closed")
def step_close_session(context: StepContext) -> None:
    context.world.part(WarmPools).close_session()


@then("the sandbox that came from the pool is gone")
def step_pooled_sandbox_gone(context: StepContext) -> None:
    context.world.part(WarmPools).expect_closed_sandbox_gone()
