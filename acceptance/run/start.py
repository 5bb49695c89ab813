"""The run's start: the tags checked, the suite started (its preflight included) and what
the preflight found told, before any scenario. `./dev suite` starts it before behave's
runner, so a failed start is a clean stop, told on the console and in the reports, and
before_all takes the started suite over; under plain `behave` and behavex's workers,
before_all starts it, and a failed start is a hook error.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from behave.configuration import Configuration
from behave.formatter._registry import make_formatters

from acceptance.run.early_stop import EarlyStop
from acceptance.run.report_hooks import review_reports
from acceptance.run.results import run_features, selection
from acceptance.run.suite import Suite
from acceptance.run.tag_check import check_tags
from acceptance.run.timings import TIMED_TAG

# The suite started before behave's runner, for before_all to take over (one per process).
_started: list[Suite] = []


def start_suite(config: Configuration) -> Suite:
    """Check the run's tags, start the suite and tell what the preflight found. Raises
    what Suite.start raises, and UnknownTagError."""
    features = run_features(config)
    check_tags(features, config.tag_expression)
    selected, deselected = selection(features, config)
    timed = any(TIMED_TAG in s.effective_tags for s in selected)
    suite = Suite.start(config.userdata, os.environ, timed=timed)
    if not suite.settings.results_dir:  # a parallel run's worker: its command does both
        suite.results.deselected = len(deselected)
        suite.results.selected = len(selected)
        (sys.__stderr__ or sys.stderr).write(f"{suite.release.account()}\n{suite.preflight}\n")
    return suite


def start_before_behave(config: Configuration) -> bool:
    """Start the suite for the run behave is about to make; False when it could not, told
    on the console and in the run's reports."""
    try:
        _started.append(start_suite(config))
        return True
    except (Exception, KeyboardInterrupt) as error:
        stop = EarlyStop.of(error)
    # behave's reports, made as its runner makes them, so that they show why it stopped.
    formatters = make_formatters(config, config.outputs)
    for report in review_reports(formatters):
        report.early_stop = stop
    for formatter in formatters:
        formatter.close()
    if config.junit:
        stop.write_junit(Path(config.junit_directory))
    sys.stdout.flush()
    (sys.__stderr__ or sys.stderr).write(f"\n{stop.console_text()}\n")
    return False


def started_suite(config: Configuration) -> Suite:
    """The run's suite: the one started before behave's runner, else started now."""
    return _started.pop() if _started else start_suite(config)
