"""`--store redis://...`: upstream's session records in a real redis-server, as upstream's
WorkloadManager writes them, read by localcube's Router and GC."""

from __future__ import annotations

import calendar
import re
import time
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives import serialization

from localcube.sandboxing.ports import kernel_free_port
from localcube.upstream_router.session_records import go_duration, go_json, go_time
from tests.localcube import redis_process
from tests.localcube.redis_process import RedisServer
from tests.localcube.support import FIXTURES, SESSION_HEADER, Client, derived_manifest, process_gone
from tests.localcube.test_cli import run_cli
from tests.waiting import wait_until

TIME = r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?Z)"
WHOLE_SECONDS = r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)"
WRITES = {"SETNX", "SET", "ZADD", "DEL", "ZREM"}


def unix(text: str) -> float:
    whole, _, fraction = text.rstrip("Z").partition(".")
    seconds = calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S"))
    return seconds + (float(f"0.{fraction}") if fraction else 0.0)


def record_pattern(kind: str, box: dict | None, session: str, times: str, status: str) -> str:
    """A session record's bytes as Go marshals types.SandboxInfo, times left as groups."""
    if box is None:  # the placeholder: no sandbox id, entryPoints null
        head = f'{{"kind":"{kind}","sandboxId":"","sandboxNamespace":"default","name":"'
        name, points = r"([a-z0-9-]+)", re.escape('","entryPoints":null,')
    else:
        head = f'{{"kind":"{kind}","sandboxId":"{box["sandboxId"]}",'
        head += '"sandboxNamespace":"default","name":"'
        name = re.escape(box["sandboxName"])
        points = re.escape(
            '","entryPoints":[{"path":"/","protocol":"HTTP","endpoint":"' + box["endpoint"] + '"}],'
        )
    tail = re.escape(f'"sessionId":"{session}","createdAt":"')
    tail += times + re.escape('","expiresAt":"') + times
    tail += re.escape(f'","idleTimeout":"15m0s","status":"{status}"}}')
    return "^" + re.escape(head) + name + points + tail + "$"


def writes(monitor, until: str) -> list[list[str]]:
    """The writing commands the server saw, up to the first whose first words are `until`."""
    seen = []
    while True:
        words = monitor.next_command()["command"].split(" ")
        if words[0].upper() in WRITES:
            seen.append(words)
        if " ".join(words).startswith(until):
            return seen


@pytest.fixture
def redis_cube(redis_server: RedisServer, start_localcube, tmp_path: Path):
    state = tmp_path / "state"
    cube = start_localcube(state_dir=state, extra_arguments=["--store", redis_server.url])
    return cube, Client(cube.url), redis_server.client(), state


def warm_pools_full(client: Client) -> bool:
    runtimes = client.http.get(f"{client.url}/localcube/v1/runtimes", timeout=10).json()
    wanted = sum(runtime["warmPoolSize"] for runtime in runtimes["runtimes"])
    return sum(box["state"] == "warm" for box in client.sandboxes()) == wanted


def test_go_formats() -> None:
    """Upstream: pkg/common/types/sandbox.go:26-46"""
    assert [go_duration(s) for s in (900, 3600, 90, 1.5, 0.25, 0, 8 * 3600 + 1)] == [
        "15m0s",
        "1h0m0s",
        "1m30s",
        "1.5s",
        "250ms",
        "0s",
        "8h0m1s",
    ]
    assert go_time(0) == "1970-01-01T00:00:00Z"
    assert go_time(1.25) == "1970-01-01T00:00:01.25Z"
    assert go_json({"ownerId": "a<b>&c\u2028", "x": None}) == (
        b'{"ownerId":"a\\u003cb\\u003e\\u0026c\\u2028","x":null}'
    )


def test_a_session_is_stored_as_upstreams_workload_manager_stores_it(redis_cube) -> None:
    """Upstream: pkg/store/store_redis.go:146-214"""
    _, client, store, _ = redis_cube
    before = time.time()
    with store.monitor() as monitor:
        created = client.create_session("agent-runtime", "echo-agent")
        assert created.status_code == 200
        session = created.json()["sessionId"]
        seen = writes(monitor, f"SET session:{session}")
    after = time.time()
    box = client.sandbox_of(session)
    setnx, expiry, activity, update = seen
    assert setnx[:2] == ["SETNX", f"session:{session}"]
    placeholder = re.match(record_pattern("Sandbox", None, session, TIME, "creating"), setnx[2])
    assert placeholder, setnx[2]
    assert placeholder[1] == box["sandboxName"]
    assert expiry == ["ZADD", "session:expiry", str(int(unix(placeholder[3]))), session]
    assert activity[:2] == ["ZADD", "session:last_activity"]
    assert before - 1 < int(activity[2]) <= after and activity[3] == session
    assert update[0] == "SET" and update[1] == f"session:{session}" and update[3:] == ["XX"]
    stored = store.get(f"session:{session}").decode()
    assert stored == update[2]
    full = re.match(record_pattern("Sandbox", box, session, WHOLE_SECONDS, "ready"), stored)
    assert full, stored
    created_at, expires_at = unix(full[1]), unix(full[2])
    assert int(before) <= created_at <= after
    assert expires_at - created_at == pytest.approx(8 * 3600, abs=1), "maxSessionDuration 8h"
    assert store.zscore("session:expiry", session) == int(unix(placeholder[3]))


