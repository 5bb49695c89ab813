"""Credentials and authentication: the caller's token never reaches a sandbox, calls without
a valid token are refused (without repeating it), a subject without the required role is
forbidden, and a session belongs to the subject that opened it."""

from __future__ import annotations

import enum
import hashlib
import secrets
from collections.abc import Mapping, Sequence
from typing import Any

import requests
from hamcrest import assert_that, described_as, has_entry, has_item, is_in, is_not
from hamcrest.core.matcher import Matcher

from acceptance.core import forgeries, matchers
from acceptance.core.evidence import describe_response, register_secret
from acceptance.core.matchers import Answer, Refusal
from acceptance.core.runtimes import Role
from acceptance.core.settings import Settings
from acceptance.domain.sessions import echoed_in
from acceptance.domain.world import World, required
from acceptance.platforms.base import Target, fetch_json


class Credentials(enum.Enum):
    """Credentials a call may present, as the features phrase them, and where the bearer
    token comes from: a header written here (`{random}`: a fresh random word; None: no
    header), a refused token the run was given (by its setting), or a forgery made here
    from the caller's token (acceptance.core.forgeries)."""

    NONE = ("without a token", None)
    MALFORMED = ("with a malformed authorization header", "Token-not-a-bearer-credential")
    UNKNOWN = ("with a token the target does not know", "Bearer {random}")
    EXPIRED = ("with a token that has expired", "setting:expired_api_token")
    OTHER_AUDIENCE = (
        "with a token issued for another audience",
        "setting:other_audience_api_token",
    )
    OTHER_ISSUER = ("with a token that names another issuer", "setting:other_issuer_api_token")
    NO_ROLE = ("as a subject without the role the Router requires", "setting:no_role_api_token")
    UNPUBLISHED_KEY = (
        "with a token signed by a key the issuer never published",
        "forged:unpublished-key",
    )
    UNSIGNED = ("with a token that is not signed", "forged:unsigned")
    PUBLIC_KEY_AS_SECRET = (
        "with a token signed with the issuer's public key as a shared secret",
        "forged:public-key-as-secret",
    )

    def __init__(self, phrase: str, header: str | None) -> None:
        self.phrase = phrase
        self.header = header


# Why the Router refuses a call as unauthorized, as the features say it, and the words of
# upstream's refusal (pkg/router/auth.go:47, :57 and :79 at 939abb5).
UNAUTHORIZED_BECAUSE = {
    "no authorization header came with it": "missing authorization header",
    "its authorization header holds no bearer token": "invalid authorization header format",
    "its token is not valid": "invalid or expired token",
}


