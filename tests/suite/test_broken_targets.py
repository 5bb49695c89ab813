"""Every expectation of the corner-case, security and reliability scenarios fails against a
target that breaks it, with a message that names the expectation; and no run, failed or
not, lets a bearer token into its output or reports.

Each case runs behave, as a user would, against a deliberately broken target: the fault
proxy in front of a real localcube, or a localcube started with options that break a
promise (no warm pool, a concurrency limit other than the one declared). The runs go on
concurrently, a few at a time, while the cases below wait for their own.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from localcube import embedded
from tests.localcube.support import FIXTURES, fixture_documents
from tests.suite.fault_proxy import FaultProxy

# every broken target's run is made once for the module: one process, left to CI
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("broken-targets")]

ROOT = Path(__file__).resolve().parents[2]
FIRST_TOKEN, SECOND_TOKEN = "first-subject-Zq8vY1", "second-subject-Kp3wX7"
ADMIN_TOKEN = "admin-subject-Vb6tR2"
# Short limits, so that broken runs give up in seconds. The timeouts of the scenarios are
# the defaults (2 s of idle timeout, 3 s of lifetime, 1 s of ttl_grace): the proofs show that
# the shortest timeouts still fail every broken target.
QUICK = {
    "fail_fast": "2s",
    "ready_timeout": "10s",
}
CONCURRENT_RUNS = 3
# A localcube given by URL names no stateful interpreter unasked: the fixture's.
STATEFUL = {"stateful_interpreter": "python-interpreter-stateful"}
# A fault that changes the Router's 404 for a session id never issued hides the release
# from the preflight too (tests/suite/test_release_detection.py): the run is told it.
MAIN = {"agentcube_release": "main"}


@dataclass(frozen=True)
class Case:
    """A broken target, the scenarios it must fail (behave -n patterns), and what the
    output must say; `target` is the localcube the run reaches, through `fault` if any."""

    fault: str | None
    names: tuple[str, ...]
    expected: tuple[str, ...]
    target: str = "cube"
    tags: str = "not @wip"
    userdata: dict[str, str] = field(default_factory=dict)
    admin: bool = False  # the run is given the admin subject's token too


CASES = {
    # The umbrella issue's scenarios (A1-A3, B1-B3).
    "answers without the session header": Case(
        "drop-session-header",
        ("The first call opens a session", "The first command runs in a new session"),
        ("Expected: the answer to carry a new session id in x-agentcube-session-id",),
    ),
    "the caller's session id ignored": Case(
        "ignore-session-id",
        (
            "reaches the same sandbox",
            "undefined in the next",
            "A file written by one command",
            "uploaded script writes a result",
        ),
        (
            "Expected: the answer to carry session id",
            "Expected: the command to print '10' and nothing else",
            "Expected: the command to exit with code 0",
        ),
        userdata=MAIN,
    ),
    "unknown runtimes and sessions answered as found": Case(
        "not-found-as-ok",
        ("does not exist is refused", "never issued is refused"),
        (
            "Expected: the Router to refuse the call with 404 because AgentRuntime",
            "Expected: the Router to refuse the call with 404 because CodeInterpreter",
            "Expected: the Router to refuse the call with 404 because session",
        ),
        userdata=MAIN,
    ),
    "idle sessions never collected": Case(
        None,
        ("left idle past its timeout",),
        ("Expected: no sandbox serving the session",),
        target="cube that never collects",
    ),
    # The corner cases.
    "an ingress that cuts long calls": Case(
        "cut-long-calls",
        ("runs longer than an ordinary call", "A task longer than the idle timeout"),
        (
            "Expected: the command to complete with exit code 0 and all 3 lines it printed",
            "the status was 504",
            "Expected: the echo agent to finish its long call",
        ),
        userdata={"short_session_timeout": "2s"},
    ),
    "command timeouts ignored": Case(
        "ignore-command-timeout",
        ("outlives its timeout",),
        ("Expected: the command to be stopped with exit code 124 after its timeout of 1 s",),
    ),
    # Upstream PicoD's defect (docs/fidelity.md): a timeout that spares the background.
    "a timeout that waits for a background process": Case(
        "wait-for-background-processes",
        ("leaves a background process running",),
        ("the target waited for the background process it left running",),
        userdata={"answer_allowance": "2s"},
    ),
    "a long call not counted as activity": Case(
        "end-session-after-slow-call",
        ("A task longer than the idle timeout",),
        ("the echo agent to answer 200 with output 'echo: still there?'", "status was 404"),
    ),
    "hard lifetimes ignored": Case(
        "ignore-session-lifetime",
        ("A busy session ends",),
        ("waiting for the busy session", "to end at its hard lifetime (3 s)"),
    ),
    "sessions ended before their lifetime": Case(
        "early-session-end",
        ("A busy session ends",),
        ("before its hard lifetime of 3 s",),
    ),
    "error codes dropped": Case(
        "strip-error-codes",
        ("has been closed is refused", "session id it never issued", "refused as unauthorized"),
        (
            "was not found, with code SESSION_NOT_FOUND",
            "because of 'missing authorization header', opening no session",
        ),
        userdata=MAIN,
    ),
    "the agent's 404 taken for the Router's": Case(
        "mark-every-404",
        ("agent's own",),
        ("without the Router's code SESSION_NOT_FOUND",),
    ),
    "refusals that explain nothing": Case(
        "opaque-errors",
        ("not valid JSON", "larger than the sandbox accepts", "file that does not exist"),
        ("the body is not JSON", "refused with 413 and an error"),
        userdata=MAIN,
    ),
    "no workspace jail": Case(
        "no-workspace-jail",
        (
            'download "../outside/secret.txt" is refused',
            'upload a file to "link/planted.txt" is refused',
            r"inside the workspace: (upload a file to|download) ",
        ),
        (
            "Expected: the call to be refused with 400 because the path escapes the workspace",
            "Expected: the outside directory to hold only secret.txt, unchanged",
            "Expected: an answer that reveals nothing from outside the workspace",
        ),
    ),
    "sessions sharing a sandbox": Case(
        "shared-sandbox",
        ("cannot be read from another", "same file name", "20 sessions opened"),
        (
            "the call to be refused with 404 and an error that says 'File not found'",
            "session B to store note.txt and the answer to carry session id",
            "Expected: the workspace listing to hold exactly mine-",
        ),
    ),
    # The first scenario's session id comes back in the second: only the run-wide check
    # can tell, since within its own scenario each id is new.
    "session ids handed out twice": Case(
        "recycled-session-ids",
        ("the next call in it reaches the same sandbox", "never handed out twice"),
        ("was issued before",),
    ),
    "the caller's token passed to the sandbox": Case(
        "forward-caller-token",
        ("token never reaches the sandbox",),
        ("a sandbox that received none of the callers' tokens",),
    ),
    "the caller's token passed on in another header": Case(
        "token-in-another-header",
        ("token never reaches the sandbox",),
        ("a sandbox that received none of the callers' tokens",),
    ),
    "one identity for every caller": Case(
        "ignore-caller-identity",
        ("belongs to the subject that opened it",),
        ("refuse another subject's call in the session with 403 FORBIDDEN",),
    ),
    "a dead sandbox that keeps callers waiting": Case(
        "hang-on-sandbox-failure",
        ("sandbox dies",),
        ("it hung instead",),
        tags="@disruptive",
    ),
    "a warm pool that does not speed anything up": Case(
        "slow-warm-pool",
        ("does not make a first call slower",),
        ("the first call with a warm pool took",),
    ),
    "deletions that delete nothing": Case(
        "deletion-not-done",
        ("20 sessions opened", "came from the pool"),
        (
            "Expected: no sandbox of the closed sessions",
            "no longer running",
            "of the closed session",
            "HOOK-ERROR in after_all",
            "sandbox(es) the run created are still on the target",
        ),
    ),
    # Upstream's e2e checks (docs/coverage.md) this suite added.
    "an echo that loses non-ASCII characters": Case(
        "lossy-echo",
        ("non-ASCII characters and echoes it back",),
        ("Expected: the echo agent to answer 200 with output 'echo: quotes",),
    ),
    "an empty input refused": Case(
        "refuse-empty-input",
        ("given an empty text",),
        ("Expected: the echo agent to answer 200 with output 'echo: '", "status was 400"),
    ),
    "exit codes all turned into 1": Case(
        "exit-codes-as-one",
        ("exits with code (3|7|42) is answered",),
        (
            "Expected: the command to exit with code 3",
            "Expected: the command to exit with code 7",
            "Expected: the command to exit with code 42",
        ),
    ),
    "a warning written to stderr on success": Case(
        "warning-on-stderr",
        ("The first command runs in a new session",),
        ("Expected: the command to write nothing to its error output",),
    ),
    "no admin role": Case(
        "no-admin-bypass",
        ("admin role may use a session",),
        ("Expected: the echo agent to answer 200 with output 'echo: checking in'",),
        admin=True,
    ),
    "absolute paths refused": Case(
        "refuse-absolute-paths",
        ("absolute path is kept in the workspace",),
        ("Expected: PicoD to store the upload",),
    ),
    "absolute paths taken apart on upload": Case(
        "flatten-absolute-uploads",
        ("absolute path is kept in the workspace",),
        ("to download as the bytes uploaded",),
    ),
    "a warm pool that never refills": Case(
        "warm-pool-never-refills",
        ("which refills", "came from the pool"),
        ("to refill after a session took",),
    ),
    "a stateful interpreter that forgets variables": Case(
        "forgetful-kernel",
        ("still defined in the next",),
        ("Expected: the command to print '10' and nothing else",),
        userdata=STATEFUL,
    ),
    "a dead kernel answered as if the code had run": Case(
        "swallowed-kernel-death",
        ("kernel dies",),
        ("Expected: the interpreter to answer 500 because the session's kernel died",),
        userdata=STATEFUL,
    ),
    "a dead kernel's sandbox that keeps callers waiting": Case(
        "hang-on-sandbox-failure",
        ("kernel dies",),
        ("it hung instead",),
        userdata=STATEFUL,
    ),
    "sessions that fail under sustained load": Case(
        "fail-one-session-in-five",
        ("steady rate",),
        (
            "only 80.0% of the sessions succeeded, fewer than the 100% required",
            "error: status 503: sandbox unreachable: 2",
            "first-call latency of those: p50",
            "Measured under load (2):",
        ),
        tags="@load",
        userdata={"load_sessions": "10", "load_rate": "20"},
    ),
    "a warm-pool interpreter without a pool": Case(
        None,
        ("waiting in the pool",),
        ("was not served by a sandbox from the warm pool",),
        target="cube without pool",
    ),
    "a concurrency limit higher than declared": Case(
        None,
        ("beyond the concurrency limit",),
        ("Expected: 2 calls served, as many as the limit",),
        userdata={"max_concurrent_requests": "2"},
    ),
    "overload refused without its code": Case(
        "strip-error-codes",
        ("beyond the concurrency limit",),
        ("Expected: the Router to refuse the call with 429 because it is overloaded",),
        target="cube limited to 2",
        userdata={"max_concurrent_requests": "2"},
    ),
    # Issue 20 item 7: namespaces, and files larger than a buffer.
    "a Router that ignores the namespace": Case(
        "ignore-namespace",
        ("not found under a namespace it is not in",),
        ("Expected: the Router to refuse the call with 404 because AgentRuntime default-empty-",),
    ),
    "sessions found by the path's namespace": Case(
        "route-sessions-by-path",
        ("never served by that namespace's runtime",),
        (
            "Expected: the call to AgentRuntime default-neighbour/echo-agent in session",
            "never by another sandbox or in a new session",
        ),
    ),
    "uploads cut at a 64 KiB buffer": Case(
        "cut-large-uploads",
        ("several megabytes comes back byte for byte",),
        ("Expected: PicoD to store large.bin (5247201 bytes)", "value for 'size' was <65536>"),
    ),
    "downloads cut at a 64 KiB buffer": Case(
        "cut-large-downloads",
        ("several megabytes comes back byte for byte",),
        ("Expected: large.bin to come back byte for byte", "the body was 65536 bytes"),
    ),
    "a listing that reports one buffer's size": Case(
        "cap-listed-sizes",
        ("large file's full size",),
        ("Expected: the workspace listing to show large.bin with its size of 5247201 bytes",),
    ),
}


@dataclass(frozen=True)
class Run:
    returncode: int
    output: str
    reports: str


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Future[Run]]]:
    """Start the broken targets and every case's behave run, and the control run: the
    disruptive scenarios against a localcube the suite starts itself."""
    work = tmp_path_factory.mktemp("broken")
    tokens = work / "tokens"
    tokens.write_text(f"first={FIRST_TOKEN}\nsecond={SECOND_TOKEN}\nadmin={ADMIN_TOKEN} admin\n")
    with ExitStack() as stack:
        targets = _start_targets(work, tokens, stack)
        pool = stack.enter_context(ThreadPoolExecutor(CONCURRENT_RUNS))
        futures = {}
        for name, case in CASES.items():
            url = targets[case.target].url
            if case.fault is not None:
                url = stack.enter_context(FaultProxy(url, case.fault)).url
            futures[name] = pool.submit(_behave, work / name.replace(" ", "-"), case, url)
        futures["control"] = pool.submit(
            _behave, work / "control", Case(None, (), (), tags="@disruptive"), None
        )
        yield futures
        for future in futures.values():
            future.result()  # every run ends before its target stops


def _start_targets(
    work: Path, tokens: Path, stack: ExitStack
) -> dict[str, embedded.RunningLocalCube]:
    manifests = work / "without-pool.yaml"
    documents = fixture_documents()
    for document in documents:
        document["spec"].pop("warmPoolSize", None)
    manifests.write_text(yaml.safe_dump_all(documents))
    options = {
        "cube": ([FIXTURES], []),
        "cube without pool": ([manifests], []),
        "cube limited to 2": ([FIXTURES], ["--max-concurrent-requests", "2"]),
        "cube that never collects": ([FIXTURES], ["--gc-interval", "1h"]),
    }
    targets = {}
    for name, (paths, extra) in options.items():
        cube = embedded.start(
            paths,
            work / f"{name.replace(' ', '-')}.log",
            gc_interval="100ms",
            extra_arguments=["--token-file", str(tokens), *extra],
        )
        stack.callback(cube.stop)
        targets[name] = cube
    return targets


def _behave(directory: Path, case: Case, url: str | None) -> Run:
    junit = directory / "junit"
    command = [sys.executable, "-m", "behave", "--no-color", "-f", "plain"]
    command += ["--junit", "--junit-directory", str(junit), "--tags", case.tags]
    for pattern in case.names:
        command += ["-n", pattern]
    userdata = {**QUICK, "reports_dir": str(directory), **case.userdata}
    if url is not None:
        userdata.update(router_url=url, platform="localcube")
    for name, value in userdata.items():
        command += ["-D", f"{name}={value}"]
    env = {name: value for name, value in os.environ.items() if not name.startswith("AGENTCUBE_")}
    env.update(AGENTCUBE_API_TOKEN=FIRST_TOKEN, AGENTCUBE_SECOND_API_TOKEN=SECOND_TOKEN)
    if case.admin:
        env["AGENTCUBE_ADMIN_API_TOKEN"] = ADMIN_TOKEN
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    reports = "".join(path.read_text() for path in sorted(junit.glob("*.xml")))
    return Run(result.returncode, result.stdout + result.stderr, reports)


@pytest.mark.parametrize("name", CASES)
def test_a_broken_target_fails_the_run_naming_the_expectation(runs, name: str) -> None:
    run = runs[name].result()
    assert run.returncode == 1, run.output[-4000:]
    for message in CASES[name].expected:
        assert message in run.output, f"{message!r} is not in the output:\n{run.output[-6000:]}"


def test_the_disruptive_scenarios_pass_against_the_localcube_the_suite_starts(runs) -> None:
    run = runs["control"].result()
    assert run.returncode == 0, run.output[-6000:]
    assert "2 scenarios passed, 0 failed" in run.output


@pytest.mark.parametrize("name", [*CASES, "control"])
def test_no_token_reaches_the_output_or_the_reports(runs, name: str) -> None:
    run = runs[name].result()
    assert run.reports, "the run wrote JUnit reports"
    for token in (FIRST_TOKEN, SECOND_TOKEN, ADMIN_TOKEN):
        assert token not in run.output and token not in run.reports
