"""The run's start, and behave's runner for the suite (behave.ini names it).

The run starts in one place, environment.py's before_all, under any runner: behave's, this
one, behavex's workers'. This runner only makes a start that fails a clean stop: the
problems are told one line each and written into the reports as an error, and behave adds
nothing after them (no "HOOK-ERROR", no "ABORTED", no totals of features that never ran).
Under behavex's workers, which use behave's own runner, a failed start is a hook error.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from behave.configuration import Configuration
from behave.model import Feature
from behave.runner import Runner

from acceptance.run.early_stop import EarlyStop
from acceptance.run.report_hooks import show_early_stop
from acceptance.run.results import count_deselected, run_features, selected_scenarios
from acceptance.run.suite import Suite
from acceptance.run.tag_check import check_tags
from acceptance.run.timings import TIMED_TAG


def start_suite(config: Configuration) -> Suite:
    """Check the run's tags, start the suite (its preflight included) and tell what the
    preflight found. Raises what Suite.start raises, and UnknownTagError."""
    features = run_features(config)
    check_tags(
        features,
        config.tag_expression,
        "the tag expression (--tags, or default_tags in behave.ini)",
    )
    selected = selected_scenarios(features, config)
    timed = any(TIMED_TAG in s.effective_tags for s in selected)
    suite = Suite.start(config.userdata, os.environ, timed=timed)
    if not suite.settings.results_dir:  # a parallel run's worker: its command does both
        suite.results.deselected = count_deselected(features, config)  # before the run
        suite.results.selected = len(selected)
        (sys.__stderr__ or sys.stderr).write(f"{suite.release.account()}\n{suite.preflight}\n")
    return suite


class _RunStopped(Exception):
    """The run's start failed and its stop has been told: behave runs nothing more."""


class SuiteRunner(Runner):
    def run_model(self, features: list[Feature] | None = None) -> bool:
        """Run as behave does; True when the run failed (or stopped before any scenario)."""
        try:
            return super().run_model(features)
        except _RunStopped:
            return True

    def run_hook(self, hook_name: str, *args: object) -> bool:
        """Run the hook as behave does, but for before_all: its error stops the run."""
        if hook_name != "before_all" or not self.should_run_hook(hook_name):
            return super().run_hook(hook_name, *args)  # a dry run calls no hook
        try:
            with self.context.use_with_user_mode():
                self.hooks[hook_name](self.context)
        except (Exception, KeyboardInterrupt) as error:
            self._stop_early(EarlyStop.of(error))
            raise _RunStopped from error
        return True

    def _stop_early(self, stop: EarlyStop) -> None:
        """Write the reports with the reason, then tell it last on the console."""
        show_early_stop(self.formatters, stop)
        for formatter in self.formatters:
            formatter.close()
        if self.config.junit:
            stop.write_junit(Path(self.config.junit_directory))
        sys.stdout.flush()
        (sys.__stderr__ or sys.stderr).write(f"\n{stop.console_text()}\n")