class Authentication:
    def __init__(self, world: World, target: Target, settings: Settings) -> None:
        self._world = world
        self._target = target
        self._settings = settings

    def call_agent_with(self, credentials: Credentials) -> None:
        """A call to the echo agent that opens no session, with these credentials only."""
        runtime = self._world.runtime(Role.ECHO_AGENT)
        header = self._header(credentials)
        headers = {} if header is None else {"Authorization": header}
        anyone = self._world.caller_presenting(None, "")
        self._world.calls(runtime, caller=anyone).invoke(
            "echo", json={"input": "hello"}, headers=headers
        )

    def _header(self, credentials: Credentials) -> str | None:
        """The Authorization header of these credentials; a token made here is masked in
        everything the suite prints from now on."""
        source = credentials.header
        if source is None:
            return None
        kind, _, name = source.partition(":")
        if kind == "setting":  # the scenario's tags ask for it: never missing on a run
            token = required(self._target.refused_tokens.get(name), f"the run was given no {name}")
        elif kind == "forged":
            token = self._forged(name)
        else:
            return source.format(random=secrets.token_urlsafe(16))
        register_secret(token)
        return f"Bearer {token}"

    def _forged(self, name: str) -> str:
        caller = required(self._target.api_token, "the run was given no api_token to forge from")
        if name == "unsigned":
            return forgeries.unsigned(caller)
        if name == "unpublished-key":
            return forgeries.signed_by_unpublished_key(caller)
        timeout = self._settings.request_timeout
        public_key = forgeries.published_public_key_pem(caller, lambda u: fetch_json(u, timeout))
        return forgeries.hmac_signed_with_public_key(caller, public_key)

    def expect_tokens_required(self) -> None:
        """Before anything about credentials is claimed: the target refuses a call that
        carries no token. A token the target never checks proves nothing."""
        self.call_agent_with(Credentials.NONE)
        answer = self._world.last_answer
        if answer.status_code != 401:
            raise AssertionError(
                "the target was given a token, but it does not require one: a call without "
                f"a token was answered {answer.status_code}, not 401, so nothing about "
                "credentials can be claimed for it"
            )

    def call_as_other_subject(self) -> None:
        self._echo_as(self._target.second_api_token, "AGENTCUBE_SECOND_API_TOKEN", "mine")

    def send_as_admin(self, text: str) -> None:
        """The subject with the admin role calls the echo agent in the session another
        subject opened. A token without the role the Router requires never gets here: the
        preflight stops the run naming its setting (acceptance/run/preflight.py)."""
        self._echo_as(self._target.admin_api_token, "AGENTCUBE_ADMIN_API_TOKEN", text)

    def _echo_as(self, token: str | None, token_variable: str, text: str) -> None:
        """An echo in the scenario's session by another caller, presenting this token."""
        session = self._world.session
        other = self._world.caller_presenting(token, token_variable)
        self._world.calls(session.runtime, session.session_id, caller=other).echo(text)

    def expect_refusal_repeats_no_credential(self) -> None:
        """Neither the token the call presented nor any other of the run's: a refusal that
        echoes its credential hands it to every log and proxy on the way."""
        answer, target = self._world.last_answer, self._target
        presented = answer.request.headers.get("Authorization", "").partition(" ")[2]
        credentials = {
            "the token presented": presented,
            **target.callers_tokens(),
            **target.refused_tokens,
        }
        assert_that(answer, carries_no_credential(credentials))

    def expect_owner_still_served(self) -> None:
        answer = self._world.in_session().echo("still mine")
        assert_that(answer, echoed_in(self._world.session, "still mine"))

    def expect_sandbox_got_no_caller_token(self) -> None:
        """The echo agent reports a fingerprint of every word of every header it received:
        none may be either subject's token, whatever header carried it."""
        reports = required(self._world.sandbox_reports() or None, "no call reached the echo agent")
        for report in reports:  # the call that opened the session included
            assert_that(report, not_given_credentials(self._target.callers_tokens()))


# What its answers are expected to be.


def refused_as_unauthorized(reason: str) -> Answer:
    """The Router's 401, which opens no session (pkg/router/auth.go:44-83)."""
    return Refusal(
        f"the Router to refuse the call with 401 because of {reason!r}, opening no session "
        "(code UNAUTHORIZED)",
        401,
        (reason,),
        code="UNAUTHORIZED",
        by_the_router=True,
    )


def refused_as_not_the_owner() -> Answer:
    """The Router's 403 for another subject's session (pkg/router/handlers.go:118-127)."""
    return Refusal(
        "the Router to refuse another subject's call in the session with 403 FORBIDDEN "
        "because the caller does not own it",
        403,
        ("you do not own this sandbox",),
        code="FORBIDDEN",
        by_the_router=True,
    )


def refused_as_missing_role() -> Answer:
    """The Router's 403 for a valid token without its required role, before any session is
    looked up or opened (pkg/router/auth.go:109-118)."""
    return Refusal(
        "the Router to refuse the call with 403 FORBIDDEN because the caller lacks the role "
        "it requires, opening no session",
        403,
        ("insufficient permissions", "missing role"),
        code="FORBIDDEN",
        by_the_router=True,
    )


def carries_no_credential(credentials: Mapping[str, str | None]) -> Matcher[requests.Response]:
    """An answer none of whose headers or body holds any of these credentials (by name:
    the values never reach a message; those None or empty are left out)."""
    given = {name: value for name, value in credentials.items() if value}

    def carried(response: requests.Response) -> list[str]:
        text = response.text + "".join(f"{k}: {v}\n" for k, v in response.headers.items())
        return [name for name, value in given.items() if value in text]

    return matchers.meets(
        f"an answer that repeats none of the credentials ({', '.join(given)})",
        lambda response: not carried(response),
        lambda response: (
            f"it carried {', '.join(carried(response))} (masked below): "
            f"{describe_response(response)}"
        ),
    )


def not_given_credentials(tokens: Mapping[str, str]) -> Matcher[Any]:
    """The echo agent's sandbox report: no word of any header it received is one of these
    tokens (by whose they are), which it reports as SHA-256 fingerprints."""
    fingerprints = [hashlib.sha256(token.encode()).hexdigest() for token in tokens.values()]
    any_of_words: Matcher[Sequence[str]] = has_item(is_in(fingerprints))
    return described_as(
        f"a sandbox that received none of the callers' tokens ({', '.join(tokens)})",
        has_entry("header_word_sha256s", is_not(any_of_words)),
    )
