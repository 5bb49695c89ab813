"""HTTP transport: one requests.Session per scenario (its pool sized for threads), a
timeout on every call, the caller's bearer token, and every exchange recorded as evidence.
"""

from __future__ import annotations

from typing import Any

import requests
from requests.adapters import HTTPAdapter

from acceptance.core.evidence import Exchange, ExchangeLog, redact
from acceptance.core.polling import waiting

# Connections kept per host: enough for the scenarios that call from many threads at once.
POOL_SIZE = 64


class NoAnswer(AssertionError):
    """The target did not answer at all (refused, reset, timed out): a contract failure."""


def bearer(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


class Transport:
    def __init__(self, *, timeout: float, log: ExchangeLog) -> None:
        self._session = requests.Session()
        for scheme in ("http://", "https://"):
            self._session.mount(scheme, HTTPAdapter(pool_maxsize=POOL_SIZE))
        self.timeout = timeout
        self.log = log

    def request(
        self, method: str, url: str, *, token: str | None = None, **kwargs: Any
    ) -> requests.Response:
        """Send one request presenting `token` (None: none); raise NoAnswer when no answer
        comes back within the transport's timeout, or the call's `timeout`."""
        timeout = kwargs.pop("timeout", None) or self.timeout
        headers = {**bearer(token), **(kwargs.pop("headers", None) or {})}
        try:
            with waiting(f"the answer to {method} {redact(url)}", timeout):
                response = self._session.request(
                    method, url, headers=headers, timeout=timeout, **kwargs
                )
        except requests.RequestException as error:
            self.log.exchanges.append(
                Exchange(
                    method=method,
                    url=url,
                    request_headers=headers,
                    request_body=None,
                    error=f"{type(error).__name__}: {error}",
                )
            )
            raise NoAnswer(
                f"no answer to {method} {redact(url)} within {timeout:g} s: "
                f"{type(error).__name__}: {redact(str(error))}"
            ) from None
        self.log.exchanges.append(Exchange.of(response))
        return response

    def close(self) -> None:
        self._session.close()
