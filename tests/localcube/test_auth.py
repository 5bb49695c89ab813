"""Bearer-token authentication of /v1/*, session owners and the admin role, as upstream."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from localcube.bearer_auth import TokenTable
from tests.localcube.support import SESSION_HEADER, Client

ALICE, BOB, ROOT = "alice-token-0123456789", "bob-token-9876543210", "root-token-5555555555"
ROLELESS = "roleless-token-4444444444"
ROUTER_PATH = "/v1/namespaces/default/agent-runtimes/echo-agent/invocations/echo"
WORKLOAD_MANAGER_PATH = "/v1/agent-runtime"


@dataclass
class AuthCube:
    url: str
    state_dir: Path

    def identity(self, **claims) -> str:
        """An identity token signed with the Router's key, as upstream's Router signs it for
        the WorkloadManager (pkg/router/session_manager.go:243-264); a claim given as None
        is left out."""
        key = (self.state_dir / "router-private.pem").read_bytes()
        now = int(time.time())
        base = {"iss": "agentcube-router", "iat": now, "exp": now + 300, "aud": "workloadmanager"}
        signed = {name: value for name, value in {**base, **claims}.items() if value is not None}
        return jwt.encode(signed, key, algorithm="RS256")


@pytest.fixture
def cube(tmp_path: Path, start_localcube) -> AuthCube:
    tokens = tmp_path / "tokens"
    tokens.write_text(
        f"# subjects\nalice={ALICE}\nbob={BOB}\nroot={ROOT} admin\ncarol={ROLELESS} no-role\n"
    )
    state = tmp_path / "state"
    running = start_localcube(state_dir=state, extra_arguments=["--token-file", str(tokens)])
    assert ALICE not in " ".join(running.arguments), "tokens never reach process arguments"
    return AuthCube(running.url, state)


@pytest.mark.parametrize(
    ("authorization", "expected"),
    [
        (None, "missing authorization header"),
        ("Basic abc", "invalid authorization header format"),
        ("Bearer", "invalid authorization header format"),
        ("Bearer    ", "invalid authorization header format"),  # trailing blanks are dropped
        ("Bearer wrong-token", "invalid or expired token"),
    ],
)
def test_the_router_refuses_callers_without_a_valid_token(
    cube: AuthCube, authorization, expected
) -> None:
    """Upstream: pkg/router/auth.go:44-83"""
    headers = {"Authorization": authorization} if authorization else {}
    answer = Client(cube.url).http.post(cube.url + ROUTER_PATH, json={}, headers=headers)
    assert answer.status_code == 401
    assert answer.json() == {"error": expected, "code": "UNAUTHORIZED"}


@pytest.mark.parametrize(
    ("authorization", "expected"),
    [
        (None, "Missing authorization header"),
        ("Basic abc", "Invalid authorization header format"),
        (f"bearer {ALICE}", "Invalid authorization header format"),  # the scheme is exact
        (f"Bearer {ALICE} extra", "Invalid authorization header format"),
        ("Bearer wrong-token", "Invalid or expired token"),
    ],
)
def test_the_workload_manager_refuses_callers_without_a_valid_token(
    cube: AuthCube, authorization, expected
) -> None:
    """Upstream: pkg/workloadmanager/auth.go:86-116"""
    headers = {"Authorization": authorization} if authorization else {}
    body = {"namespace": "default", "name": "echo-agent"}
    answer = Client(cube.url).http.post(
        cube.url + WORKLOAD_MANAGER_PATH, json=body, headers=headers
    )
    assert answer.status_code == 401
    assert answer.json() == {"message": expected}


def test_a_valid_token_without_the_required_role_is_forbidden_at_the_router(
    cube: AuthCube,
) -> None:
    """Before any session is looked up or opened; the WorkloadManager checks no role.

    Upstream: pkg/router/auth.go:96-122, pkg/router/server.go:167-172"""
    carol, alice = Client(cube.url, ROLELESS), Client(cube.url, ALICE)
    owned = alice.agent("echo-agent", json={}).headers[SESSION_HEADER]
    for session in (None, owned, "never-issued"):
        refused = carol.agent("echo-agent", json={}, session=session)
        assert refused.status_code == 403
        assert refused.json() == {
            "error": "insufficient permissions: missing role sandbox:invoke",
            "code": "FORBIDDEN",
        }
        assert SESSION_HEADER not in refused.headers
    assert carol.create_session("agent-runtime", "echo-agent").status_code == 200


def test_health_and_admin_routes_need_no_token(cube: AuthCube) -> None:
    client = Client(cube.url)
    assert client.http.get(f"{cube.url}/health/ready").status_code == 200
    assert client.http.get(f"{cube.url}/localcube/v1/runtimes").status_code == 200


def test_a_session_opened_through_the_router_belongs_to_its_caller(cube: AuthCube) -> None:
    """Upstream: pkg/router/handlers.go:118-127"""
    alice, bob = Client(cube.url, ALICE), Client(cube.url, BOB)
    session = alice.agent("echo-agent", json={"input": "mine"}).headers[SESSION_HEADER]
    assert alice.agent("echo-agent", json={}, session=session).status_code == 200
    refused = bob.agent("echo-agent", json={}, session=session)
    assert refused.status_code == 403
    assert refused.json() == {"error": "you do not own this sandbox", "code": "FORBIDDEN"}


def test_a_session_opened_at_the_workload_manager_without_identity_has_no_owner(
    cube: AuthCube,
) -> None:
    """Upstream: pkg/workloadmanager/handlers.go:227-234, pkg/router/handlers.go:107-117"""
    alice = Client(cube.url, ALICE)
    created = alice.create_session("agent-runtime", "echo-agent")
    assert created.status_code == 200
    assert "ownerId" not in created.json(), "the bearer of the token is not the owner"
    refused = alice.agent("echo-agent", json={}, session=created.json()["sessionId"])
    assert refused.status_code == 403
    assert refused.json() == {"error": "sandbox has no owner record", "code": "FORBIDDEN"}


def test_the_admin_role_may_use_any_session(cube: AuthCube) -> None:
    """Upstream: pkg/router/handlers.go:102-105"""
    alice, root = Client(cube.url, ALICE), Client(cube.url, ROOT)
    ownerless = alice.create_session("agent-runtime", "echo-agent").json()["sessionId"]
    owned = alice.agent("echo-agent", json={}).headers[SESSION_HEADER]
    for session in (ownerless, owned):
        assert root.agent("echo-agent", json={}, session=session).status_code == 200


def test_the_owner_is_the_subject_of_a_router_signed_identity(cube: AuthCube) -> None:
    """Upstream: pkg/workloadmanager/identity.go:85-104"""
    alice, bob = Client(cube.url, ALICE), Client(cube.url, BOB)
    created = bob.http.post(
        cube.url + WORKLOAD_MANAGER_PATH,
        json={"namespace": "default", "name": "echo-agent"},
        headers={"X-AgentCube-User-Identity": cube.identity(sub="alice")},
    )
    assert created.status_code == 200
    assert created.json()["ownerId"] == "alice"
    session = created.json()["sessionId"]
    assert alice.agent("echo-agent", json={}, session=session).status_code == 200
    assert bob.agent("echo-agent", json={}, session=session).status_code == 403


@pytest.mark.parametrize(
    "claims",
    [
        {"sub": "alice", "aud": "router"},
        {"sub": "alice", "exp": int(time.time()) - 60},
        {"sub": ""},
        {"sub": "alice", "exp": None},
    ],
    ids=["wrong-audience", "expired", "no-subject", "no-expiry"],
)
def test_an_invalid_identity_token_is_refused(cube: AuthCube, claims: dict) -> None:
    """Upstream: pkg/workloadmanager/handlers.go:236-241"""
    assert_identity_refused(cube, ALICE, cube.identity(**claims))


def test_an_identity_signed_by_another_key_is_refused(cube: AuthCube) -> None:
    """Upstream: pkg/workloadmanager/identity.go:53-58"""
    another_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    forged = jwt.encode(
        {"sub": "alice", "aud": "workloadmanager", "exp": int(time.time()) + 60},
        another_key,
        algorithm="RS256",
    )
    assert_identity_refused(cube, BOB, forged)


def assert_identity_refused(cube: AuthCube, caller_token: str, identity: str) -> None:
    """A session created at the WorkloadManager with this user identity is refused 401."""
    answer = Client(cube.url, caller_token).http.post(
        cube.url + WORKLOAD_MANAGER_PATH,
        json={"namespace": "default", "name": "echo-agent"},
        headers={"X-AgentCube-User-Identity": identity},
    )
    assert answer.status_code == 401
    assert answer.json() == {"message": "invalid identity token"}


def test_the_workload_manager_deletes_without_an_ownership_check(cube: AuthCube) -> None:
    """Upstream: pkg/workloadmanager/handlers.go:497-564"""
    alice, bob = Client(cube.url, ALICE), Client(cube.url, BOB)
    session = alice.agent("echo-agent", json={}).headers[SESSION_HEADER]
    assert bob.delete_session("agent-runtime", session).status_code == 200
    assert alice.agent("echo-agent", json={}, session=session).status_code == 404


def test_a_token_entry_grants_only_known_roles() -> None:
    table = TokenTable.parse(["alice=a-token", "root=r-token  admin", "carol=c-token no-role"], [])
    assert table.caller_of("a-token").roles == frozenset({"sandbox:invoke"})
    assert table.caller_of("r-token").roles == frozenset({"sandbox:invoke", "admin"})
    assert table.caller_of("c-token").roles == frozenset()
    assert table.caller_of("r-token  admin") is None
    with pytest.raises(
        ValueError, match="--token: unknown role 'owner' \\(known: admin, no-role\\)"
    ):
        TokenTable.parse(["alice=a-token owner"], [])
    with pytest.raises(ValueError, match="--token: a token with no-role cannot hold the admin"):
        TokenTable.parse(["root=r-token admin no-role"], [])
    with pytest.raises(ValueError, match="expected SUBJECT=TOKEN"):
        TokenTable.parse(["alice= "], [])


def test_the_token_is_absent_from_the_server_log(tmp_path: Path, start_localcube) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice={ALICE}\n")
    cube = start_localcube(extra_arguments=["--token-file", str(tokens)])
    client = Client(cube.url, ALICE)
    client.agent("echo-agent", json={})
    Client(cube.url, "Bearer-" + ALICE[::-1]).agent("echo-agent", json={})
    cube.stop()
    assert ALICE not in cube.log()


SERVICE_ACCOUNT = "sa-token-1212121212"


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        (ALICE, "Invalid service account format"),
        ("unknown-token", "Invalid or expired token"),
    ],
)
def test_with_pr_433_the_workload_manager_admits_service_accounts_only(
    tmp_path: Path, start_localcube, token: str, expected: str
) -> None:
    """PR #433 (closed unmerged) turns the chart's `--enable-auth` on: a token the API server
    knows but of no service account is refused before any lookup; the Router still takes
    its callers' tokens.

    Upstream: pkg/workloadmanager/auth.go:112-131"""
    tokens = tmp_path / "tokens"
    tokens.write_text(
        f"alice={ALICE}\nsystem:serviceaccount:agentcube:agentcube-router={SERVICE_ACCOUNT}\n"
    )
    running = start_localcube(
        extra_arguments=["--token-file", str(tokens), "--pr-433-workload-manager-auth"]
    )
    for refused in (
        Client(running.url, token).create_session("agent-runtime", "echo-agent"),
        Client(running.url, token).delete_session("agent-runtime", "any-session"),
    ):
        assert refused.status_code == 401
        assert refused.json() == {"message": expected}
    service_account = Client(running.url, SERVICE_ACCOUNT)
    created = service_account.create_session("agent-runtime", "echo-agent")
    assert created.status_code == 200, created.text
    assert Client(running.url, ALICE).agent("echo-agent", json={}).status_code == 200
    session = created.json()["sessionId"]
    assert service_account.delete_session("agent-runtime", session).status_code == 200
