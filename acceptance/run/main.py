"""`./dev suite` (`python -m acceptance.run.main`): behave's run, with the suite started
before behave's runner (acceptance.run.start), whose first line is the suite's own and
whose one count is the run summary's. behave 1.3.3's main prints `USING RUNNER: ...`
before every run (behave/__main__.py:115; behave issue #1319, open), so this makes the
run as behave's main does, without that line; what runs nothing (--version, -f help, ...)
is left to behave's main.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from behave import exception
from behave.__main__ import main as behave_main
from behave.configuration import Configuration
from behave.parser import ParserError
from behave.reporter.summary import SummaryReporter
from behave.runner_plugin import RunnerPlugin
from behave.runner_util import print_undefined_step_snippets, reset_runtime

from acceptance.run.start import start_before_behave

# What behave's main tells in one line, `Kind: message`, and then fails the run.
_TOLD = (
    exception.ConfigError,
    exception.ConstraintError,
    exception.TagExpressionError,
    ParserError,
    exception.FileNotFoundError,  # a feature file's, not the builtin
    exception.InvalidFileLocationError,
    exception.InvalidFilenameError,
    ImportError,
)


def _asks_behave_itself(config: Configuration) -> bool:
    """Options that print behave's own information instead of a run."""
    return bool(
        config.version
        or config.tags_help
        or config.lang_list
        or config.lang_help
        or config.lang == "help"
        or "help" in (config.format or [])
        or config.runner == "help"
        or len(config.outputs) > len(config.format or [config.default_format])
    )


def main(arguments: Sequence[str]) -> int:
    """behave's exit status for the run: 0 passed, 1 failed or could not run."""
    try:
        config = Configuration(list(arguments))
        if _asks_behave_itself(config):
            return int(behave_main(list(arguments)))
        config.format = config.format or [config.default_format]
        # The run summary is the run's one count; behave's totals stay for a dry run only.
        if not config.dry_run:
            config.reporters = [r for r in config.reporters if not isinstance(r, SummaryReporter)]
        reset_runtime()
        runner = RunnerPlugin().make_runner(config)
        if not (config.dry_run or start_before_behave(config)):  # a dry run starts nothing
            return 1
        failed = runner.run()
    except _TOLD as error:
        print(f"{type(error).__name__}: {error}")
        return 1
    if config.show_snippets and runner.undefined_steps:
        print_undefined_step_snippets(runner.undefined_steps, colored=config.has_colored_mode())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.argv[0] = "behave"  # its usage and errors name the options' owner, as before
    sys.exit(main(sys.argv[1:]))
