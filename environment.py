"""behave hooks: start the run, gate scenarios by their tags, give each scenario a World,
print the HTTP evidence of a failed step, and report what the run must tell at the end.

The work is in the support package `acceptance`; this file only wires it to behave.
"""

from __future__ import annotations

import os
import sys

from behave import register_type
from behave.model import Scenario, Step
from behave.runner import Context

from acceptance.step_types import STEP_TYPES
from acceptance.suite import Suite

register_type(**STEP_TYPES)


def before_all(context: Context) -> None:
    # A bad setting or an unreachable target raises here: behave reports the hook error,
    # with the message naming the setting or the service, and runs no scenario.
    context.suite = Suite.start(context.config.userdata, os.environ)


def before_scenario(context: Context, scenario: Scenario) -> None:
    reason = context.suite.gate.skip_reason(scenario.effective_tags)
    if reason:
        context.suite.skipped.append(f"{scenario.feature.name}: {scenario.name}: {reason}")
        scenario.skip(reason)
        return
    context.world = context.suite.new_world(context.add_cleanup)


def after_step(context: Context, step: Step) -> None:
    # Runs inside the step's output capture, so the evidence lands beside the failure in
    # the console and in the JUnit report.
    if step.status.has_failed() and "world" in context:
        print(context.world.evidence())


def after_all(context: Context) -> None:
    suite: Suite | None = getattr(context, "suite", None)
    if suite is None:
        return
    suite.stop()
    report = suite.report()
    if report:
        # Past behave's hook capture: this must be seen whether or not the run failed.
        sys.__stderr__.write(f"\n{report}\n")
