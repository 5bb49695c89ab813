"""The preflight before any scenario, against real targets: a refused port, a localcube that
knows other tokens, a missing runtime, a Router still starting. Each problem is one line that
names what to fix, and a run that stops on one writes its reports with the reason and adds
no behave noise after it."""

from __future__ import annotations

import socket
import time
import uuid
from pathlib import Path
from xml.etree import ElementTree

import pytest

from acceptance.platforms.base import TOKENS_IGNORED
from acceptance.run.early_stop import JUNIT_FILE, TITLE, EarlyStop
from acceptance.run.preflight import PreflightFailed
from acceptance.run.suite import Suite
from tests.conftest import StartLocalCube
from tests.localcube.support import Client
from tests.suite.commands import run_behave, run_module
from tests.suite.fault_proxy import FaultProxy

KNOWN_TOKEN, OTHER_TOKEN = "known-subject-Hq2v", "other-subject-Zr7k"
# behave's words after a before_all error, which a clean stop never prints.
BEHAVE_NOISE = ("ABORTED", "HOOK-ERROR", "features passed", "scenarios passed", "untested")


def closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def problems_of(userdata: dict[str, str], environ: dict[str, str] | None = None) -> list[str]:
    with pytest.raises(PreflightFailed) as failed:
        Suite.start(userdata, environ or {})
    return failed.value.problems


@pytest.fixture
def cube_with_other_tokens(start_localcube: StartLocalCube, tmp_path: Path) -> str:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"known={KNOWN_TOKEN}\n")
    return start_localcube(extra_arguments=["--token-file", str(tokens)]).url


def test_a_refused_connection_fails_at_once_in_one_line_naming_the_setting() -> None:
    url = closed_port_url()
    started = time.monotonic()
    problems = problems_of({"router_url": url})  # ready_timeout keeps its 20 s default
    # a refusal is no "not ready yet": waiting it out would take the whole ready_timeout
    assert time.monotonic() - started < 20, "the refused connection was retried"
    assert problems == [
        f"the Router at {url} refused the connection: check router_url / AGENTCUBE_ROUTER_URL"
    ]


def test_a_refused_workload_manager_is_named_apart_from_a_ready_router(shared_cube) -> None:
    url = closed_port_url()
    problems = problems_of({"router_url": shared_cube.url, "workload_manager_url": url})
    assert problems == [
        f"the WorkloadManager at {url} refused the connection: check workload_manager_url / "
        "AGENTCUBE_WORKLOAD_MANAGER_URL"
    ]


def test_a_router_still_starting_is_waited_for(shared_cube) -> None:
    with FaultProxy(shared_cube.url, "starting-router") as proxy:
        suite = Suite.start({"router_url": proxy.url, "platform": "localcube"}, {})
        suite.finish()
    assert suite.preflight.startswith(f"Preflight: Router and WorkloadManager ready at {proxy.url}")


def test_a_router_never_ready_is_one_line_with_its_last_answer(shared_cube) -> None:
    with FaultProxy(shared_cube.url, "never-ready") as proxy:
        problems = problems_of({"router_url": proxy.url, "ready_timeout": "1s"})
    assert len(problems) == 1
    assert problems[0].startswith(
        f"the Router at {proxy.url} is not ready after 1 s (GET /health/ready answered 503 "
    )
    assert "allow a slower start with ready_timeout / AGENTCUBE_READY_TIMEOUT" in problems[0]


def test_a_token_the_target_does_not_know_is_one_line_naming_its_variable(
    cube_with_other_tokens: str,
) -> None:
    userdata = {"router_url": cube_with_other_tokens, "platform": "localcube"}
    problems = problems_of(userdata, {"AGENTCUBE_API_TOKEN": OTHER_TOKEN})
    assert len(problems) == 1
    assert problems[0].startswith("the Router refused the token in AGENTCUBE_API_TOKEN (401 ")
    assert OTHER_TOKEN not in problems[0]


