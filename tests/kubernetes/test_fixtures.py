"""Preconditions: create only what is missing, wait until usable, delete only what was
created, and say what to do on 403/404/409."""

from __future__ import annotations

import dataclasses

import pytest

from acceptance.core.runtimes import Role, Runtime, RuntimeKind, derive_manifest, fixture_manifest
from acceptance.core.settings import ConfigError, load_settings
from acceptance.platforms.kubernetes.api import KubeError
from acceptance.platforms.kubernetes.cluster import Cluster
from acceptance.platforms.kubernetes.fixtures import FIXTURE_OF_ROLE, MANAGED_BY
from tests.kubernetes.conftest import (
    AGENT_RUNTIMES,
    CODE_INTERPRETERS,
    NS,
    PODS,
    SANDBOXES,
    MakeCluster,
    custom,
    owner,
    pod,
    ready_on_create,
)
from tests.kubernetes.fake_api import FakeKubernetes, Recorded

SUITE = load_settings({"namespace": NS}, {})


def test_creates_the_missing_fixtures_named_as_configured(
    cluster: Cluster, fake: FakeKubernetes
) -> None:
    fake.after("POST", CODE_INTERPRETERS, ready_on_create)
    suite = dataclasses.replace(SUITE, echo_agent="my-echo")
    cluster.fixtures.ensure(suite)
    assert fake.lines("POST") == [f"POST {AGENT_RUNTIMES}", *[f"POST {CODE_INTERPRETERS}"] * 2]
    created = [r.body for r in fake.requests if r.method == "POST"]
    assert [body["metadata"]["name"] for body in created] == [
        "my-echo",
        "python-interpreter",
        "python-interpreter-warm",
    ]
    assert all(body["metadata"]["namespace"] == NS for body in created)
    assert all(body["metadata"]["labels"][MANAGED_BY[0]] == MANAGED_BY[1] for body in created)
    assert created[2]["spec"]["warmPoolSize"] == 2


def test_existing_fixtures_are_used_as_they_are(cluster: Cluster, fake: FakeKubernetes) -> None:
    fake.put(AGENT_RUNTIMES, custom("AgentRuntime", "echo-agent"))
    for name in ("python-interpreter", "python-interpreter-warm"):
        interpreter = fake.put(CODE_INTERPRETERS, custom("CodeInterpreter", name))
        interpreter["status"] = {"ready": True}
    cluster.fixtures.ensure(SUITE)
    assert {r.method for r in fake.requests} == {"GET"}
    assert cluster.close().problems == []
    assert fake.lines("DELETE") == []


def test_waits_until_the_warm_pool_is_ready(cluster: Cluster, fake: FakeKubernetes) -> None:
    fake.put(AGENT_RUNTIMES, custom("AgentRuntime", "echo-agent"))
    fake.put(CODE_INTERPRETERS, custom("CodeInterpreter", "python-interpreter"))["status"] = {
        "ready": True
    }
    warm = fake.put(CODE_INTERPRETERS, custom("CodeInterpreter", "python-interpreter-warm"))
    warm.update(spec={"warmPoolSize": 2}, status={"ready": True})
    pool = [{"kind": "SandboxWarmPool", "name": "python-interpreter-warm", "uid": "pool"}]
    sandboxes = [
        fake.put(SANDBOXES, custom("Sandbox", f"w{i}", ownerReferences=pool)) for i in "12"
    ]
    fake.put(PODS, pod("w1", owners=[owner("Sandbox", sandboxes[0])]))
    fake.put(PODS, pod("w2", owners=[owner("Sandbox", sandboxes[1])], ready=False))
    pod_lists = 0

    def second_pod_ready_later(fake: FakeKubernetes, request: Recorded) -> None:
        nonlocal pod_lists
        pod_lists += 1
        if pod_lists == 3:
            fake.put(PODS, pod("w2", owners=[owner("Sandbox", sandboxes[1])]))

    fake.after("GET", PODS, second_pod_ready_later)
    cluster.fixtures.ensure(SUITE)
    assert pod_lists >= 4


def test_a_fixture_never_usable_fails_naming_the_timeout_setting(
    make_cluster: MakeCluster, fake: FakeKubernetes
) -> None:
    fake.put(AGENT_RUNTIMES, custom("AgentRuntime", "echo-agent"))
    fake.put(CODE_INTERPRETERS, custom("CodeInterpreter", "python-interpreter"))
    cluster = make_cluster(cluster_timeout=0.2)
    with pytest.raises(AssertionError, match="cluster_timeout") as raised:
        cluster.fixtures.ensure(SUITE)
    assert "has no status.ready=true yet" in str(raised.value)


