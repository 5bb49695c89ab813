"""localcube's Router authenticating callers by OIDC access tokens, as upstream's Router at
939abb5: an issuer served here on loopback (oidc_issuer), localcube started with upstream's
flags, and each answer held to the upstream line that gives it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from acceptance.core import forgeries
from localcube import embedded
from oidc_issuer.issuer import TokenPolicy
from oidc_issuer.server import IssuerServer
from oidc_issuer.subjects import run_tokens
from tests.localcube.support import FIXTURES, SESSION_HEADER, Client

ROUTER_PATH = "/v1/namespaces/default/agent-runtimes/echo-agent/invocations/echo"
POLICY = TokenPolicy()
INVALID = {"error": "invalid or expired token", "code": "UNAUTHORIZED"}


@dataclass
class OidcCube:
    url: str
    issuer: IssuerServer
    tokens: dict[str, str]
    log: Path

    def mint(self, **options) -> str:
        options.setdefault("lifetime", 600)
        subject = options.pop("subject", "acceptance-suite")
        roles = options.pop("roles", [POLICY.required_role])
        policy = options.pop("policy", POLICY)
        return self.issuer.issuer.mint(subject, roles, policy, **options)

    def call(self, token: str | None, session: str | None = None) -> requests.Response:
        return Client(self.url, token).agent("echo-agent", json={"input": "hi"}, session=session)


def oidc_arguments(issuer_url: str, policy: TokenPolicy = POLICY) -> list[str]:
    return [
        "--jwt-issuer-url",
        issuer_url,
        "--jwt-audience",
        policy.audience,
        "--jwt-role-claim",
        policy.role_claim,
        "--jwt-required-role",
        policy.required_role,
    ]


@pytest.fixture(scope="module")
def cube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OidcCube]:
    work = tmp_path_factory.mktemp("oidc")
    with IssuerServer() as issuer:
        tokens = run_tokens(issuer.issuer, POLICY, lifetime=3600)
        log = work / "localcube.log"
        running = embedded.start(
            [FIXTURES],
            log,
            gc_interval="100ms",
            extra_arguments=oidc_arguments(issuer.url),
        )
        try:
            yield OidcCube(running.url, issuer, tokens, log)
        finally:
            running.stop()


def test_a_caller_with_a_valid_token_is_served(cube: OidcCube) -> None:
    answer = cube.call(cube.tokens["api_token"])
    assert answer.status_code == 200, answer.text


@pytest.mark.parametrize(
    ("authorization", "expected"),
    [
        (None, "missing authorization header"),  # pkg/router/auth.go:45-52
        ("Basic abc", "invalid authorization header format"),  # :54-62
        ("Bearer    ", "invalid authorization header format"),  # :54-62, blanks dropped
        ("Bearer not-a-jwt", "invalid or expired token"),  # :75-84, oidc.go:237-240
    ],
)
def test_a_call_without_a_usable_bearer_token_is_refused(
    cube: OidcCube, authorization: str | None, expected: str
) -> None:
    """Upstream: pkg/router/auth.go:44-84"""
    headers = {"Authorization": authorization} if authorization else {}
    answer = requests.post(cube.url + ROUTER_PATH, json={}, headers=headers, timeout=10)
    assert answer.status_code == 401
    assert answer.json() == {"error": expected, "code": "UNAUTHORIZED"}


BAD_TOKENS = {
    # pkg/router/oidc.go:137-139, with the 30 s leeway of :31
    "expired": lambda cube: cube.tokens["expired_api_token"],
    # oidc.go:146-151
    "another audience": lambda cube: cube.tokens["other_audience_api_token"],
    # oidc.go:123-126
    "another issuer": lambda cube: cube.tokens["other_issuer_api_token"],
    # oidc.go:102-106
    "an unpublished key": lambda cube: forgeries.signed_by_unpublished_key(
        cube.tokens["api_token"]
    ),
    # oidc.go:236-258: `none` is no allowed algorithm
    "alg none": lambda cube: forgeries.unsigned(cube.tokens["api_token"]),
    # oidc.go:221-233: nor is HMAC, whatever the secret
    "HMAC with the public key": lambda cube: forgeries.hmac_signed_with_public_key(
        cube.tokens["api_token"], cube.issuer.issuer.public_key_pem()
    ),
    # oidc.go:128-131
    "no subject": lambda cube: cube.mint(subject=""),
    # oidc.go:133-136
    "no expiry": lambda cube: cube.mint(lifetime=-time.time() - 1, issued_ago=-1e9),
    # oidc.go:141-144, beyond the leeway
    "not yet valid": lambda cube: _not_yet_valid(cube),
    # oidc.go:137-139: 40 s past its expiry is past the leeway
    "just expired": lambda cube: cube.mint(lifetime=60, issued_ago=100),
}


def _not_yet_valid(cube: OidcCube) -> str:
    _, claims = forgeries.parts_of(cube.tokens["api_token"])
    return cube.issuer.issuer.sign({**claims, "nbf": int(time.time()) + 120})


@pytest.mark.parametrize("kind", BAD_TOKENS)
def test_a_bad_token_is_refused_as_invalid(cube: OidcCube, kind: str) -> None:
    """Every failed validation, the same 401.

    Upstream: pkg/router/auth.go:74-84, pkg/router/oidc.go:92-161"""
    answer = cube.call(BAD_TOKENS[kind](cube))
    assert answer.status_code == 401
    assert answer.json() == INVALID


def test_a_token_within_the_clock_skew_leeway_is_still_valid(cube: OidcCube) -> None:
    """10 s past its expiry is within 30 s of leeway.

    Upstream: pkg/router/oidc.go:31, pkg/router/oidc.go:137-139"""
    assert cube.call(cube.mint(lifetime=60, issued_ago=70)).status_code == 200


def test_a_token_naming_the_audience_among_others_is_valid(cube: OidcCube) -> None:
    """`aud` may be a list.

    Upstream: pkg/router/oidc.go:146-151, pkg/router/oidc.go:201-219"""
    _, claims = forgeries.parts_of(cube.tokens["api_token"])
    token = cube.issuer.issuer.sign({**claims, "aud": ["another-api", POLICY.audience]})
    assert cube.call(token).status_code == 200


def test_a_token_without_the_required_role_is_forbidden(cube: OidcCube) -> None:
    """Wired for every /v1 route.

    Upstream: pkg/router/auth.go:109-118, pkg/router/server.go:169-171"""
    answer = cube.call(cube.tokens["no_role_api_token"])
    assert answer.status_code == 403
    assert answer.json() == {
        "error": "insufficient permissions: missing role sandbox:invoke",
        "code": "FORBIDDEN",
    }
    assert SESSION_HEADER not in answer.headers


def test_another_subject_may_not_use_the_session(cube: OidcCube) -> None:
    """Upstream: pkg/router/handlers.go:118-127"""
    session = cube.call(cube.tokens["api_token"]).headers[SESSION_HEADER]
    refused = cube.call(cube.tokens["second_api_token"], session)
    assert refused.status_code == 403
    assert refused.json() == {"error": "you do not own this sandbox", "code": "FORBIDDEN"}
    assert cube.call(cube.tokens["api_token"], session).status_code == 200


def test_the_session_s_owner_is_the_token_s_subject(cube: OidcCube) -> None:
    """The owner recorded is the subject of the token that opened the session, whoever
    that is.

    Upstream: pkg/router/session_manager.go:242-263, pkg/workloadmanager/identity.go:85-104"""
    session = cube.call(cube.tokens["second_api_token"]).headers[SESSION_HEADER]
    assert cube.call(cube.tokens["api_token"], session).status_code == 403
    assert cube.call(cube.tokens["second_api_token"], session).status_code == 200


def test_the_admin_role_may_use_any_session(cube: OidcCube) -> None:
    """Upstream: pkg/router/handlers.go:102-105"""
    session = cube.call(cube.tokens["api_token"]).headers[SESSION_HEADER]
    assert cube.call(cube.tokens["admin_api_token"], session).status_code == 200


def test_a_session_with_no_owner_is_refused_to_all_but_the_admin(cube: OidcCube) -> None:
    """Fail-closed: a session opened at the WorkloadManager (open here, as upstream's
    without --enable-auth) has no owner.

    Upstream: pkg/router/handlers.go:107-116"""
    created = Client(cube.url).create_session("agent-runtime", "echo-agent")
    assert created.status_code == 200
    session = created.json()["sessionId"]
    refused = cube.call(cube.tokens["api_token"], session)
    assert refused.status_code == 403
    assert refused.json() == {"error": "sandbox has no owner record", "code": "FORBIDDEN"}
    assert cube.call(cube.tokens["admin_api_token"], session).status_code == 200


def test_no_token_nor_key_reaches_the_log(cube: OidcCube) -> None:
    for token in cube.tokens.values():
        cube.call(token)
    text = cube.log.read_text()
    for token in cube.tokens.values():
        assert token not in text
        assert token.rsplit(".", 1)[1] not in text  # not even a signature
    assert "External authentication enabled" in text


def test_a_role_claim_named_by_the_whole_dotted_path_wins(tmp_path: Path, start_localcube) -> None:
    """A claim literally named `realm_access.roles`.

    Upstream: pkg/router/oidc.go:169-172"""
    with IssuerServer() as issuer:
        policy = TokenPolicy(role_claim="realm_access.roles", required_role="invoke")
        cube = start_localcube(extra_arguments=oidc_arguments(issuer.url, policy))
        claims = {
            "iss": issuer.url,
            "sub": "flat",
            "aud": policy.audience,
            "exp": int(time.time()) + 60,
            "realm_access.roles": ["invoke"],
            "realm_access": {"roles": []},
        }
        token = issuer.issuer.sign(claims)
        answer = Client(cube.url, token).agent("echo-agent", json={})
        assert answer.status_code == 200, answer.text


@pytest.mark.parametrize(
    ("drop", "expected"),
    [
        ("--jwt-role-claim", "--jwt-role-claim is required when --jwt-issuer-url is set"),
        ("--jwt-required-role", "--jwt-required-role is required when --jwt-issuer-url is set"),
    ],
)
def test_an_issuer_without_its_role_settings_stops_the_start(
    tmp_path: Path, drop: str, expected: str
) -> None:
    """Upstream: pkg/router/server.go:102-108"""
    arguments = oidc_arguments("http://127.0.0.1:9")
    index = arguments.index(drop)
    del arguments[index : index + 2]
    with pytest.raises(embedded.LocalCubeStartError, match=expected):
        embedded.start([FIXTURES], tmp_path / "log", extra_arguments=arguments, ready_timeout=20)


def test_an_unreachable_issuer_stops_the_start(tmp_path: Path) -> None:
    """Upstream: pkg/router/server.go:114-117, pkg/router/oidc.go:67-70"""
    with pytest.raises(
        embedded.LocalCubeStartError,
        match=r"failed to discover OIDC provider at http://127\.0\.0\.1:9",
    ):
        embedded.start(
            [FIXTURES],
            tmp_path / "log",
            extra_arguments=oidc_arguments("http://127.0.0.1:9"),
            ready_timeout=20,
        )


def test_an_issuer_url_other_than_the_document_s_stops_the_start(tmp_path: Path) -> None:
    """go-oidc's NewProvider refuses an issuer that is not the URL given, by a character.

    Upstream: pkg/router/oidc.go:66-70 (go-oidc v3 NewProvider)"""
    with (
        IssuerServer() as issuer,
        pytest.raises(embedded.LocalCubeStartError, match="issuer did not match"),
    ):
        embedded.start(
            [FIXTURES],
            tmp_path / "log",
            extra_arguments=oidc_arguments(issuer.url + "/"),
            ready_timeout=20,
        )