def test_a_missing_token_is_one_line_naming_its_variable(cube_with_other_tokens: str) -> None:
    problems = problems_of({"router_url": cube_with_other_tokens})
    assert len(problems) == 1
    assert problems[0].startswith("the Router requires a bearer token (401 ")
    assert problems[0].endswith(": set AGENTCUBE_API_TOKEN")


def test_a_second_token_the_target_does_not_know_is_named_too(cube_with_other_tokens) -> None:
    environ = {"AGENTCUBE_API_TOKEN": KNOWN_TOKEN, "AGENTCUBE_SECOND_API_TOKEN": OTHER_TOKEN}
    problems = problems_of({"router_url": cube_with_other_tokens}, environ)
    assert [problem.split(" (")[0] for problem in problems] == [
        "the Router refused the token in AGENTCUBE_SECOND_API_TOKEN"
    ]


@pytest.mark.parametrize("variable", ["AGENTCUBE_SECOND_API_TOKEN", "AGENTCUBE_ADMIN_API_TOKEN"])
def test_a_token_without_the_required_role_stops_the_run_naming_its_variable_and_the_role(
    start_localcube: StartLocalCube, tmp_path: Path, variable: str
) -> None:
    """The Router's 403 for a valid token without its required role comes before any
    session is looked up, so no credential scenario could tell it from a wrong ownership
    refusal: the preflight stops on it.

    Upstream: pkg/router/auth.go:96-122"""
    tokens = tmp_path / "tokens"
    tokens.write_text(f"known={KNOWN_TOKEN}\nroleless={OTHER_TOKEN} no-role\n")
    url = start_localcube(extra_arguments=["--token-file", str(tokens)]).url
    environ = {"AGENTCUBE_API_TOKEN": KNOWN_TOKEN, variable: OTHER_TOKEN}
    problems = problems_of({"router_url": url}, environ)
    assert len(problems) == 1, problems
    assert problems[0].startswith(
        f"the Router accepted the token in {variable} but refused its permissions (403 "
    ), problems
    assert "missing role sandbox:invoke" in problems[0], problems
    assert problems[0].endswith("use a token of a subject with the role the Router requires")
    assert OTHER_TOKEN not in problems[0]


@pytest.mark.parametrize("must_authenticate", ["false", "true"])
def test_an_accepted_token_passes(cube_with_other_tokens: str, must_authenticate: str) -> None:
    """Accepted: the same call without a token is refused (an ignored token:
    tests/suite/test_unchecked_token.py)."""
    userdata = {
        "router_url": cube_with_other_tokens,
        "platform": "localcube",
        "must_authenticate": must_authenticate,
    }
    suite = Suite.start(userdata, {"AGENTCUBE_API_TOKEN": KNOWN_TOKEN})
    suite.finish()
    assert "; token accepted; 3 runtimes found in namespace default" in suite.preflight
    assert "auth" in suite.gate.capabilities


def test_a_refused_token_is_told_so_where_the_target_must_authenticate_too(
    cube_with_other_tokens: str,
) -> None:
    userdata = {"router_url": cube_with_other_tokens, "must_authenticate": "true"}
    problems = problems_of(userdata, {"AGENTCUBE_API_TOKEN": OTHER_TOKEN})
    assert [problem.split(" (")[0] for problem in problems] == [
        "the Router refused the token in AGENTCUBE_API_TOKEN"
    ]


def test_a_router_that_hangs_up_on_a_call_without_a_token_is_one_line(shared_cube) -> None:
    with FaultProxy(shared_cube.url, "hang-up-without-token") as proxy:
        problems = problems_of({"router_url": proxy.url}, {"AGENTCUBE_API_TOKEN": KNOWN_TOKEN})
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"the Router at {proxy.url} did not answer ("), problems
    assert problems[0].endswith(") to a call without a token"), problems
    assert KNOWN_TOKEN not in problems[0]


