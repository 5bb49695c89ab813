"""Bearer-token authentication of `/v1/*` and session ownership, in upstream's words.

The Router's routes, as upstream's: OIDC access tokens of an issuer (localcube/oidc.py),
then the role `--jwt-required-role` names (pkg/router/server.go:166-171). Upstream's
WorkloadManager checks Kubernetes service-account tokens only when its auth is on; localcube
maps static tokens to callers (a subject and its roles) from a token file, an extension
upstream has no counterpart of: the WorkloadManager's routes with
`--pr-433-workload-manager-auth`, and, where no issuer is given, the Router's too (there
the required role is `sandbox:invoke`, the one upstream's chart and Keycloak addon document;
a token entry holds it unless it says `no-role`). Tokens are compared in constant time and
never logged. Each surface refuses in its own shape: the Router `{"error", "code"}`
(pkg/router/auth.go:36-122), the WorkloadManager `{"message"}`
(pkg/workloadmanager/auth.go:80-116).
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web
from aiohttp.typedefs import Middleware

from localcube.oidc import OIDCError, OIDCValidator
from localcube.picod.gocompat import gin_json

log = logging.getLogger("localcube.auth")

CALLER_KEY = "localcube.caller"  # the authenticated Caller, on the request
ADMIN = "admin"
REQUIRED_ROLE = "sandbox:invoke"
NO_ROLE = "no-role"  # a token file's word for a valid token without the required role
ENTRY_WORDS = frozenset({ADMIN, NO_ROLE})
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_WORKLOAD_MANAGER_PATHS = ("/v1/agent-runtime", "/v1/code-interpreter")


@dataclass(frozen=True)
class Caller:
    subject: str
    roles: frozenset[str] = frozenset()

    @property
    def is_admin(self) -> bool:
        return ADMIN in self.roles

    @property
    def may_invoke(self) -> bool:
        return REQUIRED_ROLE in self.roles


@dataclass(frozen=True)
class RouterOIDC:
    """The Router's OIDC checks: the validator and `--jwt-required-role`."""

    validator: OIDCValidator
    required_role: str


class TokenTable:
    """Callers by token; empty means authentication is off. `service_accounts_only`: the
    WorkloadManager admits only service-account subjects, as upstream PR #433 has it."""

    def __init__(
        self, entries: list[tuple[str, Caller]], *, service_accounts_only: bool = False
    ) -> None:
        self._entries = [(token.encode(), caller) for token, caller in entries]
        self.service_accounts_only = service_accounts_only

    @classmethod
    def parse(
        cls, specs: list[str], files: list[Path], *, service_accounts_only: bool = False
    ) -> TokenTable:
        """From `SUBJECT=TOKEN [admin | no-role]` strings and files of such lines (blank
        lines and `#` comments skipped); raise ValueError naming the entry's origin when one
        is bad, or when service accounts alone are admitted but no token is configured."""
        lines = [(spec, "--token") for spec in specs]
        for file in files:
            for number, line in enumerate(file.read_text().splitlines(), start=1):
                if line.strip() and not line.lstrip().startswith("#"):
                    lines.append((line, f"{file}:{number}"))
        if service_accounts_only and not lines:
            raise ValueError(
                "--pr-433-workload-manager-auth admits service-account tokens only: "
                "give them with --token-file or --token"
            )
        entries = [_entry(text, origin) for text, origin in lines]
        return cls(entries, service_accounts_only=service_accounts_only)

    def including(self, token: str, caller: Caller) -> TokenTable:
        """This table with one more caller."""
        table = TokenTable([], service_accounts_only=self.service_accounts_only)
        table._entries = [*self._entries, (token.encode(), caller)]
        return table

    @property
    def enabled(self) -> bool:
        return bool(self._entries)

    def caller_of(self, token: str) -> Caller | None:
        candidate = token.encode()
        found = None
        for known, caller in self._entries:
            if hmac.compare_digest(candidate, known):
                found = caller
        return found


def _entry(text: str, origin: str) -> tuple[str, Caller]:
    subject, separator, rest = text.strip().partition("=")
    words = rest.split()
    if not separator or not subject.strip() or not words:
        raise ValueError(f"{origin}: expected SUBJECT=TOKEN [admin | no-role]")
    token, given = words[0], frozenset(words[1:])
    unknown = given - ENTRY_WORDS
    if unknown:
        raise ValueError(
            f"{origin}: unknown role {sorted(unknown)[0]!r} "
            f"(known: {', '.join(sorted(ENTRY_WORDS))})"
        )
    if given == ENTRY_WORDS:
        raise ValueError(f"{origin}: a token with no-role cannot hold the admin role")
    roles = frozenset() if NO_ROLE in given else frozenset({REQUIRED_ROLE, *given})
    return token, Caller(subject.strip(), roles)


