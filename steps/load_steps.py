"""Steps about sustained load."""

from behave import then, when
from behave.runner import Context

from acceptance.core.runtimes import Role
from acceptance.domain.load import SustainedLoad


@when("sessions of the {runtime:Runtime} are opened at a steady rate, each running one command")
def step_apply_load(context: Context, runtime: Role) -> None:
    context.world.part(SustainedLoad).apply(runtime)


@then("at least the required share of those sessions succeeded")
def step_required_share(context: Context) -> None:
    context.world.part(SustainedLoad).expect_required_share()