def test_a_token_the_target_ignores_is_told_ignored_not_accepted(shared_cube) -> None:
    """A localcube without authentication answers the token check's call with or without
    the token: the token was ignored, and the scenarios that need a target that checks
    tokens are skipped with that reason; what a caller without a token can do stays."""
    suite = Suite.start({"router_url": shared_cube.url}, {"AGENTCUBE_API_TOKEN": "garbage-Xq4"})
    suite.finish()
    assert "; token ignored: the Router answers calls without any token" in suite.preflight
    assert "token accepted" not in suite.preflight
    assert TOKENS_IGNORED in (suite.gate.skip_reason(["requires.auth"]) or "")
    assert TOKENS_IGNORED in (suite.gate.skip_reason(["requires.second-subject"]) or "")
    assert suite.gate.skip_reason(["requires.workload-manager-sessions"]) is None


def test_no_token_against_a_target_that_checks_none_needs_none(shared_cube) -> None:
    suite = Suite.start({"router_url": shared_cube.url}, {})
    suite.finish()
    assert "; no token needed; " in suite.preflight
    assert TOKENS_IGNORED not in (suite.gate.skip_reason(["requires.auth"]) or "")


@pytest.mark.parametrize("environ", [{}, {"AGENTCUBE_API_TOKEN": "garbage-Xq4"}])
def test_a_target_that_must_authenticate_but_checks_no_token_stops_the_run(
    shared_cube, environ: dict[str, str]
) -> None:
    userdata = {"router_url": shared_cube.url, "must_authenticate": "true"}
    assert problems_of(userdata, environ) == [
        f"the Router at {shared_cube.url} answers a call that carries no token: it "
        "authenticates no caller, though must_authenticate / AGENTCUBE_MUST_AUTHENTICATE "
        "says it must"
    ]


def test_a_target_that_must_authenticate_and_does_passes(cube_with_other_tokens: str) -> None:
    userdata = {"router_url": cube_with_other_tokens, "must_authenticate": "true"}
    suite = Suite.start(userdata, {"AGENTCUBE_API_TOKEN": KNOWN_TOKEN})
    suite.finish()
    assert "; token accepted; " in suite.preflight


def test_a_run_with_an_ignored_token_skips_the_credential_scenarios_at_once(shared_cube) -> None:
    """The situation of issue 34: a run against a localcube started without authentication,
    with a token set, skips the credential scenarios rather than failing them later."""
    status, output = run_behave(
        *("-f", "plain", "--tags=@security", "--name=is refused as unauthorized"),
        f"--define=router_url={shared_cube.url}",
        timeout=120,
        AGENTCUBE_API_TOKEN="garbage-Xq4",
    )
    assert status == 0, output
    assert "token ignored" in output and "token accepted" not in output, output
    assert "0 passed, 0 failed" in output, output
    assert f"(auth); {TOKENS_IGNORED}" in output, output


def test_a_localcube_tells_its_read_timeout_unless_the_user_set_one(
    start_localcube: StartLocalCube,
) -> None:
    url = start_localcube(extra_arguments=["--read-timeout", "1500ms"]).url
    suite = Suite.start({"router_url": url, "platform": "localcube"}, {})
    suite.finish()
    assert suite.settings.router_read_timeout == 1.5
    assert "; router_read_timeout 1.5 s, as the target tells" in suite.preflight
    userdata = {"router_url": url, "platform": "localcube", "router_read_timeout": "2s"}
    suite = Suite.start(userdata, {})
    suite.finish()
    assert suite.settings.router_read_timeout == 2
    assert "as the target tells" not in suite.preflight


