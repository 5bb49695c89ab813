"""A stand-in for the Kubernetes API server, at the HTTP boundary.

The adapter under test talks to it through the official client exactly as it talks to a
cluster: kubeconfig, bearer token, REST paths, JSON bodies, and a websocket for port
forwards. It keeps objects in memory behind the real paths and answers as a real
kube-apiserver v1.36.2 does (tests/kubernetes/test_recorded_api.py replays recordings of one,
apiserver-recordings/, and test_recorded_node_api.py those of the node's calls,
node-recordings/): Status bodies with their reasons, messages and details,
RBAC for the identities it is given, uid preconditions, graceful pod deletion, pod logs and
port forwards through "kubelets", list metadata, discovery; and for a node agent
(tests/onemachine/node/): watches with resourceVersion and field selectors (410 Expired after
``compact``), pods/binding, the status subresource, updates with resourceVersion conflicts,
Nodes and Leases; Services and EndpointSlices stored as given (no ClusterIP is allocated,
no slice is made: a test writes both). It records every request so that
tests can check the exact calls, and answers with injected failures (403, 404, 409, ...)
where a test asks.

The stand-in plays the kubelet of one node, STAND_IN_NODE: pods bound to it have logs
(``logs``) and port forwards (``pod_backends``), and a graceful delete leaves them
Terminating until a test calls ``kubelet_finishes``. The logs of a pod on another node are
asked of that node's kubelet over TLS when the stand-in is given the API server's kubelet
client certificate (``kubelet_client``), as the API server does; without it, that kubelet is
only dialled and the API server's error answered. Controllers are not simulated unless a
test turns them on: ``recreate_deleted_pods`` (agent-sandbox recreating a Sandbox's pod under
the same name, with a new uid) and ``garbage_collection`` (the cascade of a delete to the
objects it owns). Otherwise a test changes the stored objects itself, directly or in a hook
run after a matching request.

This is the only stand-in in these tests; there are no mocks of the adapter's own code.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import ipaddress
import json
import re
import ssl
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import WSMsgType, web

TOKEN = "kube-api-token-9f8e7d"  # the credential the test kubeconfig presents
STAND_IN_NODE = "stand-in-node"  # the node whose kubelet the stand-in plays
_PATH = re.compile(
    r"^(?P<prefix>/api/v1|/apis/(?P<group>[^/]+)/(?P<version>[^/]+))"
    r"(?:/namespaces/(?P<namespace>[^/]+))?/(?P<plural>[^/]+)"
    r"(?:/(?P<name>[^/]+)(?:/(?P<sub>[^/]+))?)?$"
)
_BODY = web.RequestKey("body", object)
_IDENTITY = web.RequestKey("identity", object)
GROUPS = (
    "runtime.agentcube.volcano.sh/v1alpha1",
    "agents.x-k8s.io/v1alpha1",
    "extensions.agents.x-k8s.io/v1alpha1",
)
# Served whatever `groups` says: the core API and the built-in groups the adapter uses
# (and the bootstrap of the one-machine cluster: CRDs, RBAC; its node: EndpointSlices).
_BUILT_IN = {
    "",
    "apps",
    "coordination.k8s.io",
    "apiextensions.k8s.io",
    "rbac.authorization.k8s.io",
    "discovery.k8s.io",
}
# What the API server answers without credentials (system:public-info-viewer's paths).
_HEALTH_PATHS = ("/readyz", "/livez", "/healthz")
NOT_FOUND_PAGE = "404 page not found\n"  # what the server's mux answers for a path it lacks


@dataclass(frozen=True)
class _Kind:
    """One resource of an API group, as discovery describes it."""

    plural: str
    kind: str
    subresources: tuple[str, ...] = ("status",)
    short_names: tuple[str, ...] = ()
    namespaced: bool = True
    generation: bool = True  # whether its objects carry metadata.generation

    @property
    def singular(self) -> str:
        return self.kind.lower()


_RESOURCES: dict[str, tuple[_Kind, ...]] = {
    "": (
        _Kind("pods", "Pod", ("binding", "log", "portforward", "status")),
        _Kind("events", "Event", (), generation=False),
        _Kind("secrets", "Secret", (), generation=False),
        _Kind("configmaps", "ConfigMap", (), generation=False),
        _Kind("services", "Service", ("status",), generation=False),
        _Kind("serviceaccounts", "ServiceAccount", ("token",), generation=False),
        _Kind("nodes", "Node", ("status",), namespaced=False, generation=False),
        _Kind("namespaces", "Namespace", ("status",), namespaced=False, generation=False),
    ),
    "apps": (_Kind("deployments", "Deployment", ("scale", "status")),),
    "coordination.k8s.io": (_Kind("leases", "Lease", (), generation=False),),
    "apiextensions.k8s.io": (
        _Kind("customresourcedefinitions", "CustomResourceDefinition", namespaced=False),
    ),
    "rbac.authorization.k8s.io": (
        _Kind("clusterroles", "ClusterRole", (), namespaced=False, generation=False),
        _Kind("clusterrolebindings", "ClusterRoleBinding", (), namespaced=False, generation=False),
        _Kind("roles", "Role", (), generation=False),
        _Kind("rolebindings", "RoleBinding", (), generation=False),
    ),
    "discovery.k8s.io": (_Kind("endpointslices", "EndpointSlice", (), generation=False),),
    "runtime.agentcube.volcano.sh": (
        _Kind("agentruntimes", "AgentRuntime"),
        _Kind("codeinterpreters", "CodeInterpreter"),
    ),
    "agents.x-k8s.io": (_Kind("sandboxes", "Sandbox", ("status", "scale"), ("sandbox",)),),
    "extensions.agents.x-k8s.io": (
        _Kind("sandboxclaims", "SandboxClaim", short_names=("sandboxclaim",)),
        _Kind("sandboxtemplates", "SandboxTemplate", short_names=("sandboxtemplate",)),
        _Kind("sandboxwarmpools", "SandboxWarmPool", ("status", "scale"), ("swp",)),
    ),
}
_CUSTOM_GROUPS = {"runtime.agentcube.volcano.sh", "agents.x-k8s.io", "extensions.agents.x-k8s.io"}
_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    422: "Invalid",
    504: "Timeout",
}  # a 500 has none
# --kubelet-preferred-address-types' default order.
_ADDRESS_TYPES = ("Hostname", "InternalDNS", "InternalIP", "ExternalDNS", "ExternalIP")
_DEFAULT_GRACE_SECONDS = 30
_WATCH_POLL_SECONDS = 0.02  # how often an open watch looks for new events
_TYPE_KEYS = ("kind", "apiVersion")
_VERBS = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}

Hook = Callable[["FakeKubernetes", "Recorded"], None]
Rule = dict[str, Any]  # an RBAC PolicyRule as a ClusterRole's `rules` hold it


@dataclass(frozen=True)
class Identity:
    """Who a bearer token authenticates as, and what RBAC lets them do. ``rules`` None is
    system:masters (everything); otherwise the rules apply in ``namespaces`` alone, as a
    ClusterRole bound by RoleBindings there."""

    user: str
    rules: tuple[Rule, ...] | None = None
    namespaces: frozenset[str] = frozenset()

    def allows(self, verb: str, group: str, resource: str, namespace: str | None) -> bool:
        if self.rules is None:
            return True
        if namespace not in self.namespaces:
            return False
        return any(
            _covers(rule.get("apiGroups"), group)
            and _covers(rule.get("resources"), resource)
            and _covers(rule.get("verbs"), verb)
            for rule in self.rules
        )


ADMIN = Identity("admin")


def _covers(granted: list[str] | None, wanted: str) -> bool:
    return bool(granted) and ("*" in granted or wanted in granted)


@dataclass(frozen=True)
class Recorded:
    """One request as the server saw it."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any

    @property
    def line(self) -> str:
        """`METHOD /path?query` with the query sorted, for exact comparisons."""
        query = "&".join(f"{k}={v}" for k, v in sorted(self.query.items()))
        return f"{self.method} {self.path}" + (f"?{query}" if query else "")


