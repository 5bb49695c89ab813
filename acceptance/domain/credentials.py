"""Credentials and authentication: the caller's token never reaches a sandbox, calls without
a valid token are refused, and a session belongs to the subject that opened it."""

from __future__ import annotations

import enum
import hashlib
import secrets

from hamcrest import all_of, assert_that

from acceptance.core import matchers
from acceptance.core.runtimes import Role
from acceptance.domain.world import World
from acceptance.platforms.base import Target


class Credentials(enum.Enum):
    """Credentials a call may present, as the features phrase them; None: the header the
    call sends (no header at all when it is None too)."""

    NONE = ("without a token", None)
    MALFORMED = ("with a malformed authorization header", "Token-not-a-bearer-credential")
    UNKNOWN = ("with a token the target does not know", "Bearer {random}")

    def __init__(self, phrase: str, header: str | None) -> None:
        self.phrase = phrase
        self.header = header


class Authentication:
    def __init__(self, world: World, target: Target) -> None:
        self._world = world
        self._target = target

    def call_agent_with(self, credentials: Credentials) -> None:
        """A call to the echo agent that opens no session, with these credentials only."""
        runtime = self._world.runtime(Role.ECHO_AGENT)
        headers = {}
        if credentials.header is not None:
            headers["Authorization"] = credentials.header.format(random=secrets.token_urlsafe(16))
        self._world.calls(runtime).invoke(
            "echo", json={"input": "hello"}, authenticated=False, headers=headers
        )

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
        """The second subject calls the echo agent in the first subject's session."""
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

    def expect_refused_as_unauthorized(self, reason: str) -> None:
        assert_that(self._world.last_answer, matchers.refused_as_unauthorized(reason))

    def expect_refused_as_not_the_owner(self) -> None:
        """The ownership refusal itself, by its words: the Router's 403 for a token without
        its required role says otherwise, and the preflight has stopped the run on such a
        token already."""
        assert_that(self._world.last_answer, matchers.refused_as_not_the_owner())

    def expect_owner_still_served(self) -> None:
        session = self._world.session
        answer = self._world.in_session(session).echo("still mine")
        assert_that(
            answer,
            all_of(matchers.echoes("still mine"), matchers.carries_session_id(session.session_id)),
        )

    def expect_sandbox_got_no_caller_token(self) -> None:
        """The echo agent reports a fingerprint of every word of every header it received:
        none may be either subject's token, whatever header carried it."""
        reports = self._world.sandbox_reports()
        if not reports:
            raise AssertionError("no call reached the echo agent")
        fingerprints = {
            whose: _fingerprint(token)
            for whose, token in (
                ("api_token", self._target.api_token),
                ("second_api_token", self._target.second_api_token),
                ("admin_api_token", self._target.admin_api_token),
            )
            if token
        }
        for report in reports:  # the call that opened the session included
            assert_that(report, matchers.not_given_credentials(fingerprints))


def _fingerprint(token: str) -> str:
    """What the echo agent reports for a header word that is this token."""
    return hashlib.sha256(token.encode()).hexdigest()