def test_behind_a_router_of_ones_own_the_read_timeout_is_not_localcubes(
    start_localcube: StartLocalCube,
) -> None:
    """own-router.md: localcube as the WorkloadManager behind another Router, whose read
    timeout localcube's admin API cannot tell."""
    cube = start_localcube(extra_arguments=["--read-timeout", "1500ms"])
    with FaultProxy(cube.url, "ignore-command-timeout") as own_router:
        userdata = {
            "router_url": own_router.url,
            "workload_manager_url": cube.url,
            "platform": "localcube",
        }
        suite = Suite.start(userdata, {})
        suite.finish()
    assert suite.settings.router_read_timeout == 30, suite.preflight
    assert "as the target tells" not in suite.preflight


def test_the_websocket_scenario_waits_the_read_timeout_a_localcube_tells(
    start_localcube: StartLocalCube,
) -> None:
    """Issue 34: a localcube of one's own started with `--read-timeout 1s` keeps the
    scenario short without `-D router_read_timeout=1s` (it would hold 45 s)."""
    url = start_localcube(extra_arguments=["--read-timeout", "1s"]).url
    status, output = run_behave(
        *("-f", "plain", "--name=A WebSocket conversation outlives the Router's read timeout"),
        userdata={"router_url": url, "platform": "localcube"},
        timeout=40,
    )
    assert status == 0, output
    assert "router_read_timeout 1 s, as the target tells" in output, output
    assert ": 1 passed, 0 failed" in output, output


def test_a_target_that_cannot_tell_keeps_the_setting(shared_cube) -> None:
    suite = Suite.start({"router_url": shared_cube.url}, {})  # platform none: HTTP alone
    suite.finish()
    assert suite.settings.router_read_timeout == 30
    assert "read_timeout" not in suite.preflight


def test_the_token_is_judged_before_the_session_is_looked_up(cube_with_other_tokens) -> None:
    """The preflight's token check: a session id never issued, for a runtime that does not
    exist, answers 401 to a refused token and 404 to an accepted one.

    Upstream: pkg/router/server.go:162-180
    """
    client = Client(cube_with_other_tokens)
    missing = "agentcube-preflight-probe"
    assert client.agent(missing, session=str(uuid.uuid4()), json={}).status_code == 401
    client = Client(cube_with_other_tokens, KNOWN_TOKEN)
    answer = client.agent(missing, session=str(uuid.uuid4()), json={})
    assert (answer.status_code, answer.json()["code"]) == (404, "SESSION_NOT_FOUND")


def test_a_missing_runtime_is_named_with_its_namespace_and_setting(shared_cube) -> None:
    userdata = {"router_url": shared_cube.url, "platform": "localcube", "echo_agent": "nope"}
    assert problems_of(userdata) == [
        "AgentRuntime default/nope does not exist (the echo agent): check echo_agent / "
        "AGENTCUBE_ECHO_AGENT and namespace / AGENTCUBE_NAMESPACE"
    ]


def test_a_namespace_without_any_runtime_is_one_line_naming_the_namespace(shared_cube) -> None:
    userdata = {"router_url": shared_cube.url, "platform": "localcube", "namespace": "elsewhere"}
    assert problems_of(userdata) == [
        "none of the runtimes the suite calls exists in namespace elsewhere (AgentRuntime "
        "echo-agent, CodeInterpreter python-interpreter, CodeInterpreter "
        "python-interpreter-warm): check namespace / AGENTCUBE_NAMESPACE"
    ]


def test_an_http_only_target_says_the_runtimes_were_not_checked(shared_cube) -> None:
    suite = Suite.start({"router_url": shared_cube.url}, {})
    suite.finish()
    assert "runtimes not checked: platform none cannot list them" in suite.preflight