@pytest.mark.parametrize(("auth_mode", "named"), [(None, True), ("none", False)])
def test_a_warm_pool_never_ready_names_the_routers_secret(
    make_cluster: MakeCluster, fake: FakeKubernetes, auth_mode: str | None, named: bool
) -> None:
    """Upstream's WorkloadManager leaves a CodeInterpreter with a warm pool not ready until
    it has the Router's public key (codeinterpreter_controller.go:135), unless PicoD's
    authentication is off (authMode none)."""
    fake.put(AGENT_RUNTIMES, custom("AgentRuntime", "echo-agent"))
    plain = fake.put(CODE_INTERPRETERS, custom("CodeInterpreter", "python-interpreter"))
    plain["status"] = {"ready": True}
    warm = fake.put(CODE_INTERPRETERS, custom("CodeInterpreter", "python-interpreter-warm"))
    warm["spec"] = {"warmPoolSize": 2, **({"authMode": auth_mode} if auth_mode else {})}
    with pytest.raises(AssertionError) as raised:
        make_cluster(cluster_timeout=0.2).fixtures.ensure(SUITE)
    assert "python-interpreter-warm has no status.ready=true yet" in str(raised.value)
    assert ("Secret picod-router-identity" in str(raised.value)) is named


def test_forbidden_creation_says_what_to_grant(cluster: Cluster, fake: FakeKubernetes) -> None:
    fake.fail("POST", AGENT_RUNTIMES, 403, 'agentruntimes is forbidden: User "dev" cannot create')
    with pytest.raises(ConfigError) as raised:
        cluster.fixtures.ensure(SUITE)
    message = str(raised.value)
    assert message.startswith(
        "the Kubernetes API answered 403 to create agentruntimes.runtime.agentcube.volcano.sh "
        'agentcube/echo-agent: agentruntimes is forbidden: User "dev" cannot create'
    )
    assert "Grant the kubeconfig user get, create and delete" in message
    assert "or apply fixtures/runtimes there yourself" in message


def test_one_created_meanwhile_by_someone_else_is_theirs(
    cluster: Cluster, fake: FakeKubernetes
) -> None:
    fake.put(CODE_INTERPRETERS, custom("CodeInterpreter", "python-interpreter"))["status"] = {
        "ready": True
    }
    fake.put(CODE_INTERPRETERS, custom("CodeInterpreter", "python-interpreter-warm"))["status"] = {
        "ready": True
    }

    def someone_else_creates_it(fake: FakeKubernetes, request: Recorded) -> None:
        if not fake.get(AGENT_RUNTIMES, "echo-agent"):
            fake.put(AGENT_RUNTIMES, custom("AgentRuntime", "echo-agent"))

    fake.after("GET", f"{AGENT_RUNTIMES}/echo-agent", someone_else_creates_it)
    fake.fail("GET", f"{AGENT_RUNTIMES}/echo-agent", 404, "not found", times=1)
    fake.fail("POST", AGENT_RUNTIMES, 409, 'agentruntimes "echo-agent" already exists', times=1)
    cluster.fixtures.ensure(SUITE)
    assert cluster.fixtures.created == {}
    assert cluster.close().problems == []
    assert fake.lines("DELETE") == []


def short_agent(name: str) -> dict:
    base = fixture_manifest(RuntimeKind.AGENT_RUNTIME, "echo-agent")
    return derive_manifest(base, name=name, namespace=NS, session_timeout=30)


def test_a_derived_runtime_is_created_with_the_target_image_and_deleted_by_uid(
    make_cluster: MakeCluster, fake: FakeKubernetes
) -> None:
    cluster = make_cluster(agent_image="reg/py:3")
    runtime = cluster.apply_runtime(short_agent("echo-agent-idle-1"))
    assert runtime == Runtime(RuntimeKind.AGENT_RUNTIME, NS, "echo-agent-idle-1")
    body = next(r.body for r in fake.requests if r.method == "POST")
    assert body["spec"]["sessionTimeout"] == "30s"
    assert {c["image"] for c in body["spec"]["podTemplate"]["spec"]["containers"]} == {"reg/py:3"}
    uid = fake.get(AGENT_RUNTIMES, "echo-agent-idle-1")["metadata"]["uid"]
    cluster.fixtures.delete(runtime)
    delete = next(r for r in fake.requests if r.method == "DELETE")
    assert delete.path == f"{AGENT_RUNTIMES}/echo-agent-idle-1"
    assert delete.body["preconditions"] == {"uid": uid}
    assert delete.body["propagationPolicy"] == "Background"
    assert fake.get(AGENT_RUNTIMES, "echo-agent-idle-1") is None


