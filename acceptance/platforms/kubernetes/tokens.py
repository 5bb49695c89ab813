"""Bearer tokens as AgentCube users obtain them: a service account's from the TokenRequest API
(upstream's e2e runs `kubectl create token e2e-test`), or an OIDC provider's by the
client-credentials grant (upstream's Keycloak addon); each a registered secret at once.
"""

from __future__ import annotations

import requests

from acceptance.core.evidence import excerpt, redact, register_secret
from acceptance.core.settings import ConfigError
from acceptance.platforms.kubernetes.api import KubeApi, KubeError

# Long enough for a slow run, short enough to be worthless soon after it.
TOKEN_LIFETIME_SECONDS = 2 * 3600


def service_account_token(api: KubeApi, namespace: str, service_account: str) -> str:
    """Raises ConfigError saying what to create or grant."""
    try:
        token = api.service_account_token(namespace, service_account, TOKEN_LIFETIME_SECONDS)
    except KubeError as error:
        hint = {
            404: f"create it (kubectl create serviceaccount {service_account} -n {namespace}) "
            "or set service_account / AGENTCUBE_SERVICE_ACCOUNT",
            403: "grant the kubeconfig user create on serviceaccounts/token, or use "
            "token_source=static with api_token",
        }.get(error.status, "check service_account / AGENTCUBE_SERVICE_ACCOUNT")
        raise ConfigError(f"setting token_source=service-account: {error}; {hint}") from None
    register_secret(token)
    return token


def client_credentials_token(
    token_url: str, client_id: str, client_secret: str, *, host: str | None, timeout: float
) -> str:
    """``host`` overrides the Host header, for an endpoint reached through a port forward:
    Keycloak names its tokens' issuer after it."""
    try:
        response = requests.post(
            token_url,
            data={
                "grant_type": "client_credentials",
                "client_id": client_id,
                "client_secret": client_secret,
            },
            headers={"Host": host} if host else {},
            timeout=timeout,
        )
    except requests.RequestException as error:
        raise ConfigError(
            redact(f"setting oidc_token_url: no answer from {token_url}: {type(error).__name__}")
        ) from None
    try:
        token = response.json().get("access_token") if response.status_code == 200 else None
    except (ValueError, AttributeError):  # no JSON object
        token = None
    if not (isinstance(token, str) and token):
        raise ConfigError(
            f"setting oidc_token_url: {response.status_code} from {token_url} without an "
            f"access_token: {excerpt(response.content, 200)}; check oidc_client_id and "
            "AGENTCUBE_OIDC_CLIENT_SECRET"
        )
    register_secret(token)
    return token