def test_a_run_stopped_by_the_preflight_writes_both_reports_and_ends_with_the_fix(
    tmp_path: Path,
) -> None:
    """`./dev report` against a refused port."""
    url = closed_port_url()
    status, output = run_module(
        "acceptance.run.report_run",
        f"--define=router_url={url}",
        f"--define=reports_dir={tmp_path}",
        timeout=60,
    )
    assert status == 1, output
    problem = f"the Router at {url} refused the connection: check router_url / AGENTCUBE_ROUTER_URL"
    lines = output.rstrip().splitlines()  # stdout, then stderr: the console's last lines
    assert lines[-2:] == [f"{TITLE} (1 problem to fix):", f"  - {problem}"], output
    assert f"Reports: {tmp_path / 'report.html'}" in output
    assert not [noise for noise in BEHAVE_NOISE if noise in output], output
    html = (tmp_path / "report.html").read_text()
    assert f"{TITLE}: error" in html and problem in html
    junit = ElementTree.parse(tmp_path / "junit" / JUNIT_FILE).getroot()
    error = junit.find("testcase/error")
    assert junit.get("errors") == "1" and error is not None
    assert error.get("message") == problem


def test_a_wrong_token_stops_the_run_before_any_scenario(cube_with_other_tokens) -> None:
    status, output = run_behave(
        "--define=platform=localcube",
        f"--define=router_url={cube_with_other_tokens}",
        timeout=60,
        AGENTCUBE_API_TOKEN=OTHER_TOKEN,
    )
    assert status == 1
    assert output.count("401") == 1, output
    assert "  - the Router refused the token in AGENTCUBE_API_TOKEN (401 " in output
    assert not [noise for noise in BEHAVE_NOISE if noise in output], output
    assert OTHER_TOKEN not in output


def test_a_missing_runtime_stops_a_run_on_the_localcube_it_starts(tmp_path: Path) -> None:
    status, output = run_behave(
        "--define=echo_agent=no-such-echo-agent",
        f"--define=reports_dir={tmp_path}",
        timeout=60,
    )
    assert status == 1
    assert output.rstrip().endswith(
        "  - AgentRuntime default/no-such-echo-agent does not exist (the echo agent): check "
        "echo_agent / AGENTCUBE_ECHO_AGENT and namespace / AGENTCUBE_NAMESPACE"
    ), output
    assert not [noise for noise in BEHAVE_NOISE if noise in output], output


@pytest.mark.parametrize(
    ("arguments", "told"),
    [
        (["--define=namespace=Not A Namespace"], "setting namespace (-D namespace)"),
        (["--tags=@smoek"], "@smoek"),
    ],
)
def test_a_bad_setting_or_tag_stops_the_run_as_cleanly(arguments: list[str], told: str) -> None:
    status, output = run_behave(*arguments, timeout=60)
    assert status == 1
    assert f"{TITLE} (1 problem to fix):" in output and told in output, output
    assert not [noise for noise in BEHAVE_NOISE if noise in output], output


def test_an_interrupted_start_and_an_unexpected_error_are_told_too() -> None:
    assert EarlyStop.of(KeyboardInterrupt()).problems == ("interrupted (Ctrl-C)",)
    try:
        raise KeyError("surprise")
    except KeyError as error:
        told = EarlyStop.of(error).console_text()
    assert "Traceback" in told and "KeyError: 'surprise'" in told


def test_a_runs_first_line_is_the_suites_own(shared_cube) -> None:
    """No `USING RUNNER:` line, which behave 1.3.3's main prints before every run
    (behave/__main__.py:115, behave issue #1319): `./dev suite` runs without its main."""
    run = run_behave(
        *("-f", "plain", "--name=The first call opens a session and the next call"),
        userdata={"router_url": shared_cube.url},
        timeout=60,
    )
    assert run.status == 0, run.output
    assert "USING RUNNER" not in run.output, run.output
    assert run.stderr.startswith("AgentCube release: main (detected: "), run.stderr
    assert run.stdout.startswith("Feature: Invoking an agent through the Router"), run.stdout


def test_a_dry_run_needs_no_target() -> None:
    status, output = run_behave("--dry-run", f"--define=router_url={closed_port_url()}", timeout=60)
    assert status == 0 and TITLE not in output, output
