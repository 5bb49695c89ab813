"""The suite with -D platform=kubernetes, from its start to its end: the cluster's defaults,
the endpoints and the token, the fixtures, the capabilities, the per-scenario platform, and
what the end of the run deletes or keeps. Against the stand-in API, with HTTP servers in
place of the Router's and the WorkloadManager's pods; and, as a user runs it, behave
refusing a cluster that does not answer."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from acceptance.core.runtimes import Role
from acceptance.platforms.base import (
    AUTH,
    NEIGHBOUR_NAMESPACE,
    OVERLOAD,
    ROUTER_RESTART,
    RUNTIME_ADMIN,
    SANDBOX_KILL,
    SANDBOX_OBSERVATION,
    SHORT_TIMEOUT_AGENT,
    WORKLOAD_MANAGER_SESSIONS,
    Platform,
)
from acceptance.platforms.kubernetes.cluster import Cluster, ClusterTarget
from acceptance.run.preflight import PreflightFailed
from acceptance.run.suite import Suite
from tests.kubernetes.conftest import (
    AGENT_RUNTIMES,
    CODE_INTERPRETERS,
    NS,
    SERVICE_ACCOUNTS,
    meta,
    ready_on_create,
    write_kubeconfig,
)
from tests.kubernetes.fake_api import TOKEN, FakeKubernetes, Identity
from tests.suite.commands import run_behave

# The adapter's, and the short-timeout agent it can apply.
CLUSTER_CAPABILITIES = {
    RUNTIME_ADMIN,
    SANDBOX_OBSERVATION,
    SANDBOX_KILL,
    ROUTER_RESTART,
    SHORT_TIMEOUT_AGENT,
}
FIXTURE_DELETES = [
    f"DELETE {CODE_INTERPRETERS}/python-interpreter-warm",
    f"DELETE {CODE_INTERPRETERS}/python-interpreter",
    f"DELETE {AGENT_RUNTIMES}/echo-agent",
]
NEIGHBOUR = f"{NS}-neighbour"
NEIGHBOUR_AGENT_RUNTIMES = AGENT_RUNTIMES.replace(f"/namespaces/{NS}/", f"/namespaces/{NEIGHBOUR}/")
NAMESPACES_SCENARIO_TAGS = ["requires.runtime-admin", "requires.neighbour-namespace"]
RBAC = Path(__file__).resolve().parents[2] / "docs" / "examples" / "rbac.yaml"
# The connection line ClusterUnreachable ends with.
FIX_CONNECTION = "check kubeconfig / AGENTCUBE_KUBECONFIG and kube_context / AGENTCUBE_KUBE_CONTEXT"


class PlatformOf:
    """A helper that asks the World for the scenario's platform alone."""

    def __init__(self, platform: Platform) -> None:
        self.platform = platform


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def refuses_connections(url: str) -> bool:
    try:
        socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])), timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


StartSuite = Callable[..., Suite]


@pytest.fixture
def start_suite(kubeconfig: Path, fake: FakeKubernetes) -> StartSuite:
    """Suite.start with platform=kubernetes on the stand-in, through port forwards and with
    a minted token unless told otherwise; quick polls."""
    fake.put(SERVICE_ACCOUNTS, {"kind": "ServiceAccount", "metadata": meta("e2e-test")})

    def start(**userdata: str) -> Suite:
        given = {
            "platform": "kubernetes",
            "kubeconfig": str(kubeconfig),
            "kube_context": "fake",
            "port_forward": "true",
            "token_source": "service-account",
            "poll_interval": "20ms",
            "cluster_timeout": "3s",
            # The stand-in pods answer every call 200: no 404 of theirs tells the release.
            "agentcube_release": "main",
            **userdata,
        }
        return Suite.start({k: v for k, v in given.items() if v}, {})

    return start


@pytest.fixture
def controller(fake: FakeKubernetes) -> None:
    """CodeInterpreters the run creates become ready, with their warm pools."""
    fake.after("POST", CODE_INTERPRETERS, ready_on_create)