def test_a_warm_pool_session_is_a_sandbox_claim_with_its_owner(
    redis_server: RedisServer, start_localcube, tmp_path: Path
) -> None:
    """Upstream: pkg/workloadmanager/handlers.go:442-448"""
    state = tmp_path / "state"
    cube = start_localcube(state_dir=state, extra_arguments=["--store", redis_server.url])
    client = Client(cube.url)
    key = serialization.load_pem_private_key(
        (state / "router-private.pem").read_bytes(), password=None
    )
    identity = jwt.encode(
        {"sub": "alice<&>", "aud": "workloadmanager", "exp": int(time.time()) + 60},
        key,
        algorithm="RS256",
    )
    created = client.http.post(
        f"{cube.url}/v1/code-interpreter",
        json={"name": "python-interpreter-warm", "namespace": "default"},
        headers={"X-AgentCube-User-Identity": identity},
        timeout=60,
    )
    assert created.status_code == 200, created.text
    session = created.json()["sessionId"]
    stored = redis_server.client().get(f"session:{session}").decode()
    box = client.sandbox_of(session)
    owner = re.escape('"ownerId":"alice\\u003c\\u0026\\u003e",')
    pattern = record_pattern("SandboxClaim", box, session, TIME, "ready")
    pattern = pattern.replace(re.escape('"createdAt"'), owner + re.escape('"createdAt"'))
    assert re.match(pattern, stored), stored


def test_localcubes_router_reads_the_records_and_records_activity(redis_cube) -> None:
    """Upstream: pkg/router/handlers.go:78-89"""
    _, client, store, _ = redis_cube
    first = client.agent("echo-agent", json={"input": "one"})
    assert first.status_code == 200
    session = first.headers[SESSION_HEADER]
    # An older activity, but not old enough for the GC to end the session before the call
    # (an epoch-old one raced the collector: the session was sometimes gone, 404).
    planted = int(time.time()) - 3
    store.zadd("session:last_activity", {session: planted})
    again = client.agent("echo-agent", json={"input": "two"}, session=session)
    assert again.status_code == 200 and again.json()["output"] == "echo: two"
    assert store.zscore("session:last_activity", session) > planted  # the call recorded
    store.delete(f"session:{session}")
    gone = client.agent("echo-agent", json={}, session=session)
    assert gone.status_code == 404
    assert gone.json()["code"] == "SESSION_NOT_FOUND"


@pytest.mark.slow
def test_activity_a_router_records_keeps_a_session_then_it_ends_with_its_records(
    redis_server: RedisServer, start_localcube, tmp_path: Path
) -> None:
    """Upstream: pkg/workloadmanager/garbage_collection.go:84-137"""
    manifest = derived_manifest(tmp_path, "echo-agent", "brief-agent", sessionTimeout="2s")
    cube = start_localcube([manifest], extra_arguments=["--store", redis_server.url])
    client, store = Client(cube.url), redis_server.client()
    session = client.create_session("agent-runtime", "brief-agent").json()["sessionId"]
    pid = client.sandbox_of(session)["pid"]
    for _ in range(20):  # another Router's calls, 4 s in all: twice the idle timeout
        store.zadd("session:last_activity", {session: int(time.time())})
        time.sleep(0.2)
    assert not process_gone(pid), "activity in session:last_activity keeps the session"
    wait_until(lambda: process_gone(pid), "the idle session to end", timeout=10)
    assert store.exists(f"session:{session}") == 0
    assert store.zscore("session:last_activity", session) is None
    assert store.zscore("session:expiry", session) is None


