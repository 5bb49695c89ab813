"""Every expectation of the corner-case, security and reliability scenarios fails against a
target that breaks it, with a message that names the expectation; and no run, failed or
not, lets a bearer token (any JWT at all) or the issuer's key into its output or reports.

Each case runs behave, as a user would, against a deliberately broken target: the fault
proxy in front of a real localcube, or a localcube started with options that break a
promise (no warm pool, a concurrency limit other than the one declared). The runs go on
concurrently, a few at a time, while the cases below wait for their own.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from localcube import embedded
from oidc_issuer.issuer import TokenPolicy
from oidc_issuer.server import IssuerServer
from oidc_issuer.subjects import run_tokens, write_tokens
from tests.localcube.support import FIXTURES, fixture_documents
from tests.suite.commands import run_behave
from tests.suite.fault_proxy import FaultProxy
from tests.suite.leaks import JWT_SHAPE

# every broken target's run is made once for the module: one process, left to CI
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("broken-targets")]

# The broken targets' Routers check the tokens of one issuer, served here for the module.
POLICY = TokenPolicy()
# Short limits, so that broken runs give up in seconds. The timeouts of the scenarios are
# the defaults (2 s of idle timeout, 3 s of lifetime, 1 s of ttl_grace): the proofs show that
# the shortest timeouts still fail every broken target.
QUICK = {
    "fail_fast": "2s",
    "ready_timeout": "10s",
}
CONCURRENT_RUNS = 3
# The cases: each a broken target and what it must fail (docgen/scenario_index.py reads it too).
CASES_FILE = Path(__file__).with_name("broken_targets.yaml")


@dataclass(frozen=True)
class Case:
    """A broken target, the scenarios it must fail (behave -n patterns), and what the
    output must say; `target` is the localcube the run reaches, through `fault` if any
    (broken_targets.yaml says each field)."""

    fault: str | None
    names: tuple[str, ...]
    expected: tuple[str, ...]
    target: str = "cube"
    tags: str = "not @wip"
    userdata: dict[str, str] = field(default_factory=dict)
    admin: bool = False  # the run is given the admin subject's token too


def load_cases(path: Path) -> dict[str, Case]:
    """The cases of broken_targets.yaml, by name; ValueError naming a case it cannot take."""
    cases = {}
    for name, entry in yaml.safe_load(path.read_text(encoding="utf-8")).items():
        try:
            cases[name] = Case(
                **{**entry, "names": tuple(entry["names"]), "expected": tuple(entry["expected"])}
            )
        except (KeyError, TypeError) as error:
            raise ValueError(f"{path.name}: case {name!r}: {error}") from None
    return cases


CASES = load_cases(CASES_FILE)


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
    with ExitStack() as stack:
        issuer = stack.enter_context(IssuerServer())
        tokens = run_tokens(issuer.issuer, POLICY, lifetime=3600)
        targets = _start_targets(work, issuer.url, stack)
        pool = stack.enter_context(ThreadPoolExecutor(CONCURRENT_RUNS))
        futures = {}
        for name, case in CASES.items():
            url = targets[case.target].url
            if case.fault is not None:
                url = stack.enter_context(FaultProxy(url, case.fault)).url
            futures[name] = pool.submit(_behave, work / name.replace(" ", "-"), case, url, tokens)
        futures["control"] = pool.submit(
            _behave, work / "control", Case(None, (), (), tags="@disruptive"), None, {}
        )
        yield Runs(futures, tokens, issuer.issuer.private_key_pem().decode())
        for future in futures.values():
            future.result()  # every run ends before its target stops


@dataclass(frozen=True)
class Runs:
    """The runs by case, and the secrets none of them may print: the issuer's tokens and
    its private key."""

    futures: dict[str, Future[Run]]
    tokens: dict[str, str]
    issuer_key: str

    def __getitem__(self, name: str) -> Future[Run]:
        return self.futures[name]


def _start_targets(
    work: Path, issuer_url: str, stack: ExitStack
) -> dict[str, embedded.RunningLocalCube]:
    manifests = work / "without-pool.yaml"
    documents = fixture_documents()
    for document in documents:
        document["spec"].pop("warmPoolSize", None)
    manifests.write_text(yaml.safe_dump_all(documents))
    authenticated = [
        *("--jwt-issuer-url", issuer_url, "--jwt-audience", POLICY.audience),
        *("--jwt-role-claim", POLICY.role_claim),
        *("--jwt-required-role", POLICY.required_role),
    ]
    options = {
        "cube": ([FIXTURES], authenticated),
        "cube without pool": ([manifests], authenticated),
        "cube limited to 2": ([FIXTURES], [*authenticated, "--max-concurrent-requests", "2"]),
        "cube that never collects": ([FIXTURES], [*authenticated, "--gc-interval", "1h"]),
        "cube without authentication": ([FIXTURES], []),
    }
    targets = {}
    for name, (paths, extra) in options.items():
        cube = embedded.start(
            paths,
            work / f"{name.replace(' ', '-')}.log",
            gc_interval="100ms",
            extra_arguments=extra,
        )
        stack.callback(cube.stop)
        targets[name] = cube
    return targets


def _behave(directory: Path, case: Case, url: str | None, tokens: dict[str, str]) -> Run:
    """behave against the target, given the issuer's tokens (the admin's only when the
    case asks: it changes which scenarios can run) from a token directory, as
    `python -m oidc_issuer` writes one; none for a localcube the suite starts itself."""
    junit = directory / "junit"
    userdata = {**QUICK, "reports_dir": str(directory), **case.userdata}
    if url is not None:
        userdata.update(router_url=url, platform="localcube")
    environ = {}
    given = {name: token for name, token in tokens.items() if case.admin or "admin" not in name}
    if given:
        write_tokens(given, directory / "tokens")
        environ["AGENTCUBE_TOKEN_DIR"] = str(directory / "tokens")
    status, output = run_behave(
        *("-f", "plain", "--junit", "--junit-directory", str(junit), "--tags", case.tags),
        *(f"--name={pattern}" for pattern in case.names),
        userdata=userdata,
        timeout=240,
        **environ,
    )
    reports = "".join(path.read_text() for path in sorted(junit.glob("*.xml")))
    return Run(status, output, reports)


@pytest.mark.parametrize("name", CASES)
def test_a_broken_target_fails_the_run_naming_the_expectation(runs, name: str) -> None:
    run = runs[name].result()
    assert run.returncode == 1, run.output[-4000:]
    for message in CASES[name].expected:
        assert message in run.output, f"{message!r} is not in the output:\n{run.output[-6000:]}"


def test_the_disruptive_scenarios_pass_against_the_localcube_the_suite_starts(runs) -> None:
    run = runs["control"].result()
    assert run.returncode == 0, run.output[-6000:]
    assert ": 2 passed, 0 failed" in run.output


@pytest.mark.parametrize("name", [*CASES, "control"])
def test_no_credential_reaches_the_output_or_the_reports(runs, name: str) -> None:
    """Neither a token of the issuer's nor any other JWT (the control run's own issuer's,
    a forgery), nor a line of the issuer's private key."""
    run = runs[name].result()
    assert run.reports, "the run wrote JUnit reports"
    for text in (run.output, run.reports):
        for token in runs.tokens.values():
            assert token not in text
        assert not JWT_SHAPE.search(text), JWT_SHAPE.search(text)
        for line in runs.issuer_key.splitlines()[1:-1]:
            assert line not in text