@dataclass
class _Failure:
    method: str
    path: str
    status: int
    message: str
    times: int | None


@dataclass(frozen=True)
class _Event:
    """One write as a watch sees it: the object before and after (None: it did not exist)."""

    revision: int
    collection: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None


@dataclass(frozen=True)
class _Target:
    """What a request names: the resource, and the object and subresource when given."""

    group: str
    version: str
    kind: _Kind | None  # None: a plural the group does not have
    plural: str
    namespace: str | None
    name: str | None
    sub: str | None
    collection: str  # the path of the collection, the key of `objects`

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def covers(self, collection: str) -> bool:
        """Whether objects stored under this collection path are in what the request names:
        the collection itself, or any namespace's for a namespaced resource asked for
        across all namespaces (/api/v1/pods)."""
        if collection == self.collection:
            return True
        match = _PATH.match(collection)
        return bool(
            self.namespace is None
            and self.kind is not None
            and self.kind.namespaced
            and match
            and match["namespace"]
            and (match["group"] or "") == self.group
            and match["plural"] == self.plural
        )

    @property
    def qualified(self) -> str:
        """As errors name a resource: agentruntimes.runtime.agentcube.volcano.sh, pods."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def resource(self) -> str:
        """As RBAC names it: pods, pods/log, serviceaccounts/token."""
        return f"{self.plural}/{self.sub}" if self.sub else self.plural

    def details(self, **extra: str) -> dict[str, str]:
        """A Status's details: the object's name, its group (none for the core API) and the
        plural as `kind`, as the server's not-found and already-exists errors give them."""
        named = {"name": self.name} if self.name else {}
        group = {"group": self.group} if self.group else {}
        return {**named, **group, "kind": self.plural, **extra}


@dataclass(frozen=True)
class KubeletClient:
    """What kube-apiserver's --kubelet-client-certificate, --kubelet-client-key and
    --kubelet-certificate-authority name: the stand-in's identity towards kubelets, and the
    CA their serving certificates must chain to."""

    cert_file: Path
    key_file: Path
    ca_file: Path

    def context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.ca_file))
        context.load_cert_chain(self.cert_file, self.key_file)
        return context