@pytest.mark.usefixtures("services", "controller")
def test_a_run_on_a_cluster_from_start_to_finish(
    start_suite: StartSuite, fake: FakeKubernetes
) -> None:
    suite = start_suite()
    settings, target = suite.settings, suite.target
    assert isinstance(target, ClusterTarget) and target.cluster is not None
    assert target.router_url.startswith("http://127.0.0.1:")
    assert target.workload_manager_url != target.router_url
    assert target.api_token == "minted-token-1"
    # The cluster's defaults, for what was not given.
    assert settings.namespace == NS
    assert (settings.short_session_timeout, settings.ttl_grace) == (30, 90)
    assert (settings.short_session_lifetime, settings.long_task_duration) == (60, 120)
    assert settings.fail_fast == 10
    assert settings.poll_interval == 0.02  # given
    # The run's first lines: the agent-sandbox API found, the runtimes made for the run.
    assert (
        "; agent-sandbox API agents.x-k8s.io/v1alpha1, extensions.agents.x-k8s.io/v1alpha1; "
        f"3 runtimes in namespace {NS}, 3 of them created by this run (platform kubernetes); "
        "cold start "
    ) in suite.preflight
    assert suite.preflight.endswith(": the short timings fit it."), suite.preflight
    # The minted token: auth scenarios run; sessions opened at the WorkloadManager need an
    # admin token, which was not given.
    assert suite.gate.capabilities == {*CLUSTER_CAPABILITIES, AUTH}
    assert fake.lines("POST") == [
        f"POST {SERVICE_ACCOUNTS}/e2e-test/token",
        f"POST {AGENT_RUNTIMES}",
        f"POST {CODE_INTERPRETERS}",
        f"POST {CODE_INTERPRETERS}",
    ]

    cleanups: list[tuple[Callable[..., Any], tuple[Any, ...]]] = []
    world = suite.new_world(lambda cleanup, *args: cleanups.append((cleanup, args)))
    platform = world.part(PlatformOf).platform  # what the World gives a helper
    assert isinstance(platform, Cluster)
    warm = world.runtime(Role.WARM_INTERPRETER)
    assert platform.warm_pool_size(warm) == 2
    assert len(platform.warm_sandboxes(warm)) == 2
    for cleanup, args in reversed(cleanups):
        cleanup(*args)

    fake.requests.clear()
    results = suite.finish()
    assert fake.lines("DELETE") == FIXTURE_DELETES
    assert results.notes["Problems stopping the target"] == []
    assert results.notes["Kept for inspection"] == []
    assert refuses_connections(target.router_url)
    assert target.cluster is None
    suite.stop()  # a second stop (atexit) does nothing
    assert fake.lines("DELETE") == FIXTURE_DELETES


@pytest.mark.usefixtures("services", "controller")
def test_a_kept_run_leaves_what_it_created_and_says_how_to_reach_it(
    start_suite: StartSuite, fake: FakeKubernetes
) -> None:
    suite = start_suite()
    router_url = suite.target.router_url
    suite.kept.append("session s-1: call it with curl ...")
    suite.stop()
    assert fake.lines("DELETE") == []
    assert fake.get(AGENT_RUNTIMES, "echo-agent") is not None
    assert fake.get(CODE_INTERPRETERS, "python-interpreter-warm") is not None
    notes = suite.kept[1:]
    assert [note.split(":")[0] for note in notes[:3]] == [
        f"AgentRuntime {NS}/echo-agent",
        f"CodeInterpreter {NS}/python-interpreter",
        f"CodeInterpreter {NS}/python-interpreter-warm",
    ]
    port = router_url.rsplit(":", 1)[1]
    assert notes[3] == (
        f"{router_url} was port forward to svc/agentcube-router in {NS}, closed at the end of "
        f"the run; reopen it with: kubectl -n {NS} port-forward svc/agentcube-router {port}:8080"
    )
    assert "svc/workloadmanager" in notes[4]
    assert len(notes) == 5


def test_a_target_not_ready_stops_the_run_before_any_fixture(
    start_suite: StartSuite, fake: FakeKubernetes
) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    with pytest.raises(PreflightFailed, match=r"the Router at .* refused the connection"):
        start_suite(
            port_forward="false",
            token_source="",
            router_url=url,
            workload_manager_url=url,
            ready_timeout="300ms",
        )
    assert fake.lines("POST") == []


@pytest.mark.usefixtures("services")
def test_fixtures_never_usable_stop_the_run_and_what_it_created_is_deleted(
    start_suite: StartSuite, fake: FakeKubernetes
) -> None:
    with pytest.raises(AssertionError, match="cluster_timeout"):
        start_suite(cluster_timeout="300ms")
    assert fake.lines("DELETE") == [
        f"DELETE {CODE_INTERPRETERS}/python-interpreter-warm",
        f"DELETE {CODE_INTERPRETERS}/python-interpreter",
        f"DELETE {AGENT_RUNTIMES}/echo-agent",
    ]


@pytest.mark.usefixtures("services", "controller")
@pytest.mark.parametrize("checks_tokens", [False])
def test_auth_and_overload_come_from_the_settings_as_on_any_target(
    start_suite: StartSuite, fake: FakeKubernetes
) -> None:
    suite = start_suite(max_concurrent_requests="8", token_source="")
    try:
        # No token at all: the Router checks none, so its sessions are anyone's to use.
        assert suite.gate.capabilities == {
            *CLUSTER_CAPABILITIES,
            OVERLOAD,
            WORKLOAD_MANAGER_SESSIONS,
        }
    finally:
        suite.stop()