def test_a_derived_runtime_never_replaces_an_existing_one(
    cluster: Cluster, fake: FakeKubernetes
) -> None:
    fake.put(AGENT_RUNTIMES, custom("AgentRuntime", "echo-agent-idle-1"))
    with pytest.raises(KubeError, match="answered 409 to create") as raised:
        cluster.apply_runtime(short_agent("echo-agent-idle-1"))
    assert raised.value.status == 409
    cluster.fixtures.delete(Runtime(RuntimeKind.AGENT_RUNTIME, NS, "echo-agent-idle-1"))
    assert fake.lines("DELETE") == []
    assert fake.get(AGENT_RUNTIMES, "echo-agent-idle-1") is not None


def test_the_end_of_the_run_deletes_only_what_it_created_newest_first(
    cluster: Cluster, fake: FakeKubernetes
) -> None:
    fake.put(AGENT_RUNTIMES, custom("AgentRuntime", "theirs"))
    for name in ("first", "second"):
        cluster.apply_runtime(short_agent(name))
    assert cluster.close().problems == []
    assert fake.lines("DELETE") == [
        f"DELETE {AGENT_RUNTIMES}/second",
        f"DELETE {AGENT_RUNTIMES}/first",
    ]
    assert fake.get(AGENT_RUNTIMES, "theirs") is not None


def test_the_end_of_the_run_reports_what_it_could_not_delete(
    cluster: Cluster, fake: FakeKubernetes
) -> None:
    for name in ("gone", "replaced", "guarded"):
        cluster.apply_runtime(short_agent(name))
    fake.remove(AGENT_RUNTIMES, "gone")  # deleted by someone already: fine
    fake.remove(AGENT_RUNTIMES, "replaced")
    fake.put(AGENT_RUNTIMES, custom("AgentRuntime", "replaced"))  # a new object, new uid
    fake.fail("DELETE", f"{AGENT_RUNTIMES}/guarded", 403, "cannot delete")
    problems = cluster.close().problems
    assert len(problems) == 2
    assert problems[0].startswith(f"AgentRuntime {NS}/guarded: the Kubernetes API answered 403")
    assert problems[1].startswith(f"AgentRuntime {NS}/replaced: the Kubernetes API answered 409")
    assert fake.get(AGENT_RUNTIMES, "replaced") is not None


def test_roles_map_to_their_fixtures() -> None:
    # The stateful interpreter is localcube's extension: a cluster serves none to create.
    named = {role for role in Role if role.setting} - {Role.STATEFUL_INTERPRETER}
    assert set(FIXTURE_OF_ROLE) == named
    for role, fixture in FIXTURE_OF_ROLE.items():
        assert fixture_manifest(role.kind, fixture)["kind"] == role.kind.kind


def test_the_interpreter_image_is_settable(make_cluster: MakeCluster, fake: FakeKubernetes) -> None:
    fake.after("POST", CODE_INTERPRETERS, ready_on_create)
    make_cluster(interpreter_image="registry.example/picod:v2").fixtures.ensure(SUITE)
    created = [r.body for r in fake.requests if r.line == f"POST {CODE_INTERPRETERS}"]
    images = {body["spec"]["template"]["image"] for body in created}
    assert len(created) == 2
    assert images == {"registry.example/picod:v2"}


def test_what_it_created_can_be_kept_for_a_person(cluster: Cluster, fake: FakeKubernetes) -> None:
    cluster.apply_runtime(short_agent("kept"))
    assert cluster.fixtures.leftovers() == [
        f"AgentRuntime {NS}/kept: created by this run; delete it with: kubectl delete "
        f"agentruntimes.runtime.agentcube.volcano.sh kept -n {NS}"
    ]
    assert cluster.close(keep=True).problems == []
    assert fake.lines("DELETE") == []
    assert fake.get(AGENT_RUNTIMES, "kept") is not None