@dataclass
class FakeKubernetes:
    groups: set[str] = field(default_factory=lambda: set(GROUPS))
    requests: list[Recorded] = field(default_factory=list)
    objects: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    logs: dict[tuple[str, str, str], str] = field(default_factory=dict)
    pod_backends: dict[tuple[str, str], int] = field(default_factory=dict)
    minted_tokens: list[str] = field(default_factory=list)
    # --service-cluster-ip-range: a Service created without a clusterIP gets the next one,
    # as the API server's allocator gives one (at random; in order here). None: none given.
    service_cidr: ipaddress.IPv4Network | None = None
    identities: dict[str, Identity] = field(default_factory=lambda: {TOKEN: ADMIN})
    # Controllers, modelled only when a test turns them on.
    recreate_deleted_pods: bool = False  # agent-sandbox: a Sandbox's pod comes back, new uid
    garbage_collection: bool = False  # kube-controller-manager: dependents follow their owner
    # The namespaces that exist, when a test names them: a create elsewhere is refused as
    # the NamespaceLifecycle admission plugin does. None: every namespace exists.
    namespaces: set[str] | None = None
    kubelet_client: KubeletClient | None = None  # to ask real kubelets for logs
    # --kubelet-preferred-address-types (the launcher gives InternalIP alone)
    kubelet_address_types: tuple[str, ...] = _ADDRESS_TYPES
    url: str = ""
    _failures: list[_Failure] = field(default_factory=list)
    _hooks: list[tuple[str, str, Hook]] = field(default_factory=list)
    _revision: int = 1
    _lock: threading.RLock = field(default_factory=threading.RLock)
    # What watches replay: every write since the last compaction, oldest first.
    _events: list[_Event] = field(default_factory=list)
    _compacted: int = 1  # the revision below which a watch is answered 410 Expired
    _watch_epoch: int = 0  # bumped to end every open watch (compact, stop)
    # Set by stop: a watch opened after it (a client's reconnect racing the stop) ends at
    # once too, or the runner's cleanup would wait for it.
    _stopping: bool = False

    # Setting the stage.

    def put(self, collection: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Store an object under its collection path, as if a controller had made it."""
        with self._lock:
            stored = copy.deepcopy(obj)
            metadata = stored.setdefault("metadata", {})
            metadata.setdefault("uid", str(uuid.uuid4()))
            metadata.setdefault("creationTimestamp", _now())
            match = _PATH.match(collection)
            target = _target(match) if match else None
            if target and target.namespace:
                metadata.setdefault("namespace", target.namespace)
            kind = target.kind if target else None
            if target and kind is not None:
                stored.setdefault("kind", kind.kind)
                stored.setdefault("apiVersion", target.api_version)
            if kind is None or kind.generation:
                metadata.setdefault("generation", 1)
            before = self.get(collection, metadata["name"])
            self.objects.setdefault(collection, {})[metadata["name"]] = stored
            self._written(collection, before, stored)
            return stored

    def get(self, collection: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            return self.objects.get(collection, {}).get(name)

    def remove(self, collection: str, name: str) -> None:
        """Take an object away, as if it had been deleted outside the test's view (no
        controller reacts)."""
        with self._lock:
            self.objects.get(collection, {}).pop(name, None)

    def kubelet_finishes(self, collection: str, name: str) -> None:
        """What the kubelet does once a Terminating pod's containers have stopped: the pod
        object goes. Only a pod deleted gracefully (still Terminating) can be finished."""
        with self._lock:
            stored = self.get(collection, name)
            if stored is None or "deletionTimestamp" not in stored["metadata"]:
                raise AssertionError(f"no Terminating pod {name} in {collection} to finish")
            self._gone(collection, stored)

    def compact(self) -> None:
        """What an API server restart after etcd's compaction does to watches: every open
        watch ends, and a watch from a resourceVersion older than now is answered 410 Expired,
        so the client must list again. A compaction alone does not: the watch cache still
        serves what it holds (node-recordings/watch.jsonl, watch-after-compaction)."""
        with self._lock:
            self._events.clear()
            self._compacted = self._revision
            self._watch_epoch += 1

    def fail(
        self, method: str, path: str, status: int, message: str = "", *, times: int | None = None
    ) -> None:
        """Answer requests of this method and exact path with an error Status."""
        self._failures.append(_Failure(method, path, status, message or f"fake {status}", times))

    def after(self, method: str, path: str, hook: Hook) -> None:
        """Run hook(fake, request) after each handled request of this method and path."""
        self._hooks.append((method, path, hook))

    def lines(self, method: str | None = None) -> list[str]:
        return [r.line for r in self.requests if method in (None, r.method)]

    # Serving.

    def start(
        self, host: str = "127.0.0.1", port: int = 0, tls: ssl.SSLContext | None = None
    ) -> None:
        """Serve on host:port (a free port by default), over HTTPS with `tls`."""
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()

        async def serve() -> None:
            app = web.Application(middlewares=[self._middleware])
            app.router.add_route("*", "/{tail:.*}", self._handle)
            self._runner = web.AppRunner(app)
            await self._runner.setup()
            site = web.TCPSite(self._runner, host, port, ssl_context=tls)
            await site.start()
            bound = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            self.url = f"{'https' if tls else 'http'}://{host}:{bound}"
            ready.set()

        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        asyncio.run_coroutine_threadsafe(serve(), self._loop)
        if not ready.wait(10):
            raise RuntimeError("the fake Kubernetes API did not start")

    def stop(self) -> None:
        with self._lock:
            self._watch_epoch += 1  # open watches end, or the runner's cleanup waits for them
            self._stopping = True
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode()
        recorded = Recorded(
            request.method, request.path, dict(request.query), dict(request.headers), body
        )
        with self._lock:
            self.requests.append(recorded)
        request[_BODY] = body
        if "Authorization" not in request.headers and request.path in _HEALTH_PATHS:
            return web.Response(text="ok")  # anonymous, as --anonymous-auth's default allows
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        identity = self.identities.get(token)
        if identity is None:
            return _status(401, "Unauthorized")
        request[_IDENTITY] = identity
        failure = self._take_failure(request.method, request.path)
        if failure is not None:
            return _status(failure.status, failure.message)
        response = await handler(request)
        for method, path, hook in list(self._hooks):
            if method == request.method and path == request.path:
                hook(self, recorded)
        return response

    def _take_failure(self, method: str, path: str) -> _Failure | None:
        with self._lock:
            for failure in self._failures:
                if failure.method == method and failure.path == path:
                    if failure.times is not None:
                        failure.times -= 1
                        if failure.times == 0:
                            self._failures.remove(failure)
                    return failure
        return None

    def _served(self, group: str, version: str) -> bool:
        return group in _BUILT_IN or f"{group}/{version}" in self.groups

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        if path.startswith("/apis/") and path.count("/") == 3:
            return self._discovery(*path.removeprefix("/apis/").split("/"))
        match = _PATH.match(path)
        if match is None or not self._served(match["group"] or "", match["version"] or "v1"):
            return web.Response(status=404, text=NOT_FOUND_PAGE)
        target = _target(match)
        identity: Identity = request[_IDENTITY]
        verb = _verb(request.method, target)
        if not identity.allows(verb, target.group, target.resource, target.namespace):
            return _forbidden(identity, verb, target)
        if target.kind is None or (target.sub and target.sub not in target.kind.subresources):
            return _status(404, "the server could not find the requested resource")
        if target.sub == "portforward":
            if not identity.allows("create", "", "pods/portforward", target.namespace):
                # The 1.35+ check of a websocket upgrade (AuthorizePodWebsocketUpgradeCreate
                # Permission) says nothing after the colon.
                return _status(
                    403, f'pods "{target.name}" is forbidden: ', details=target.details()
                )
            return await self._portforward(request, target)
        if target.sub == "log":
            return await self._log(request, target)
        if request.method == "GET" and request.query.get("watch", "").lower() in ("true", "1"):
            return await self._watch(request, target)
        with self._lock:
            return self._rest(request, target, request[_BODY])

    def _rest(self, request: web.Request, target: _Target, body: Any) -> web.Response:
        method, name = request.method, target.name
        if target.sub == "token" and method == "POST":
            return self._token(target, body)
        if target.sub == "binding" and method == "POST":
            return self._bind(target, body)
        if name is None and method == "GET":
            return self._list(target, request.query)
        if name is None and method == "POST":
            if self.namespaces is not None and target.namespace not in self.namespaces:
                return _status(
                    404,
                    f'namespaces "{target.namespace}" not found',
                    details={"name": target.namespace or "", "kind": "namespaces"},
                )
            if self.get(target.collection, body["metadata"]["name"]) is not None:
                name = body["metadata"]["name"]
                return _status(
                    409,
                    f'{target.qualified} "{name}" already exists',
                    reason="AlreadyExists",
                    details={**target.details(), "name": name},
                )
            for generated in ("uid", "resourceVersion", "creationTimestamp", "generation"):
                body["metadata"].pop(generated, None)
            if request.query.get("dryRun") == "All":  # checked as a create is, not stored
                return _json(body, 201)
            if target.plural == "customresourcedefinitions":
                self._establish(body)
            if target.plural == "services":
                self._allocate_cluster_ip(body)
            return _json(self.put(target.collection, body), 201)
        stored = self.get(target.collection, name or "")
        if stored is None:
            return _not_found(target)
        if method == "GET":
            return _json(stored)
        if method == "DELETE":
            # DeleteOptions from a body that is not empty, else from the query: a query's
            # gracePeriodSeconds=0 beside a body is ignored (apiserver
            # pkg/endpoints/handlers/delete.go:95-121; node-recordings/delete-options.jsonl).
            options = body or {
                key: int(request.query[key])
                for key in ("gracePeriodSeconds",)
                if key in request.query
            }
            return self._delete(target, stored, options)
        before = copy.deepcopy(stored)
        if method == "PATCH" and target.sub == "status":
            # The status subresource takes the status alone (a JSON merge patch: null
            # removes a key, a list is replaced whole).
            _merge(stored.setdefault("status", {}), (body or {}).get("status") or {})
        elif method == "PATCH":
            _merge(stored, body)
            if "spec" in body:
                stored["metadata"]["generation"] = stored["metadata"].get("generation", 1) + 1
        elif method == "PUT":
            return self._update(target, stored, body)
        else:
            return _status(405, f"{method} not supported by the fake")
        self._written(target.collection, before, stored)
        return _json(stored)

    def _establish(self, crd: dict[str, Any]) -> None:
        """What the API server's own CRD controllers do at once: the names accepted, the
        CRD Established, and its group's served versions served."""
        spec = crd.get("spec") or {}
        crd["status"] = {
            "acceptedNames": spec.get("names") or {},
            "storedVersions": [v["name"] for v in spec.get("versions") or [] if v.get("storage")],
            "conditions": [
                {"type": kind, "status": "True", "reason": reason, "lastTransitionTime": _now()}
                for kind, reason in (
                    ("NamesAccepted", "NoConflicts"),
                    ("Established", "InitialNamesAccepted"),
                )
            ],
        }
        for version in spec.get("versions") or []:
            if version.get("served"):
                self.groups.add(f"{spec['group']}/{version['name']}")

    def _update(self, target: _Target, stored: dict[str, Any], body: dict) -> web.Response:
        """PUT: the whole object replaced, if the resourceVersion it carries is the stored
        one (optimistic concurrency); identity fields and a status kept by its subresource
        stay as stored."""
        metadata = stored["metadata"]
        sent = (body.get("metadata") or {}).get("resourceVersion")
        if sent and sent != metadata["resourceVersion"]:
            return _status(
                409,
                f'Operation cannot be fulfilled on {target.qualified} "{target.name}": the object '
                "has been modified; please apply your changes to the latest version and try again",
                details=target.details(),
            )
        before = copy.deepcopy(stored)
        replaced = copy.deepcopy(body)
        replaced["metadata"] = {
            **replaced.get("metadata", {}),
            **{key: metadata[key] for key in ("uid", "creationTimestamp") if key in metadata},
        }
        kind = target.kind
        if kind is not None and "status" in kind.subresources and "status" in stored:
            replaced["status"] = stored["status"]
        if kind is not None and kind.generation:
            changed = replaced.get("spec") != stored.get("spec")
            replaced["metadata"]["generation"] = metadata.get("generation", 1) + int(changed)
        stored.clear()
        stored.update(replaced)
        self._written(target.collection, before, stored)
        return _json(stored)

    def _allocate_cluster_ip(self, service: dict[str, Any]) -> None:
        spec = service.setdefault("spec", {})
        spec.setdefault("type", "ClusterIP")
        if self.service_cidr is None or spec.get("clusterIP") or spec["type"] != "ClusterIP":
            return
        taken = {s.get("spec", {}).get("clusterIP") for s in self._stored_services()}
        free = next(str(a) for a in self.service_cidr.hosts() if str(a) not in taken)
        spec["clusterIP"], spec["clusterIPs"] = free, [free]

    def _stored_services(self) -> list[dict[str, Any]]:
        return [
            obj
            for collection, stored in self.objects.items()
            if collection.endswith("/services")
            for obj in stored.values()
        ]

    def _bind(self, target: _Target, body: dict[str, Any]) -> web.Response:
        """pods/binding, as the scheduler binds: the pod gets its node and a PodScheduled
        condition, unless it has a node already or is being deleted (409 Conflict on
        pods/binding; kubernetes pkg/registry/core/pod/storage/storage.go, BindingREST)."""
        if (body.get("metadata") or {}).get("name") != target.name:
            return _status(400, "name in URL does not match name in Binding object")
        stored = self.get(target.collection, target.name or "")
        if stored is None:
            return _not_found(target)
        spec = stored.setdefault("spec", {})
        if "deletionTimestamp" in stored["metadata"]:
            why = f"pod {target.name} is being deleted, cannot be assigned to a host"
        elif spec.get("nodeName"):
            why = f'pod {target.name} is already assigned to node "{spec["nodeName"]}"'
        else:
            before = copy.deepcopy(stored)
            spec["nodeName"] = body["target"]["name"]
            conditions = stored.setdefault("status", {}).setdefault("conditions", [])
            conditions[:] = [c for c in conditions if c.get("type") != "PodScheduled"]
            conditions.append(
                {
                    "type": "PodScheduled",
                    "status": "True",
                    "lastProbeTime": None,
                    "lastTransitionTime": _now(),
                }
            )
            self._written(target.collection, before, stored)
            return _json(
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Success",
                    "code": 201,
                },
                201,
            )
        return _status(
            409,
            f'Operation cannot be fulfilled on pods/binding "{target.name}": {why}',
            details={"name": target.name or "", "kind": "pods/binding"},
        )

    def _list(self, target: _Target, query: Any) -> web.Response:
        version, match = query.get("resourceVersion"), query.get("resourceVersionMatch")
        if match and not version:
            reason = "resourceVersionMatch is forbidden unless resourceVersion is provided"
            return _status(
                422,
                f'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: {reason}',
                details={
                    "group": "meta.k8s.io",
                    "kind": "ListOptions",
                    "causes": [
                        {
                            "reason": "FieldValueForbidden",
                            "message": f"Forbidden: {reason}",
                            "field": "resourceVersionMatch",
                        }
                    ],
                },
            )
        if match == "NotOlderThan" and int(version) > self._revision:
            return _status(
                504,
                f"Timeout: Too large resource version: {version}, current: {self._revision}",
                details={
                    "causes": [
                        {
                            "reason": "ResourceVersionTooLarge",
                            "message": "Too large resource version",
                        }
                    ],
                    "retryAfterSeconds": 1,
                },
            )
        built_in = target.group in _BUILT_IN  # typed lists: items without kind and apiVersion
        label_selector = query.get("labelSelector", "")
        field_selector = query.get("fieldSelector", "")
        items = [
            {key: value for key, value in obj.items() if not built_in or key not in _TYPE_KEYS}
            for obj in self._stored_in(target)
            if _selected(obj, label_selector, _labels) and _selected(obj, field_selector, _field)
        ]
        metadata: dict[str, Any] = {"resourceVersion": str(self._revision)}
        if target.group in _CUSTOM_GROUPS:
            metadata["continue"] = ""
        start = _decode_continue(query.get("continue", ""))
        items = [obj for obj in items if obj["metadata"]["name"] > start]
        if "limit" in query and len(items) > int(query["limit"]):
            items, rest = items[: int(query["limit"])], items[int(query["limit"]) :]
            metadata["continue"] = _encode_continue(items[-1]["metadata"]["name"])
            if not label_selector and not field_selector:
                metadata["remainingItemCount"] = len(rest)
        return _json(
            {
                "kind": f"{target.kind.kind}List",  # type: ignore[union-attr]
                "apiVersion": target.api_version,
                "metadata": metadata,
                "items": items,
            }
        )

    def _stored_in(self, target: _Target) -> list[dict[str, Any]]:
        """The objects a collection path names, in etcd's key order (namespace, then name);
        a namespaced resource without a namespace is every namespace's."""
        return [
            obj
            for collection in sorted(self.objects)
            if target.covers(collection)
            for _, obj in sorted(self.objects[collection].items())
        ]

    async def _watch(self, request: web.Request, target: _Target) -> web.StreamResponse:
        """A watch, as the API server's watch cache serves one: from resourceVersion (none or
        "0": the current objects first, as ADDED), each later write that matches the
        selectors, an object leaving them as DELETED; a resourceVersion older than the last
        compaction is an ERROR event 410 Expired. It ends after timeoutSeconds, or when the
        stand-in compacts or stops."""
        query = request.query
        selectors = query.get("labelSelector", ""), query.get("fieldSelector", "")

        def matches(obj: dict[str, Any] | None) -> bool:
            return (
                obj is not None
                and _selected(obj, selectors[0], _labels)
                and _selected(obj, selectors[1], _field)
            )

        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        with self._lock:
            epoch, version = self._watch_epoch, query.get("resourceVersion", "")
            cursor = int(version) if version not in ("", "0") else self._revision
            if cursor < self._compacted:
                lines = [_watch_line("ERROR", _expired(cursor, self._compacted))]
                cursor = -1
            elif version in ("", "0"):
                lines = [_watch_line("ADDED", o) for o in self._stored_in(target) if matches(o)]
            else:
                lines = []
        deadline = asyncio.get_running_loop().time() + float(query.get("timeoutSeconds", 1800))
        while True:
            try:
                for line in lines:
                    await response.write(line)
            except ConnectionResetError:  # the client closed the watch
                return response
            if cursor < 0 or asyncio.get_running_loop().time() >= deadline:
                break
            await asyncio.sleep(_WATCH_POLL_SECONDS)
            with self._lock:
                if self._watch_epoch != epoch or self._stopping:
                    break
                events = [e for e in self._events if e.revision > cursor]
                cursor = self._revision
            lines = []
            for event in events:
                if not target.covers(event.collection):
                    continue
                was, now = matches(event.before), matches(event.after)
                if now:
                    lines.append(_watch_line("MODIFIED" if was else "ADDED", event.after))
                elif was:
                    gone = copy.deepcopy(event.before)
                    gone["metadata"]["resourceVersion"] = str(event.revision)  # type: ignore[index]
                    lines.append(_watch_line("DELETED", gone))  # type: ignore[arg-type]
        with contextlib.suppress(ConnectionResetError):
            await response.write_eof()
        return response

    def _delete(self, target: _Target, stored: dict[str, Any], options: dict) -> web.Response:
        metadata = stored["metadata"]
        wanted = (options.get("preconditions") or {}).get("uid")
        if wanted and wanted != metadata["uid"]:
            kind = target.kind.kind  # type: ignore[union-attr]
            subject = f"{kind}.{target.group}" if target.group else kind
            return _status(
                409,
                f'Operation cannot be fulfilled on {subject} "{target.name}": the UID in the '
                f"precondition ({wanted}) does not match the UID in record ({metadata['uid']}). "
                "The object might have been deleted and then recreated",
                details=target.details(kind=kind),
            )
        if target.plural == "pods":
            return _json(self._delete_pod(target.collection, stored, options))
        self._gone(target.collection, stored)
        return _json(
            {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Success",
                "details": target.details(uid=metadata["uid"]),
            }
        )

    def _delete_pod(self, collection: str, stored: dict[str, Any], options: dict) -> dict:
        """A pod is marked for deletion with its grace period and answered as it is then; a
        pod on no node, or with grace 0 (a force delete), goes at once, the others when
        their kubelet has stopped them (kubelet_finishes)."""
        before = copy.deepcopy(stored)
        metadata, spec = stored["metadata"], stored.get("spec") or {}
        grace = options.get("gracePeriodSeconds")
        if grace is None:
            grace = spec.get("terminationGracePeriodSeconds", _DEFAULT_GRACE_SECONDS)
        if not spec.get("nodeName"):
            grace = 0
        if "deletionTimestamp" not in metadata:
            metadata["deletionTimestamp"] = _now()
            metadata["generation"] = metadata.get("generation", 1) + 1
        metadata["deletionGracePeriodSeconds"] = min(
            grace, metadata.get("deletionGracePeriodSeconds", grace)
        )
        self._written(collection, before, stored)
        answer = copy.deepcopy(stored)
        if metadata["deletionGracePeriodSeconds"] == 0:
            self._gone(collection, stored)
        return answer

    def _gone(self, collection: str, stored: dict[str, Any]) -> None:
        """The object leaves the store; the controllers a test turned on react."""
        self.objects.get(collection, {}).pop(stored["metadata"]["name"], None)
        self._revision += 1
        self._events.append(_Event(self._revision, collection, copy.deepcopy(stored), None))
        if self.garbage_collection:
            for dependent_collection, dependent in self._dependents(stored["metadata"]["uid"]):
                if _PATH.match(dependent_collection)["plural"] == "pods":  # type: ignore[index]
                    self._delete_pod(dependent_collection, dependent, {})
                else:
                    self._gone(dependent_collection, dependent)
        if self.recreate_deleted_pods and collection.endswith("/pods"):
            self._recreate(collection, stored)

    def _dependents(self, uid: str) -> Iterator[tuple[str, dict[str, Any]]]:
        for collection, stored in list(self.objects.items()):
            for obj in list(stored.values()):
                if any(
                    ref.get("uid") == uid for ref in obj["metadata"].get("ownerReferences") or []
                ):
                    yield collection, obj

    def _recreate(self, collection: str, pod: dict[str, Any]) -> None:
        """agent-sandbox's controller: a Sandbox that still exists gets its pod back, under
        the same name, as a new object (new uid, not yet scheduled)."""
        owners = {
            ref.get("uid")
            for ref in pod["metadata"].get("ownerReferences") or []
            if ref.get("kind") == "Sandbox"
        }
        sandboxes = [
            obj
            for path, stored in self.objects.items()
            if path.endswith("/sandboxes")
            for obj in stored.values()
        ]
        if not any(sandbox["metadata"]["uid"] in owners for sandbox in sandboxes):
            return
        recreated = copy.deepcopy(pod)
        recreated["metadata"] = {
            key: value
            for key, value in pod["metadata"].items()
            if key in ("name", "namespace", "labels", "annotations", "ownerReferences")
        }
        recreated.setdefault("spec", {}).pop("nodeName", None)  # not scheduled yet
        recreated["status"] = {"phase": "Pending"}
        self.put(collection, recreated)

    def _written(
        self, collection: str, before: dict[str, Any] | None, stored: dict[str, Any]
    ) -> None:
        """A write: the object gets the next resourceVersion, and watches an event."""
        self._revision += 1
        stored["metadata"]["resourceVersion"] = str(self._revision)
        self._events.append(
            _Event(self._revision, collection, copy.deepcopy(before), copy.deepcopy(stored))
        )

    def _token(self, target: _Target, body: dict[str, Any]) -> web.Response:
        account = self.get(target.collection, target.name or "")
        if account is None:
            return _not_found(target)
        token = f"minted-token-{len(self.minted_tokens) + 1}"
        self.minted_tokens.append(token)
        metadata = {
            "name": target.name,
            "namespace": target.namespace,
            "uid": str(uuid.uuid4()),
            "creationTimestamp": _now(),
        }
        return _json(
            {
                "kind": "TokenRequest",
                "apiVersion": "authentication.k8s.io/v1",
                "metadata": metadata,
                "spec": body.get("spec") or {},
                "status": {"token": token, "expirationTimestamp": _now()},
            },
            201,
        )

    def _discovery(self, group: str, version: str) -> web.Response:
        if f"{group}/{version}" not in self.groups:
            return web.Response(status=404, text=NOT_FOUND_PAGE)
        return _json(
            {
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": f"{group}/{version}",
                "resources": [
                    resource for kind in _RESOURCES.get(group, ()) for resource in _discovered(kind)
                ],
            }
        )

    # The kubelet's part: logs and port forwards.

    def _pod_or_404(self, target: _Target) -> dict[str, Any] | web.Response:
        with self._lock:
            pod = self.get(target.collection, target.name or "")
            return _not_found(target) if pod is None else copy.deepcopy(pod)

    async def _log(self, request: web.Request, target: _Target) -> web.StreamResponse:
        """pods/log: checked against the pod's containers, then asked of its node's kubelet;
        a pod on no node has no log yet and answers 204 without a body."""
        pod = self._pod_or_404(target)
        if isinstance(pod, web.Response):
            return pod
        spec = pod.get("spec") or {}
        containers = [
            container["name"]
            for key in ("initContainers", "containers", "ephemeralContainers")
            for container in spec.get(key) or []
        ]
        container = request.query.get("container") or (containers[0] if containers else "")
        if container not in containers:
            return _status(400, f"container {container} is not valid for pod {target.name}")
        node = spec.get("nodeName")
        if not node:
            return web.Response(status=204)
        if node != STAND_IN_NODE:
            query = "&".join(f"{k}={v}" for k, v in request.query.items() if k != "container")
            where = f"/containerLogs/{target.namespace}/{target.name}/{container}?{query}"
            if self.kubelet_client is not None:
                return await self._kubelet_log(request, node, where)
            return await self._other_kubelet(
                node, lambda address: f'Get "https://{address}{where}"'
            )
        key = (target.namespace or "", target.name or "", container)
        with self._lock:
            lines = self.logs.get(key, "").splitlines()
        if "tailLines" in request.query:
            lines = lines[len(lines) - min(len(lines), int(request.query["tailLines"])) :]
        return web.Response(text="".join(f"{line}\n" for line in lines))

    def _kubelet_address(self, node_name: str) -> tuple[str, int] | web.Response:
        """Where the API server finds a node's kubelet (its preferred address and
        daemonEndpoints' port), or the error it answers."""
        with self._lock:
            node = copy.deepcopy(self.get("/api/v1/nodes", node_name))
        if node is None:
            return _status(
                404, f'nodes "{node_name}" not found', details={"name": node_name, "kind": "nodes"}
            )
        status = node.get("status") or {}
        addresses = status.get("addresses") or []
        preferred = [
            a["address"]
            for t in self.kubelet_address_types
            for a in addresses
            if a.get("type") == t
        ]
        if not preferred:
            return _status(500, f"no preferred addresses found; known addresses: {addresses}")
        port = ((status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}).get("Port")
        return preferred[0], port or 10250

    async def _kubelet_log(
        self, request: web.Request, node_name: str, where: str
    ) -> web.StreamResponse:
        """pods/log asked of a real kubelet over TLS with the client certificate, its body
        streamed back as it comes (follow); a kubelet's error answered as the API server's
        response checker words it (kubernetes staging/src/k8s.io/apiserver/pkg/registry/
        generic/rest/response_checker.go: 400 a BadRequest with the kubelet's text, 500 an
        InternalError; any other code, that code with the text: the API server's own words
        for those, errors.NewGenericServerResponse, are not modelled)."""
        found = self._kubelet_address(node_name)
        if isinstance(found, web.Response):
            return found
        host, port = found
        assert self.kubelet_client is not None
        url = f"https://{host}:{port}{where}"
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=2)
        try:
            async with (
                aiohttp.ClientSession(timeout=timeout) as session,
                session.get(url, ssl=self.kubelet_client.context()) as answer,
            ):
                if answer.status != 200:
                    text = await answer.text()
                    if answer.status == 500:
                        return _status(500, f"Internal error occurred: {text}")
                    return _status(answer.status, text)
                response = web.StreamResponse(headers={"Content-Type": "text/plain"})
                await response.prepare(request)
                async for chunk in answer.content.iter_any():
                    await response.write(chunk)
                await response.write_eof()
                return response
        except aiohttp.ClientConnectorError as error:
            refused = isinstance(error.os_error, ConnectionRefusedError)
            cause = "connection refused" if refused else error.os_error
            return _status(500, f'Get "{url}": dial tcp {host}:{port}: connect: {cause}')
        except (aiohttp.ClientError, OSError, TimeoutError) as error:
            return _status(500, f'Get "{url}": {error}')

    async def _other_kubelet(self, node_name: str, asked: Callable[[str], str]) -> web.Response:
        """A node the stand-in does not play: its address is dialled as the API server would,
        and the answer is the error it would report (nothing there speaks kubelet). `asked`
        words the request to the kubelet at an address, as the error begins."""
        found = self._kubelet_address(node_name)
        if isinstance(found, web.Response):
            return found
        host, port = found
        address = f"{host}:{port}"
        try:
            _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 2)
        except (OSError, TimeoutError) as error:
            cause = "connection refused" if isinstance(error, ConnectionRefusedError) else error
            return _status(500, f"{asked(address)}: dial tcp {address}: connect: {cause}")
        writer.close()
        return _status(500, f"{asked(address)}: the stand-in does not speak to real kubelets")

    async def _portforward(self, request: web.Request, target: _Target) -> web.StreamResponse:
        """pods/portforward, v4.channel.k8s.io: data on channel 0, errors on channel 1, each
        opened by a frame carrying the port number."""
        pod = self._pod_or_404(target)
        if isinstance(pod, web.Response):
            return pod
        node = (pod.get("spec") or {}).get("nodeName")
        if not node:
            return _status(400, f"pod {target.name} does not have a host assigned")
        if node != STAND_IN_NODE:
            return await self._other_kubelet(node, lambda address: "error dialing backend")
        socket = web.WebSocketResponse(protocols=("v4.channel.k8s.io",))
        await socket.prepare(request)
        port = int(request.query["ports"]).to_bytes(2, "little")
        await socket.send_bytes(b"\x00" + port)
        await socket.send_bytes(b"\x01" + port)
        backend = self.pod_backends.get((target.namespace or "", target.name or ""))
        if backend is None:
            await socket.send_bytes(
                b"\x01" + f"pod {target.name} has no backend in the stand-in".encode()
            )
            await socket.close()
            return socket
        reader, writer = await asyncio.open_connection("127.0.0.1", backend)

        async def to_pod() -> None:
            async for message in socket:
                if message.type == WSMsgType.BINARY and message.data[:1] == b"\x00":
                    writer.write(message.data[1:])
                    await writer.drain()
            writer.close()

        async def to_client() -> None:
            while chunk := await reader.read(65536):
                await socket.send_bytes(b"\x00" + chunk)
            await socket.close()

        tasks = [asyncio.ensure_future(to_pod()), asyncio.ensure_future(to_client())]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            task.cancel()
        writer.close()
        await socket.close()
        return socket


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _kind_of(group: str, plural: str) -> _Kind | None:
    return next((kind for kind in _RESOURCES.get(group, ()) if kind.plural == plural), None)


