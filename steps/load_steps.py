"""Steps about sustained load."""

from behave import then, when

from acceptance.core.runtimes import Role
from acceptance.domain.load import SustainedLoad
from acceptance.domain.step_types import StepContext


@when("sessions of the {runtime:Runtime} are opened at a steady rate, each running one command")
def step_apply_load(context: StepContext, runtime: Role) -> None:
    context.world.part(SustainedLoad).apply(runtime)


@then("at least the required share of those sessions succeeded")
def step_required_share(context: StepContext) -> None:
    context.world.part(SustainedLoad).expect_required_share()
