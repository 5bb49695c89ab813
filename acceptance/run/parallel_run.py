"""`./dev parallel`: the suite's scenarios spread over `--processes` behavex workers, all
against one target (the one configured, or one localcube started here): scenarios are
independent. @serial and @disruptive ones run first, alone, in one behave process (with a
localcube of its own when none is configured). The console shows each result as it
arrives, and one summary covers them all (docs/reports.md). Other arguments are behave's;
without paths, @slow scenarios start first.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

from behave.configuration import Configuration, setup_parser
from behave.model import Scenario

from acceptance.core.settings import SETTINGS, ConfigError, Settings
from acceptance.platforms.base import Target, TargetStartError
from acceptance.platforms.registry import adapter
from acceptance.run.html_report import write_summary_page
from acceptance.run.preflight import PreflightFailed
from acceptance.run.report_run import reports_dir
from acceptance.run.results import RunResults, run_features, selection
from acceptance.run.suite import KEPT, Suite
from acceptance.run.summary import closing_report, summarize
from acceptance.run.tag_check import UnknownTagError, check_tags
from acceptance.run.timings import TIMED_TAG

ALONE_TAGS = ("serial", "disruptive")
# The title of the closing note on selected scenarios that no phase ran; such a run fails.
NOT_RUN = "Selected but not run"
# The title of the note on scenarios run again on their own, their phase having no result.
RUN_AGAIN = "Run again on its own, no result from its phase"


def default_processes() -> int:
    """Four scenarios at once per CPU, at most 16: most wait rather than compute, and more
    processes do not shorten the longest scenarios (bench/parallel_loop.py)."""
    return min(4 * len(os.sched_getaffinity(0)), 16)


def _parse(arguments: list[str]) -> tuple[int, list[str]]:
    parser = argparse.ArgumentParser(
        prog="./dev parallel",
        description="Run the acceptance suite in parallel with behavex; other arguments "
        "are behave's.",
    )
    parser.add_argument(
        "--processes",
        type=int,
        default=default_processes(),
        help="how many scenarios run at once (default: four per CPU, at most 16)",
    )
    options, behave_arguments = parser.parse_known_args(arguments)
    if options.processes < 1:
        parser.error("--processes must be at least 1")
    return options.processes, behave_arguments


def _without_tags(arguments: list[str]) -> list[str]:
    """The arguments less -t/--tags: the phases pass their own tag expressions."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("-t", "--tags", action="append")
    return parser.parse_known_args(arguments)[1]


def _names_paths(arguments: list[str]) -> bool:
    """Whether behave's arguments name features or scenarios to run (paths, `file:line`)."""
    return bool(setup_parser().parse_known_intermixed_args(arguments)[0].paths)


def _slowest_first(scenarios: list[Scenario]) -> list[str]:
    """The scenarios' locations, the @slow ones first: started last, they would keep one
    process busy after the others end."""
    ordered = sorted(scenarios, key=lambda scenario: "slow" not in scenario.effective_tags)
    return [str(scenario.location) for scenario in ordered]


def _title(scenario: Scenario) -> str:
    return f"{scenario.feature.name}: {scenario.name}"


def unreported(selected: list[Scenario], results: RunResults) -> list[Scenario]:
    """The selected scenarios the results have none for."""
    reported = {result.title for result in results.scenarios}
    return [scenario for scenario in selected if _title(scenario) not in reported]


def _runs_alone(scenario: Scenario) -> bool:
    return any(tag in scenario.effective_tags for tag in ALONE_TAGS)


def main(arguments: list[str]) -> int:
    try:
        return run(*_parse(arguments))
    except (UnknownTagError, ConfigError, PreflightFailed, TargetStartError) as error:
        print(f"./dev parallel: nothing was run: {error}", file=sys.stderr)
        return 2