def _target(match: re.Match[str]) -> _Target:
    group, plural, name = match["group"] or "", match["plural"], match["name"]
    path = match.string
    return _Target(
        group=group,
        version=match["version"] or "v1",
        kind=_kind_of(group, plural),
        plural=plural,
        namespace=match["namespace"],
        name=name,
        sub=match["sub"],
        collection=path.rsplit(f"/{name}", 1)[0] if name else path,
    )


def _verb(method: str, target: _Target) -> str:
    if target.name is None:
        return {"GET": "list", "DELETE": "deletecollection"}.get(method, _VERBS.get(method, ""))
    return _VERBS.get(method, method.lower())


def _discovered(kind: _Kind) -> Iterator[dict[str, Any]]:
    """A resource and its subresources as an APIResourceList lists them."""
    main: dict[str, Any] = {
        "name": kind.plural,
        "singularName": kind.singular,
        "namespaced": kind.namespaced,
        "kind": kind.kind,
        "verbs": [
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "create",
            "update",
            "watch",
        ],
    }
    if kind.short_names:
        main["shortNames"] = list(kind.short_names)
    yield main
    for sub in kind.subresources:
        scale = {"group": "autoscaling", "version": "v1", "kind": "Scale"} if sub == "scale" else {}
        yield {
            "name": f"{kind.plural}/{sub}",
            "singularName": "",
            "namespaced": kind.namespaced,
            "kind": kind.kind,
            **scale,
            "verbs": ["get", "patch", "update"],
        }