def test_an_expired_session_leaves_the_store(
    redis_server: RedisServer, start_localcube, tmp_path: Path
) -> None:
    """Upstream: pkg/workloadmanager/garbage_collection.go:107-137"""
    manifest = derived_manifest(tmp_path, "echo-agent", "short-agent", maxSessionDuration="2s")
    cube = start_localcube([manifest], extra_arguments=["--store", redis_server.url])
    client, store = Client(cube.url), redis_server.client()
    session = client.create_session("agent-runtime", "short-agent").json()["sessionId"]
    expires = store.zscore("session:expiry", session)
    assert expires == pytest.approx(time.time() + 2, abs=2)
    wait_until(lambda: store.exists(f"session:{session}") == 0, "the session to expire", timeout=10)
    assert time.time() >= expires
    assert store.zscore("session:expiry", session) is None
    assert client.sandbox_of(session) is None


def test_a_deleted_session_leaves_the_store(redis_cube) -> None:
    """Upstream: pkg/store/store_redis.go:216-228"""
    _, client, store, _ = redis_cube
    session = client.create_session("agent-runtime", "echo-agent").json()["sessionId"]
    assert store.exists(f"session:{session}") == 1
    with store.monitor() as monitor:
        assert client.delete_session("agent-runtime", session).status_code == 200
        seen = writes(monitor, f"ZREM session:last_activity {session}")
    assert seen == [
        ["DEL", f"session:{session}"],
        ["ZREM", "session:expiry", session],
        ["ZREM", "session:last_activity", session],
    ]


def test_a_store_that_stops_answering_fails_calls_with_500_and_leaves_no_sandbox(
    redis_server: RedisServer, redis_cube
) -> None:
    """Upstream: pkg/workloadmanager/handlers.go:391-398"""
    _, client, _, state = redis_cube
    session = client.agent("echo-agent", json={}).headers[SESSION_HEADER]
    # Every warm pool full first: a pool still filling when the store stops keeps trying.
    wait_until(lambda: warm_pools_full(client), "the warm pools to be full", timeout=30)
    redis_server.stop()
    opened = client.create_session("agent-runtime", "echo-agent")
    assert (opened.status_code, opened.json()) == (500, {"message": "internal server error"})
    routed = client.agent("echo-agent", json={})
    assert (routed.status_code, routed.json()) == (500, {"error": "internal server error"})
    known = client.agent("echo-agent", json={}, session=session)
    assert (known.status_code, known.json()) == (500, {"error": "internal server error"})
    deleted = client.delete_session("agent-runtime", session)
    assert (deleted.status_code, deleted.json()) == (500, {"message": "internal server error"})
    claimed = [box for box in client.sandboxes() if box["runtime"] == "echo-agent"]
    assert [box["sessionId"] for box in claimed] == [session], "no sandbox left for failures"
    assert len(list((state / "sandboxes").iterdir())) == len(client.sandboxes())


def test_a_store_password_comes_from_the_environment(
    tmp_path: Path, start_localcube, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = redis_process.start(tmp_path / "redis", password="store-secret-123")
    try:
        monkeypatch.setenv("REDIS_PASSWORD", "store-secret-123")
        cube = start_localcube(extra_arguments=["--store", server.url])
        assert "store-secret-123" not in " ".join(cube.arguments)
        created = Client(cube.url).create_session("agent-runtime", "echo-agent")
        assert created.status_code == 200
        assert server.client().exists(f"session:{created.json()['sessionId']}") == 1
    finally:
        server.stop()


def test_an_unreachable_store_stops_localcube_at_start(tmp_path: Path) -> None:
    url = f"redis://127.0.0.1:{kernel_free_port()}"
    result = run_cli("serve", "--manifests", str(FIXTURES), "--port", "0", "--store", url)
    assert result.returncode == 1
    assert result.stderr.strip().startswith(f"localcube: cannot reach the store: store {url}:")


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://127.0.0.1:6379", "unsupported scheme 'http'"),
        ("redis://:hunter2@127.0.0.1:6379", "put the password in REDIS_PASSWORD"),
        ("redis://", "the URL names no host"),
    ],
)
def test_a_store_url_localcube_cannot_use_is_refused(url: str, reason: str) -> None:
    result = run_cli("serve", "--manifests", str(FIXTURES), "--store", url)
    assert result.returncode == 2
    assert f"argument --store: {reason}" in result.stderr
    assert "hunter2" not in result.stderr


def test_a_valkey_url_speaks_the_same_protocol(redis_server: RedisServer, start_localcube) -> None:
    """Valkey speaks Redis's protocol: `valkey://` reaches the same server (STORE_TYPE=valkey
    upstream)."""
    cube = start_localcube(extra_arguments=["--store", f"valkey://127.0.0.1:{redis_server.port}"])
    created = Client(cube.url).create_session("agent-runtime", "echo-agent")
    assert created.status_code == 200
    assert redis_server.client().exists(f"session:{created.json()['sessionId']}") == 1
