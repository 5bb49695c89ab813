"""The tokens a run needs, by the names of the suite's settings: the caller, a second
subject, an admin, a subject without the required role, and the bad tokens that only the
issuer's key can make (expired, for another audience, from another issuer). The forgeries
anyone can make without the key (unsigned, another key, HMAC with the public key) the
suite makes itself (acceptance/core/forgeries.py), so they exist for any issuer.
"""

from __future__ import annotations

import os
from pathlib import Path

from oidc_issuer.issuer import ADMIN_ROLE, Issuer, TokenPolicy

# Well past upstream's 30 s of clock-skew leeway (pkg/router/oidc.go:31, 137-139).
EXPIRED_FOR = 600.0
ANOTHER_AUDIENCE = "another-api"
ANOTHER_ISSUER_PATH = "/another-issuer"
SUBJECTS = {
    "api_token": "acceptance-suite",
    "second_api_token": "acceptance-suite-second",
    "admin_api_token": "acceptance-suite-admin",
    "no_role_api_token": "acceptance-suite-no-role",
}


def run_tokens(issuer: Issuer, policy: TokenPolicy, lifetime: float) -> dict[str, str]:
    """Every token of a run, by setting name; the good ones valid for `lifetime` seconds."""
    required = [policy.required_role]
    caller = SUBJECTS["api_token"]

    def good(subject: str, roles: list[str]) -> str:
        return issuer.mint(subject, roles, policy, lifetime=lifetime)

    return {
        "api_token": good(caller, required),
        "second_api_token": good(SUBJECTS["second_api_token"], required),
        "admin_api_token": good(SUBJECTS["admin_api_token"], [*required, ADMIN_ROLE]),
        "no_role_api_token": good(SUBJECTS["no_role_api_token"], []),
        "expired_api_token": issuer.mint(
            caller, required, policy, lifetime=60.0, issued_ago=EXPIRED_FOR + 60.0
        ),
        "other_audience_api_token": issuer.mint(
            caller, required, policy, lifetime=lifetime, audience=ANOTHER_AUDIENCE
        ),
        "other_issuer_api_token": issuer.mint(
            caller, required, policy, lifetime=lifetime, issuer=issuer.url + ANOTHER_ISSUER_PATH
        ),
    }


def write_tokens(tokens: dict[str, str], directory: Path) -> None:
    """Each token in a file of its own, readable by its owner only, in a directory only its
    owner may enter: what the suite's token_dir setting reads."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    directory.chmod(0o700)
    for name, token in tokens.items():
        path = directory / name
        path.unlink(missing_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as out:
            out.write(token + "\n")
