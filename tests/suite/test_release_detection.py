"""The release is detected, not guessed: with agentcube_release unset (`auto`) the preflight
reads the Router's 404 for a session id never issued, holds the run to `main` when it
carries code SESSION_NOT_FOUND and to `pre-460` when it carries none, and says so first;
`main` and `pre-460` still force a choice. Against real localcubes, one of them behind the
fault proxy as a Router of a release before upstream PR #460."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from acceptance.run.preflight import PreflightFailed
from acceptance.run.results import RunResults
from acceptance.run.suite import Suite
from acceptance.run.summary import format_summary, summarize
from tests.suite.commands import BehaveRun, run_behave
from tests.suite.fault_proxy import FaultProxy

# the module's fixtures serve all its tests: one process runs them (pytest-xdist)
pytestmark = pytest.mark.xdist_group("release-detection")

PRE_460_LINE = (
    "AgentCube release: pre-460 (detected: the Router's 404 for an unknown session carries no code)"
)
# The scenarios a Router's 404 for an unknown or closed session decides, and the one that
# asks for a ttl, which a release before PR #460 has not.
NOT_FOUND_SCENARIOS = (
    "never issued is refused",
    "has been closed is refused",
    "agent's own",
    "ends when the lifetime it asked for is up",
)


@pytest.fixture(scope="module")
def router_before_pr_460(shared_cube) -> Iterator[str]:
    with FaultProxy(shared_cube.url, "router-before-pr-460") as proxy:
        yield proxy.url


def behave(url: str, directory: Path, **userdata: str) -> BehaveRun:
    """The not-found scenarios against the target, with an HTML report, as a user runs them."""
    names = [f"--name={pattern}" for pattern in NOT_FOUND_SCENARIOS]
    return run_behave(
        *("-f", "html-review", "-o", str(directory / "report.html"), "-f", "plain", *names),
        userdata={
            "router_url": url,
            "platform": "localcube",
            "reports_dir": str(directory),
            **userdata,
        },
        timeout=180,
    )


def test_a_router_before_pr_460_is_detected_and_its_run_passes(
    router_before_pr_460: str, tmp_path: Path
) -> None:
    run = behave(router_before_pr_460, tmp_path)
    output = run.output
    assert run.status == 0, output
    assert run.stderr.splitlines()[0] == PRE_460_LINE, run.stderr
    assert "Skipped for this target (1):" in run.stderr, output
    assert (
        "ends when the lifetime it asked for is up: @not.with_agentcube_release=pre-460 does "
        "not fit agentcube_release=pre-460"
    ) in run.stderr
    summary = run.stderr[run.stderr.index("Run summary: ") :]
    assert PRE_460_LINE in summary, summary
    assert PRE_460_LINE in (tmp_path / "report.html").read_text()


def test_a_run_held_to_main_fails_where_the_code_is_missing(
    router_before_pr_460: str, tmp_path: Path
) -> None:
    run = behave(router_before_pr_460, tmp_path, agentcube_release="main")
    output = run.output
    assert run.status == 1, output
    assert run.stderr.splitlines()[0] == (
        "AgentCube release: main (set by agentcube_release / AGENTCUBE_RELEASE)"
    ), run.stderr
    assert "was not found, with code SESSION_NOT_FOUND, opening no session" in output
    assert "the body has no code, not 'SESSION_NOT_FOUND'" in output


def test_a_router_with_the_code_is_detected_as_main(shared_cube) -> None:
    suite = Suite.start({"router_url": shared_cube.url, "platform": "localcube"}, {})
    suite.finish()
    assert suite.release.account() == (
        "AgentCube release: main (detected: the Router's 404 for an unknown session carries "
        "code SESSION_NOT_FOUND)"
    )
    assert suite.settings.agentcube_release == "main" and suite.settings.since_pr_460
    assert suite.gate.skip_reason(["not.with_agentcube_release=pre-460"]) is None


def test_a_release_set_is_kept_whatever_the_router_answers(shared_cube) -> None:
    userdata = {"router_url": shared_cube.url, "agentcube_release": "pre-460"}
    suite = Suite.start(userdata, {})
    suite.finish()
    assert suite.settings.agentcube_release == "pre-460" and not suite.settings.since_pr_460
    reason = suite.gate.skip_reason(["not.with_agentcube_release=pre-460"])
    assert reason is not None and "agentcube_release=pre-460" in reason


@pytest.mark.parametrize(
    ("fault", "answered"),
    [("not-found-as-ok", "(200 "), ("opaque-errors", "(404 (empty)")],
)
def test_an_answer_that_tells_no_release_stops_the_run_naming_the_setting(
    shared_cube, fault: str, answered: str
) -> None:
    with FaultProxy(shared_cube.url, fault) as proxy, pytest.raises(PreflightFailed) as failed:
        Suite.start({"router_url": proxy.url}, {})
    [problem] = failed.value.problems
    assert problem.startswith(
        f"the Router's answer to a session id never issued tells no AgentCube release {answered}"
    ), problem
    assert problem.endswith("set agentcube_release / AGENTCUBE_RELEASE to main or pre-460"), problem


def test_the_release_travels_with_a_workers_results_into_the_summary(tmp_path: Path) -> None:
    """./dev parallel's phases save their results, and the run's summary names the release."""
    RunResults(release=PRE_460_LINE).save(tmp_path)
    RunResults().save(tmp_path)
    merged = RunResults.load(tmp_path)
    assert merged.release == PRE_460_LINE
    text = format_summary(summarize(merged, 1.0))
    assert text.splitlines()[:2] == [
        "Run summary: 0 scenarios: 0 passed, 0 failed, 0 skipped; 1.0 s wall time, 0.0 s in "
        "scenarios",
        PRE_460_LINE,
    ]
