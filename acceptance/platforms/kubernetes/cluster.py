"""One run's hold on a cluster: the API connection, the fixtures it created, the port forwards
it opened and the token it minted. Made once at the start of the run, closed at its end; the
per-scenario ``KubernetesPlatform`` works through it."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

from acceptance.core.settings import ConfigError
from acceptance.platforms.base import Closing
from acceptance.platforms.kubernetes.connection import connect
from acceptance.platforms.kubernetes.fixtures import Fixtures
from acceptance.platforms.kubernetes.observation import Observer
from acceptance.platforms.kubernetes.port_forward import (
    ServiceForward,
    in_cluster_service,
    local_url,
)
from acceptance.platforms.kubernetes.settings import KubernetesSettings, ServiceRef, named_by
from acceptance.platforms.kubernetes.tokens import client_credentials_token, service_account_token


class Cluster:
    def __init__(
        self,
        settings: KubernetesSettings,
        environ: Mapping[str, str],
        *,
        namespace: str,
        poll_interval: float,
    ) -> None:
        """Connect and check the cluster; ConfigError (ClusterUnreachable) when it cannot
        serve the suite."""
        self.api = api = connect(settings, environ)
        self.settings = settings
        self.namespace = namespace
        self.poll_interval = poll_interval
        self.observer = Observer(api, namespace)
        self.fixtures = Fixtures(self.observer, settings, poll_interval)
        self._forwards: list[ServiceForward] = []

    def __repr__(self) -> str:
        return f"Cluster({self.api.host}, namespace {self.namespace})"

    def endpoints(
        self, router_url: str | None, workload_manager_url: str | None
    ) -> tuple[str, str]:
        """The Router's and the WorkloadManager's base URLs: as given, or the local ends of
        port forwards opened now when port_forward is true."""
        settings = self.settings
        if not settings.port_forward:
            if not (router_url and workload_manager_url):
                raise ConfigError(
                    "setting platform=kubernetes needs router_url and workload_manager_url "
                    "(AGENTCUBE_ROUTER_URL, AGENTCUBE_WORKLOAD_MANAGER_URL), or -D "
                    f"port_forward=true to forward to {settings.router_service} and "
                    f"{settings.workload_manager_service} in {settings.system_namespace}"
                )
            return router_url, workload_manager_url
        if router_url or workload_manager_url:
            raise ConfigError(
                "setting port_forward=true opens its own port forwards: leave router_url "
                "and workload_manager_url unset, or set port_forward=false"
            )
        router, workload_manager = (
            self._forward(
                settings.system_namespace,
                getattr(settings, f"{name}_service"),
                f"{name}_url",
                (f"{name}_service", "system_namespace"),
            ).url
            for name in ("router", "workload_manager")
        )
        return router, workload_manager

    def token(self, api_token: str | None, *, timeout: float) -> str | None:
        """The bearer token of the run, from token_source; registered as a secret."""
        source = self.settings.token_source
        if source == "static":
            return api_token
        if api_token:
            raise ConfigError(
                f"setting api_token is set and token_source={source}: choose one of the two"
            )
        if source == "service-account":
            return service_account_token(
                self.api, self.settings.system_namespace, self.settings.service_account
            )
        return self._oidc_token(timeout)

    def _oidc_token(self, timeout: float) -> str:
        settings = self.settings
        assert settings.oidc_token_url and settings.oidc_client_id and settings.oidc_client_secret
        url, host = settings.oidc_token_url, None
        service = in_cluster_service(url)
        if service is not None and settings.port_forward:
            forward = self._forward(service[1], service[0], "oidc_token_url", ("oidc_token_url",))
            url, host = local_url(url, forward), urlsplit(settings.oidc_token_url).netloc
        return client_credentials_token(
            url, settings.oidc_client_id, settings.oidc_client_secret, host=host, timeout=timeout
        )

    def _forward(
        self, namespace: str, service: ServiceRef, setting: str, named: tuple[str, ...]
    ) -> ServiceForward:
        """A forward to the Service `named` settings name; `setting` is the URL a person
        would give instead."""
        forward = ServiceForward(self.api, namespace, service, named_by=named_by(*named))
        self._forwards.append(forward)
        forward.check(setting)
        return forward

    def close(self, *, keep: bool = False) -> Closing:
        """Close the forwards and the connection; delete what the run created unless `keep`
        (a CodeInterpreter's deletion would take its kept sessions along), else tell what is
        left and how to reopen the forwards that kept sessions' URLs go through. The problems
        met, the forwards' during the run among them."""
        kept = self.fixtures.leftovers() + [
            f"{forward.url} was {forward}, closed at the end of the run; reopen it with: "
            f"{forward.kubectl}"
            for forward in self._forwards
        ]
        problems = [] if keep else self.fixtures.delete_created()
        for forward in self._forwards:
            forward.close()
            problems += sorted(set(forward.problems))
        self._forwards.clear()
        self.api.close()
        return Closing(problems, kept if keep else [])