def run(processes: int, behave_arguments: list[str]) -> int:
    """Run the scenarios the arguments select; the worst exit status of the behavex runs."""
    started = time.monotonic()
    config = Configuration(behave_arguments)
    features = run_features(config)
    check_tags(features, config.tag_expression)
    selected, deselected = selection(features, config)
    alone = [scenario for scenario in selected if _runs_alone(scenario)]
    concurrent = [scenario for scenario in selected if not _runs_alone(scenario)]
    reports = reports_dir(config.userdata)
    out = reports / "parallel"
    shutil.rmtree(out, ignore_errors=True)
    # The preflight first, of the concurrent phase's target (the alone phase checks its own).
    timed = any(TIMED_TAG in s.effective_tags for s in selected)  # as ./dev suite
    suite = Suite.start({**config.userdata, "reports_dir": str(out)}, os.environ, timed=timed)
    print(f"{suite.release.account()}\n{suite.preflight}", flush=True)
    print(
        f"{len(selected)} scenarios: {len(alone)} run alone (@{', @'.join(ALONE_TAGS)}), "
        f"{len(concurrent)} in {processes} parallel processes; behavex's own output: "
        f"{out}/<phase>.log",
        flush=True,
    )
    arguments = _without_tags(behave_arguments)
    # Paths the user named are run as given; the whole suite, slowest first.
    in_order = [] if _names_paths(behave_arguments) else _slowest_first(concurrent)
    chosen = "".join(f"({tags}) and " for tags in config.tags)
    only_alone = " or ".join(f"@{tag}" for tag in ALONE_TAGS)
    results, status = RunResults(), 0
    if alone:
        # One behave process, with a localcube of its own if any, which it may restart.
        phase = Phase(out / "alone", 1, f"{chosen}({only_alone})", [])
        own_reports = [*arguments, f"--define=reports_dir={phase.folder}"]
        phase_status, phase_results = phase.run_every(own_reports, {}, alone)
        status = max(status, phase_status)
        results.merge(phase_results)
    if concurrent:
        phase = Phase(out / "concurrent", processes, f"{chosen}not ({only_alone})", in_order)
        target, secrets = _shared_target(suite.target, suite.settings)
        phase_status, phase_results = phase.run_every([*arguments, *target], secrets, concurrent)
        status = max(status, phase_status)
        suite.kept.extend(phase_results.notes.pop(KEPT, []))  # then its localcube stays
        results.merge(phase_results)
    results.merge(suite.finish())
    results.release = suite.release.account()  # the workers were told the release
    results.deselected = len(deselected)
    if missing := unreported(selected, results):
        # A worker that never ran its scenario (behavex marks it "untested") reports nothing.
        results.notes.setdefault(NOT_RUN, []).extend(map(_title, missing))
        status = max(status, 1)
    summary = summarize(results, time.monotonic() - started)
    _one_junit_tree(out, reports / "junit", deselected)
    phases = {name: f"parallel/{name}/report.html" for name in ("alone", "concurrent")}
    write_summary_page(summary, reports / "report.html", phases)
    sys.stderr.write(f"\n{closing_report(results.notes, summary)}\n")
    print(
        f"Reports: {reports / 'report.html'} (HTML: the summary, and behavex's report of "
        f"each phase), {reports / 'junit'}/ (JUnit XML)"
    )
    return status


def _one_junit_tree(out: Path, junit: Path, deselected: list[Scenario]) -> None:
    """The phases' JUnit XML in one directory, each file named after its phase, and the
    scenarios the tags or names left out as skipped, as a sequential run's JUnit has them."""
    shutil.rmtree(junit, ignore_errors=True)
    junit.mkdir(parents=True)
    for report in sorted(out.glob("*/behave/*.xml")):
        phase = report.parent.parent.name
        shutil.copyfile(report, junit / f"{phase}-{report.name}")
    count = str(len(deselected))
    suite = ElementTree.Element(
        "testsuite", name="not selected", tests=count, skipped=count, failures="0", errors="0"
    )
    for scenario in deselected:
        case = ElementTree.SubElement(
            suite, "testcase", classname=scenario.feature.name, name=scenario.name
        )
        ElementTree.SubElement(case, "skipped", message="not selected by the tags or names")
    ElementTree.ElementTree(suite).write(junit / "not-selected.xml", encoding="utf-8")


