"""The admin API: apply, list and delete runtimes at run time; introspect sandboxes."""

from __future__ import annotations

from tests.localcube.support import SESSION_HEADER, Client, derived_manifest


def test_a_runtime_applied_at_run_time_serves_and_can_be_deleted(tmp_path, client: Client) -> None:
    manifest = derived_manifest(tmp_path, "echo-agent", "added-later", sessionTimeout="30s")
    applied = client.http.post(
        f"{client.url}/localcube/v1/runtimes",
        data=manifest.read_bytes(),
        headers={"Content-Type": "application/yaml"},
    )
    assert applied.json() == {
        "applied": [{"kind": "AgentRuntime", "namespace": "default", "name": "added-later"}]
    }
    listed = {
        r["name"]: r
        for r in client.http.get(f"{client.url}/localcube/v1/runtimes").json()["runtimes"]
    }
    assert listed["added-later"]["sessionTimeout"] == 30
    answer = client.agent("added-later", json={"input": "hi"})
    assert answer.status_code == 200
    deleted = client.http.delete(
        f"{client.url}/localcube/v1/runtimes/agentruntimes/default/added-later"
    )
    assert deleted.status_code == 200
    assert client.agent("added-later", json={}).status_code == 404
    assert (
        client.agent("added-later", json={}, session=answer.headers[SESSION_HEADER]).status_code
        == 200
    )


def test_an_invalid_runtime_is_refused_with_the_field(client: Client) -> None:
    answer = client.http.post(
        f"{client.url}/localcube/v1/runtimes",
        json={
            "apiVersion": "runtime.agentcube.volcano.sh/v1alpha1",
            "kind": "CodeInterpreter",
            "metadata": {"name": "no-template"},
            "spec": {},
        },
    )
    assert answer.status_code == 400
    assert (
        "CodeInterpreter default/no-template: spec.template is required" in answer.json()["error"]
    )


def test_a_body_without_runtimes_is_refused(client: Client) -> None:
    answer = client.http.post(f"{client.url}/localcube/v1/runtimes", data="kind: ConfigMap\n")
    assert answer.status_code == 400
    assert answer.json() == {"error": "request body: no AgentRuntime or CodeInterpreter resource"}


def test_deleting_an_unknown_runtime_is_404(client: Client) -> None:
    assert (
        client.http.delete(
            f"{client.url}/localcube/v1/runtimes/agentruntimes/default/nope"
        ).status_code
        == 404
    )
    answer = client.http.delete(f"{client.url}/localcube/v1/runtimes/pods/default/nope")
    assert answer.status_code == 404
    assert "agentruntimes or codeinterpreters" in answer.json()["error"]


def test_sandboxes_are_described(client: Client) -> None:
    session = client.agent("echo-agent", json={}).headers[SESSION_HEADER]
    sandbox = client.sandbox_of(session)
    assert sandbox["kind"] == "AgentRuntime"
    assert sandbox["runtime"] == "echo-agent"
    assert sandbox["state"] == "claimed"
    assert sandbox["alive"] is True
    assert sandbox["pid"] > 1
    assert sandbox["callsInFlight"] == 0
    for key in ("createdAt", "lastActivityAt", "expiresAt"):
        assert sandbox[key].endswith("Z")


def test_the_routers_read_timeout_is_told_as_given_else_upstreams(start_localcube) -> None:
    """What the suite reads rather than wait out upstream's 30 s in a WebSocket scenario."""
    default = start_localcube().url
    given = start_localcube(extra_arguments=["--read-timeout", "1500ms"]).url
    for url, seconds in ((default, 30.0), (given, 1.5)):
        answer = Client(url).http.get(f"{url}/localcube/v1/router")
        assert answer.json() == {"readTimeoutSeconds": seconds}, answer.text
