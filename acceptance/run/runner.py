"""behave's runner for the suite (behave.ini names it): it starts the run before behave's
before_all hook, so that a run that cannot start stops cleanly. The problems are told one
line each and written into the reports as an error; behave adds nothing after them (no
"ABORTED", no totals of features that never ran).

behavex's workers use behave's own runner: for them environment.py's before_all starts the
run, as behave would report any hook error.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from behave.configuration import Configuration
from behave.model import Feature
from behave.runner import Runner

from acceptance.run.early_stop import EarlyStop
from acceptance.run.html_report import show_early_stop
from acceptance.run.results import count_deselected
from acceptance.run.suite import Suite
from acceptance.run.tag_check import check_tags


def start_suite(features: list[Feature], config: Configuration) -> Suite:
    """Check the run's tags, start the suite (its preflight included) and tell what the
    preflight found. Raises what Suite.start raises, and UnknownTagError."""
    check_tags(
        features,
        config.tag_expression,
        "the tag expression (--tags, or default_tags in behave.ini)",
    )
    suite = Suite.start(config.userdata, os.environ)
    if not suite.settings.results_dir:  # a parallel run's worker: its command does both
        suite.results.deselected = count_deselected(features, config)  # before the run
        sys.__stderr__.write(f"{suite.release.account()}\n{suite.preflight}\n")
    return suite


class SuiteRunner(Runner):
    def run_model(self, features: list[Feature] | None = None) -> bool:
        """Start the suite, then run as behave does; True when the run failed."""
        if not self.config.dry_run:  # a dry run calls no hook and needs no target
            try:
                self.context.suite = start_suite(features or self.features, self.config)
            except (Exception, KeyboardInterrupt) as error:
                self._stop_early(EarlyStop.of(error))
                return True
        return super().run_model(features)

    def _stop_early(self, stop: EarlyStop) -> None:
        """Write the reports with the reason, then tell it last on the console."""
        show_early_stop(self.formatters, stop)
        for formatter in self.formatters:
            formatter.close()
        if self.config.junit:
            stop.write_junit(Path(self.config.junit_directory))
        sys.stdout.flush()
        sys.__stderr__.write(f"\n{stop.console_text()}\n")