def _shared_target(target: Target, settings: Settings) -> tuple[list[str], dict[str, str]]:
    """The target the workers share as -D arguments (its URLs, what this process resolved
    and what its adapter hands them), and its tokens as environment variables, which other
    users cannot read as they can a command line."""
    shared = {
        "router_url": target.router_url,
        "workload_manager_url": target.workload_manager_url,
        "platform": target.platform_name,
        "agentcube_release": settings.agentcube_release,
        "stateful_interpreter": settings.stateful_interpreter,
        "router_read_timeout": f"{settings.router_read_timeout:g}s",
        **adapter(target.platform_name).worker_settings,
    }
    defines = [f"--define={name}={value}" for name, value in shared.items() if value is not None]
    tokens = {**target.callers_tokens(), **target.refused_tokens}
    secrets = {setting.env: token for setting in SETTINGS if (token := tokens.get(setting.name))}
    return defines, secrets


@dataclass(frozen=True)
class Phase:
    """One behavex run: its output folder, processes, tag expression and, unless the
    arguments name paths, its scenarios' locations in the order to start them."""

    folder: Path
    processes: int
    tags: str
    locations: list[str]

    @property
    def _results_dir(self) -> Path:
        # Beside behavex's output folder, which behavex empties when it starts.
        return self.folder.with_name(f"{self.folder.name}-results")

    def run(self, arguments: list[str], environment: dict[str, str]) -> int:
        command = [
            sys.executable,
            "-m",
            "behavex",
            *arguments,
            *self.locations,
            f"--define=results_dir={self._results_dir}",
            f"--tags={self.tags}",
            f"--parallel-processes={self.processes}",
            "--parallel-scheme=scenario",
            f"--output-folder={self.folder}",
        ]
        # behavex points TEMP at its output folder, where multiprocessing's socket paths may
        # grow too long for Unix sockets; TMPDIR, which Python prefers, keeps them short.
        environment = {**os.environ, **environment, "TMPDIR": tempfile.gettempdir()}
        # behavex's own output goes to a log; the console gets one line per result.
        self.folder.parent.mkdir(parents=True, exist_ok=True)
        log = self.folder.with_name(f"{self.folder.name}.log")
        shown: set[Path] = set()
        with (
            log.open("w") as output,
            subprocess.Popen(
                command, env=environment, stdout=output, stderr=subprocess.STDOUT
            ) as run,
        ):
            while run.poll() is None:
                self._show_new_results(shown)
                time.sleep(0.2)
        self._show_new_results(shown)
        return run.returncode

    def _show_new_results(self, shown: set[Path]) -> None:
        """One line per scenario whose result a worker has saved since the last look."""
        for path in sorted(set(self._results_dir.glob("*.json")) - shown):
            shown.add(path)
            for result in RunResults.load_file(path).scenarios:
                print(f"  {result.outcome:<7} {result.duration:6.2f} s  {result.title}", flush=True)

    def results(self) -> RunResults:
        return RunResults.load(self._results_dir)

    def run_every(
        self, arguments: list[str], environment: dict[str, str], selected: list[Scenario]
    ) -> tuple[int, RunResults]:
        """Run the phase, then once more, in one behave process, the selected scenarios it
        has no result for (behavex marks them "untested"); the worst exit status and every
        result."""
        status = self.run(arguments, environment)
        results = self.results()
        if missing := unreported(selected, results):
            again = Phase(
                self.folder.with_name(f"{self.folder.name}-again"),
                1,
                self.tags,
                [str(scenario.location) for scenario in missing],
            )
            status = max(status, again.run(arguments, environment))
            results.merge(again.results())
            results.notes.setdefault(RUN_AGAIN, []).extend(_title(s) for s in missing)
        return status, results


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
