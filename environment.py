"""behave hooks: they wire the support package `acceptance` to behave (the run's start,
each scenario's gate, World and fixtures, each step's evidence, the closing report).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from behave import register_type
from behave.fixture import use_fixture_by_tag
from behave.model import Scenario, Step
from behave.runner import Context

from acceptance.domain.step_types import STEP_TYPES
from acceptance.run.fixtures import FIXTURES
from acceptance.run.report_hooks import add_run_summary, attach_table, attach_text
from acceptance.run.start import started_suite
from acceptance.run.suite import Suite
from acceptance.run.summary import closing_report, summarize

register_type(**STEP_TYPES)


def before_all(context: Context) -> None:
    # Made before behave's runner under ./dev suite; a failed start is a hook error here.
    context.suite = started_suite(context.config)


def before_scenario(context: Context, scenario: Scenario) -> None:
    reason = context.suite.gate.skip_reason(scenario.effective_tags)
    if reason:
        context.suite.skipped.append(f"{scenario.feature.name}: {scenario.name}: {reason}")
        scenario.skip(reason)
        return
    context.world = context.suite.new_world(context.add_cleanup)
    for tag in sorted(scenario.effective_tags):
        if tag.startswith("fixture."):
            use_fixture_by_tag(tag, context, FIXTURES)


def before_step(context: Context, step: Step) -> None:
    if "world" in context:
        context.step_exchanges_from = len(context.world.transport.log.exchanges)


def after_step(context: Context, step: Step) -> None:
    if "world" not in context:
        return
    world, since = context.world, context.step_exchanges_from
    log = world.transport.log
    if len(log.exchanges) > since:
        attach_text(context, "HTTP exchanges", lambda: log.format(since, "this step"))
    if step.status.has_failed():
        http_evidence = log.format()  # before the platform is asked: it may call HTTP
        platform_evidence = world.platform.evidence(s.session_id for s in world.sessions)
        attach_text(context, "Platform evidence", platform_evidence)
        for call, timeline in log.timelines():
            attach_table(context, f"Stream timeline of {call}", timeline)
        # Inside the step's capture: beside the failure in the console and the JUnit report.
        print(f"{http_evidence}\n{platform_evidence}")


def after_scenario(context: Context, scenario: Scenario) -> None:
    suite: Suite = context.suite
    suite.results.add_scenario(scenario, cut_off=context.aborted)
    if scenario.status.has_failed() and suite.settings.keep_on_failure and "world" in context:
        context.world.keep_for_inspection(suite.kept)


def after_all(context: Context) -> None:
    suite: Suite | None = getattr(context, "suite", None)
    if suite is None:
        return
    results = suite.finish()
    results.interrupted = context.aborted  # by Ctrl-C: behave's public word for it
    if suite.settings.results_dir:  # a parallel run: its command prints one summary for all
        results.save(Path(suite.settings.results_dir))
    else:
        summary = summarize(results, time.monotonic() - suite.started)
        add_run_summary(context, summary)
        # Past behave's hook capture: this must be seen whether or not the run failed.
        (sys.__stderr__ or sys.stderr).write(f"\n{closing_report(results.notes, summary)}\n")
    # A sandbox the run created and left behind fails the run (a hook error in after_all).
    suite.assert_nothing_left()