def caller(request: web.Request) -> Caller | None:
    """The authenticated caller, or None when authentication is off."""
    return request.get(CALLER_KEY)


def _router_refusal(message: str) -> web.Response:
    return gin_json(401, {"error": message, "code": "UNAUTHORIZED"})


def _missing_role_refusal(role: str) -> web.Response:
    """The Router's 403 to a valid token without the required role (pkg/router/auth.go:109-118)."""
    return gin_json(
        403, {"error": f"insufficient permissions: missing role {role}", "code": "FORBIDDEN"}
    )


def _workload_manager_refusal(message: str) -> web.Response:
    return gin_json(401, {"message": message})


def _is_service_account(caller: Caller) -> bool:
    """With WorkloadManager auth on (upstream PR #433's chart passes `--enable-auth`), the
    caller must be a service account, `system:serviceaccount:NAMESPACE:NAME`
    (pkg/workloadmanager/auth.go:120-131)."""
    parts = caller.subject.split(":")
    return len(parts) == 4 and parts[:2] == ["system", "serviceaccount"]


def _router_credential(header: str) -> str | web.Response:
    """The token of a Router caller's header, or the refusal (pkg/router/auth.go:44-72)."""
    if not header:
        return _router_refusal("missing authorization header")
    scheme, space, credential = header.partition(" ")
    if scheme.lower() != "bearer" or not space:
        return _router_refusal("invalid authorization header format")
    if not credential.strip():
        return _router_refusal("empty bearer token")
    return credential.strip()


def _workload_manager_credential(header: str) -> str | web.Response:
    """The token of a WorkloadManager caller's header, or the refusal
    (pkg/workloadmanager/auth.go:86-99)."""
    if not header:
        return _workload_manager_refusal("Missing authorization header")
    parts = header.split()
    if len(parts) != 2 or parts[0] != "Bearer":
        return _workload_manager_refusal("Invalid authorization header format")
    return parts[1]


def middleware(tokens: TokenTable, oidc: RouterOIDC | None = None) -> Middleware:
    """Require on the Router's routes a valid OIDC token with the required role when an
    issuer is given, else a known token when the table has any; on the WorkloadManager's a
    known token when the table has any. Nothing is required otherwise, as upstream's
    programs started without their auth flags."""

    @web.middleware
    async def authenticate(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not request.path.startswith("/v1/"):
            return await handler(request)
        header = request.headers.get("Authorization", "")
        if request.path.startswith(_WORKLOAD_MANAGER_PATHS):
            found = _workload_manager_caller(tokens, header)
        elif oidc is not None:
            found = _oidc_caller(oidc, header)
        else:
            found = _token_table_caller(tokens, header)
        if isinstance(found, web.Response):
            return found
        if found is not None:
            request[CALLER_KEY] = found
        return await handler(request)

    return authenticate


def _oidc_caller(oidc: RouterOIDC, header: str) -> Caller | web.Response:
    """pkg/router/auth.go:36-122: the header's token validated, then the required role."""
    credential = _router_credential(header)
    if isinstance(credential, web.Response):
        return credential
    try:
        claims = oidc.validator.validate(credential)
    except OIDCError as refused:
        log.debug("OIDC token validation failed: %s", refused)  # the reason, never the token
        return _router_refusal("invalid or expired token")
    if oidc.required_role not in claims.roles:
        return _missing_role_refusal(oidc.required_role)
    return Caller(claims.subject, claims.roles)


def _token_table_caller(tokens: TokenTable, header: str) -> Caller | web.Response | None:
    """The token file's caller at the Router, in the Router's words (the extension)."""
    if not tokens.enabled:
        return None
    credential = _router_credential(header)
    if isinstance(credential, web.Response):
        return credential
    known = tokens.caller_of(credential)
    if known is None:
        return _router_refusal("invalid or expired token")
    if not known.may_invoke:
        return _missing_role_refusal(REQUIRED_ROLE)
    return known


def _workload_manager_caller(tokens: TokenTable, header: str) -> Caller | web.Response | None:
    if not tokens.enabled:
        return None
    credential = _workload_manager_credential(header)
    if isinstance(credential, web.Response):
        return credential
    known = tokens.caller_of(credential)
    if known is None:
        return _workload_manager_refusal("Invalid or expired token")
    if tokens.service_accounts_only and not _is_service_account(known):
        return _workload_manager_refusal("Invalid service account format")
    return known


def owner_refusal(request: web.Request, owner: str | None) -> web.Response | None:
    """The Router's 403 when an authenticated caller uses a session that is not theirs; the
    admin role may use any (pkg/router/handlers.go:93-129)."""
    who = caller(request)
    if who is None or who.is_admin or who.subject == owner:
        return None
    message = "sandbox has no owner record" if owner is None else "you do not own this sandbox"
    return gin_json(403, {"error": message, "code": "FORBIDDEN"})