def _json(body: Any, status: int = 200) -> web.Response:
    """JSON as the API server writes it: compact, a trailing newline, no charset."""
    data = json.dumps(body, separators=(",", ":")).encode() + b"\n"
    return web.Response(body=data, status=status, content_type="application/json")


def _status(
    code: int, message: str, *, reason: str | None = None, details: dict | None = None
) -> web.Response:
    status: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
    }
    if reason or code in _REASONS:
        status["reason"] = reason or _REASONS[code]
    if details is not None:
        status["details"] = details
    status["code"] = code
    return _json(status, code)


def _not_found(target: _Target) -> web.Response:
    return _status(404, f'{target.qualified} "{target.name}" not found', details=target.details())


def _forbidden(identity: Identity, verb: str, target: _Target) -> web.Response:
    subject = f'{target.qualified} "{target.name}"' if target.name else target.qualified
    where = (
        f' in the namespace "{target.namespace}"' if target.namespace else " at the cluster scope"
    )
    return _status(
        403,
        f'{subject} is forbidden: User "{identity.user}" cannot {verb} resource '
        f'"{target.resource}" in API group "{target.group}"{where}',
        details=target.details(),
    )


def _watch_line(kind: str, obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": kind, "object": obj}, separators=(",", ":")).encode() + b"\n"


def _expired(version: int, compacted: int) -> dict[str, Any]:
    """The watch cache's answer to a resourceVersion it no longer has (apiserver
    pkg/storage/cacher: NewResourceExpired, "too old resource version")."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"too old resource version: {version} ({compacted})",
        "reason": "Expired",
        "code": 410,
    }


def _encode_continue(name: str) -> str:
    return base64.urlsafe_b64encode(json.dumps({"start": name}).encode()).decode()


def _decode_continue(token: str) -> str:
    return str(json.loads(base64.urlsafe_b64decode(token))["start"]) if token else ""


def _labels(obj: dict[str, Any], key: str) -> Any:
    return (obj["metadata"].get("labels") or {}).get(key)


def _field(obj: dict[str, Any], key: str) -> str:
    """A field as a field selector sees it: a string, empty when unset (spec.nodeName=)."""
    value: Any = obj
    for part in key.split("."):
        value = (value or {}).get(part)
    return "" if value is None else str(value)


def _selected(obj: dict[str, Any], selector: str, lookup: Callable[..., Any]) -> bool:
    """Equality-based selectors (k=v, k==v, k!=v, comma-separated), which is all the adapter
    and the node send."""
    for term in filter(None, selector.split(",")):
        key, operator, value = re.split(r"(!=|==|=)", term, maxsplit=1)
        if (lookup(obj, key) == value) != (operator != "!="):
            return False
    return True


def _merge(target: dict[str, Any], patch: dict[str, Any]) -> None:
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = value