@pytest.mark.usefixtures("services", "controller")
def test_without_a_neighbour_namespace_the_namespaces_scenario_is_skipped_saying_why(
    start_suite: StartSuite,
) -> None:
    suite = start_suite()
    try:
        reason = suite.gate.skip_reason(NAMESPACES_SCENARIO_TAGS)
        assert reason is not None and "set neighbour_namespace to a namespace" in reason, reason
    finally:
        suite.stop()


@pytest.mark.usefixtures("services", "controller")
def test_a_neighbour_namespace_is_checked_by_a_dry_run_and_the_scenario_runs(
    start_suite: StartSuite, fake: FakeKubernetes
) -> None:
    fake.namespaces = {NS, NEIGHBOUR}
    suite = start_suite(neighbour_namespace=NEIGHBOUR)
    try:
        assert NEIGHBOUR_NAMESPACE in suite.gate.capabilities
        assert suite.gate.skip_reason(NAMESPACES_SCENARIO_TAGS) is None
        assert f"runtimes can be applied in neighbour namespace {NEIGHBOUR}" in suite.preflight
        assert f"POST {NEIGHBOUR_AGENT_RUNTIMES}?dryRun=All" in fake.lines("POST")
        assert fake.objects.get(NEIGHBOUR_AGENT_RUNTIMES, {}) == {}, "a dry run stores nothing"
    finally:
        suite.stop()


@pytest.mark.usefixtures("services", "controller")
@pytest.mark.parametrize(
    ("namespaces", "bound_in", "refusal"),
    [
        ({NS}, {NS, NEIGHBOUR}, f'namespaces "{NEIGHBOUR}" not found'),
        ({NS, NEIGHBOUR}, {NS}, 'cannot create resource "agentruntimes" in API group'),
    ],
    ids=["missing-namespace", "role-not-bound"],
)
def test_a_neighbour_namespace_the_runtime_cannot_be_applied_in_stops_the_run(
    start_suite: StartSuite,
    fake: FakeKubernetes,
    namespaces: set[str],
    bound_in: set[str],
    refusal: str,
) -> None:
    fake.namespaces = namespaces
    rules = tuple(yaml.safe_load(RBAC.read_text(encoding="utf-8"))["rules"])
    fake.identities[TOKEN] = Identity("acceptance", rules, frozenset(bound_in))
    with pytest.raises(PreflightFailed) as failed:
        start_suite(neighbour_namespace=NEIGHBOUR)
    [problem] = failed.value.problems
    assert problem.startswith(
        f"the namespaces scenario cannot apply its echo agent in {NEIGHBOUR} ("
    ), problem
    assert refusal in problem, problem
    assert "or unset neighbour_namespace / AGENTCUBE_NEIGHBOUR_NAMESPACE" in problem, problem
    assert fake.lines("DELETE") == FIXTURE_DELETES, "what the run created is deleted"


@pytest.mark.usefixtures("services", "controller")
def test_a_neighbour_namespace_that_is_the_namespace_under_test_stops_the_run(
    start_suite: StartSuite,
) -> None:
    with pytest.raises(PreflightFailed) as failed:
        start_suite(neighbour_namespace=NS)
    assert failed.value.problems == [
        f"neighbour_namespace / AGENTCUBE_NEIGHBOUR_NAMESPACE is {NS}, the namespace under "
        "test itself: name another one"
    ]


def test_behave_refuses_a_cluster_that_does_not_answer_in_one_line(tmp_path: Path) -> None:
    server = f"http://127.0.0.1:{closed_port()}"
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", server)
    config = yaml.safe_load(kubeconfig.read_text(encoding="utf-8"))
    kubeconfig.write_text(yaml.safe_dump({**config, "current-context": "fake"}), "utf-8")
    status, output = run_behave(
        "-D",
        "platform=kubernetes",
        "-D",
        f"kubeconfig={kubeconfig}",
        timeout=60,
    )
    assert status != 0, output
    [line] = [line for line in output.splitlines() if "is unreachable" in line]
    assert line.startswith(f"  - the Kubernetes API at {server} (kubeconfig {kubeconfig})"), output
    assert line.endswith(FIX_CONNECTION), output
    assert "The run stopped before any scenario (1 problem to fix)" in output
    assert "Traceback" not in output and "HOOK-ERROR" not in output
    assert "scenarios passed" not in output, "no behave totals after a run that never began"


def test_a_dry_run_on_the_cluster_platform_finds_every_step() -> None:
    status, output = run_behave("--dry-run", "-f", "null", "-D", "platform=kubernetes", timeout=60)
    assert status == 0, output
    steps_summary = next(line for line in output.splitlines() if " steps passed, " in line)
    assert "undefined" not in steps_summary, output
    assert "0 skipped, 0 untested" not in steps_summary, f"no step was found: {output}"
