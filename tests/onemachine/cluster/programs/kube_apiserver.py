"""kube-apiserver as the launcher runs it, served by the one stand-in API server
(tests/kubernetes/fake_api.py) over HTTPS on --bind-address:--secure-port with the
launcher's --tls-cert-file and --tls-private-key-file.

Who is who, as the real one authenticates and authorizes (--authorization-mode=RBAC):
each line of --token-auth-file is a user; one in group system:masters may do everything, and
so may system:kube-controller-manager (the real one's rights come from the bootstrap policy's
roles, which the stand-in does not hold); every other user, and a service account presenting
the token of its token Secret, may do what the stored RoleBindings and ClusterRoleBindings
grant it. A Service gets its clusterIP from --service-cluster-ip-range, and pods/log is read
from the node's kubelet API with --kubelet-client-certificate and --kubelet-client-key, its
serving certificate checked against --kubelet-certificate-authority. The other flags (etcd,
service-account keys, ...) are accepted and unused: nothing is stored beyond the process.
"""

from __future__ import annotations

import base64
import csv
import ipaddress
import ssl
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.kubernetes.fake_api import FakeKubernetes, Identity, KubeletClient
from tests.onemachine.cluster.programs.flags import parse, wait_for_sigterm

RBAC = "/apis/rbac.authorization.k8s.io/v1"
ALL_ALLOWED_GROUPS = {"system:masters"}
ALL_ALLOWED_USERS = {"system:kube-controller-manager"}
SERVICE_ACCOUNT_TOKEN = "kubernetes.io/service-account-token"


@dataclass(frozen=True)
class BoundIdentity(Identity):
    """A user whose rights are the RBAC objects stored in `fake` at each request."""

    groups: tuple[str, ...] = ()
    fake: FakeKubernetes | None = field(default=None, compare=False)

    def allows(self, verb: str, group: str, resource: str, namespace: str | None) -> bool:
        return any(
            Identity(self.user, tuple(rules), frozenset({namespace})).allows(
                verb, group, resource, namespace
            )
            for rules in self._granted(namespace)
        )

    def _granted(self, namespace: str | None) -> Iterator[list[dict[str, Any]]]:
        """The rules of each role bound to this identity, cluster-wide or in `namespace`."""
        assert self.fake is not None
        bindings = list(self._stored(f"{RBAC}/clusterrolebindings"))
        if namespace:
            bindings += self._stored(f"{RBAC}/namespaces/{namespace}/rolebindings")
        for binding in bindings:
            if not any(self._is(subject) for subject in binding.get("subjects") or []):
                continue
            reference = binding["roleRef"]
            if reference["kind"] == "ClusterRole":
                role = self.fake.get(f"{RBAC}/clusterroles", reference["name"])
            else:
                role = self.fake.get(f"{RBAC}/namespaces/{namespace}/roles", reference["name"])
            if role is not None:
                yield role.get("rules") or []

    def _stored(self, collection: str) -> list[dict[str, Any]]:
        assert self.fake is not None
        return list(self.fake.objects.get(collection, {}).values())

    def _is(self, subject: dict[str, Any]) -> bool:
        kind, name = subject.get("kind"), subject.get("name")
        if kind == "ServiceAccount":
            return self.user == f"system:serviceaccount:{subject.get('namespace')}:{name}"
        return (kind == "User" and name == self.user) or (kind == "Group" and name in self.groups)


@dataclass(frozen=True)
class Tokens(Mapping[str, Identity]):
    """Bearer token to identity: the static token file's users, then the service accounts'
    token Secrets as they are stored now."""

    fake: FakeKubernetes
    static: dict[str, Identity]

    def __getitem__(self, token: str) -> Identity:
        if token in self.static:
            return self.static[token]
        for collection, secrets in self.fake.objects.items():
            if not collection.endswith("/secrets"):
                continue
            for secret in secrets.values():
                if secret.get("type") == SERVICE_ACCOUNT_TOKEN and _token_of(secret) == token:
                    metadata = secret["metadata"]
                    namespace = metadata["namespace"]
                    account = metadata["annotations"]["kubernetes.io/service-account.name"]
                    return BoundIdentity(
                        f"system:serviceaccount:{namespace}:{account}",
                        groups=("system:serviceaccounts", f"system:serviceaccounts:{namespace}"),
                        fake=self.fake,
                    )
        raise KeyError(token)

    def __iter__(self) -> Iterator[str]:
        return iter(self.static)

    def __len__(self) -> int:
        return len(self.static)


def _token_of(secret: dict[str, Any]) -> str:
    encoded = (secret.get("data") or {}).get("token")
    return base64.b64decode(encoded).decode() if encoded else ""


def static_identities(token_file: Path, fake: FakeKubernetes) -> dict[str, Identity]:
    """`token,user,uid,"group,group"` lines, as --token-auth-file holds them."""
    identities: dict[str, Identity] = {}
    with token_file.open(encoding="utf-8", newline="") as file:
        for row in csv.reader(file):
            if not row:
                continue
            token, user = row[0], row[1]
            groups = tuple(filter(None, row[3].split(","))) if len(row) > 3 else ()
            if user in ALL_ALLOWED_USERS or ALL_ALLOWED_GROUPS & set(groups):
                identities[token] = Identity(user)
            else:
                identities[token] = BoundIdentity(user, groups=groups, fake=fake)
    return identities


def main() -> None:
    flags = parse()
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(flags["tls-cert-file"], flags["tls-private-key-file"])
    kubelet = KubeletClient(
        Path(flags["kubelet-client-certificate"]),
        Path(flags["kubelet-client-key"]),
        Path(flags["kubelet-certificate-authority"]),
    )
    fake = FakeKubernetes(  # a custom group is served once its CRD exists
        groups=set(),
        service_cidr=ipaddress.ip_network(flags["service-cluster-ip-range"]),
        kubelet_client=kubelet,  # pods/log from the node's kubelet API, as the real one
        kubelet_address_types=tuple(flags["kubelet-preferred-address-types"].split(",")),
    )
    fake.identities = Tokens(fake, static_identities(Path(flags["token-auth-file"]), fake))
    fake.start(flags["bind-address"], int(flags["secure-port"]), tls)
    print(f"stand-in kube-apiserver serving {fake.url}", flush=True)
    wait_for_sigterm()
    fake.stop()
