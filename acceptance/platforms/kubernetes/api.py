"""The Kubernetes API as the adapter uses it (``KubeApi``, all it asks of a cluster): the few
calls it makes, each with a timeout, answers as JSON-shaped dicts, failures as KubeErrors;
an object instance as an ObjectRef."""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.stream import portforward
from kubernetes.stream.ws_client import PortForward
from websocket import WebSocketBadStatusException

from acceptance.core.evidence import excerpt, redact

# The longest an API call may take to connect; its read timeout is the api_timeout setting.
CONNECT_TIMEOUT = 5.0
JSON = dict[str, Any]
# agent-sandbox's API versions, in the order a cluster is asked for them: v1.x serves
# v1beta1 alone (v1.0.0 dropped v1alpha1); v0.5.x v1beta1 and, deprecated, v1alpha1; v0.4.x
# v1alpha1 alone. No release serves v1 yet: it is asked for last, so that a release serving
# only v1 is used and named rather than reported as agent-sandbox missing. The adapter reads
# only metadata, labels and owner references, the same in each.
AGENT_SANDBOX_VERSIONS = ("v1beta1", "v1alpha1", "v1")
_AGENTCUBE = "runtime.agentcube.volcano.sh"


class Resource(enum.Enum):
    """The kinds of object the adapter reads or writes: (group, version, plural, kind). The
    version of agent-sandbox's kinds is the one its cluster serves (``KubeApi.served``);
    until found, v1alpha1, which v0.4.6 (as AgentCube 939abb5 installs it) serves."""

    POD = ("", "v1", "pods", "Pod")
    AGENT_RUNTIME = (_AGENTCUBE, "v1alpha1", "agentruntimes", "AgentRuntime")
    CODE_INTERPRETER = (_AGENTCUBE, "v1alpha1", "codeinterpreters", "CodeInterpreter")
    SANDBOX = ("agents.x-k8s.io", "v1alpha1", "sandboxes", "Sandbox")
    SANDBOX_CLAIM = ("extensions.agents.x-k8s.io", "v1alpha1", "sandboxclaims", "SandboxClaim")

    def __init__(self, group: str, version: str, plural: str, kind: str) -> None:
        self.group = group
        self.version = version
        self.plural = plural
        self.kind = kind

    @property
    def qualified(self) -> str:
        """As kubectl and API errors name it: agentruntimes.runtime.agentcube.volcano.sh."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


class KubeError(AssertionError):
    """The Kubernetes API refused or failed a call. ``status`` is the HTTP status, 0 when no
    answer came. An AssertionError, so that a scenario reports it as a failed expectation."""

    def __init__(self, what: str, status: int, detail: str) -> None:
        self.status = status
        self.detail = detail
        answer = f"answered {status}" if status else "gave no answer"
        super().__init__(redact(f"the Kubernetes API {answer} to {what}: {detail}"))


@dataclass(frozen=True)
class ObjectRef:
    """One object instance: a new object under the same name has another uid."""

    resource: Resource
    namespace: str
    name: str
    uid: str

    @classmethod
    def of(cls, resource: Resource, obj: JSON) -> ObjectRef:
        metadata = obj["metadata"]
        return cls(resource, metadata["namespace"], metadata["name"], metadata["uid"])

    def __str__(self) -> str:
        return f"{self.resource.kind} {self.namespace}/{self.name}"


def _status_message(body: str | None) -> str | None:
    """The message of the Status object the API sends with an error, if it is one."""
    try:
        return str(json.loads(body or "")["message"])
    except (ValueError, KeyError, TypeError):
        return None


class KubeApi:
    def __init__(self, configuration: client.Configuration, timeout: float = 30.0) -> None:
        self._timeout = (min(CONNECT_TIMEOUT, timeout), timeout)
        self._client = client.ApiClient(configuration)
        self._core = client.CoreV1Api(self._client)
        self._apps = client.AppsV1Api(self._client)
        self._custom = client.CustomObjectsApi(self._client)
        self._configuration = configuration
        # API group -> the version of its kinds the cluster serves, used from then on.
        self.served: dict[str, str] = {}

    def version(self, resource: Resource) -> str:
        return self.served.get(resource.group, resource.version)

    def close(self) -> None:
        self._client.close()

    def _call(
        self, what: str, method: Any, *args: Any, none_if_gone: bool = False, **kwargs: Any
    ) -> Any:
        """The answer as JSON; None for a 404 when `none_if_gone`."""
        try:
            result = method(*args, _request_timeout=self._timeout, **kwargs)
        except ApiException as error:
            if error.status == 404 and none_if_gone:
                return None
            detail = _status_message(error.body) or str(error.reason or "no details")
            raise KubeError(what, error.status or 0, detail) from None
        except urllib3.exceptions.HTTPError as error:
            cause = getattr(error, "reason", None) or error  # past urllib3's retry wrapper
            raise KubeError(what, 0, f"{type(cause).__name__}: {cause}") from None
        return self._client.sanitize_for_serialization(result)

    def api_resources(self, group: str, version: str) -> JSON:
        what = f"discover {group}/{version}"
        return self._call(what, self._custom.get_api_resources, group, version)

    def _on_objects(
        self, what: str, verb: str, resource: Resource, namespace: str, *rest: Any, **kwargs: Any
    ) -> Any:
        """A call on a kind's objects: the core API's for pods, the custom objects' else."""
        if resource is Resource.POD:
            method = getattr(self._core, f"{'read' if verb == 'get' else verb}_namespaced_pod")
            return self._call(what, method, *rest, namespace, **kwargs)
        method = getattr(self._custom, f"{verb}_namespaced_custom_object")
        version = self.version(resource)
        arguments = (resource.group, version, namespace, resource.plural, *rest)
        return self._call(what, method, *arguments, **kwargs)

    def get(self, resource: Resource, namespace: str, name: str) -> JSON | None:
        """The object, or None when it does not exist."""
        what = f"get {resource.qualified} {namespace}/{name}"
        return self._on_objects(what, "get", resource, namespace, name, none_if_gone=True)

    def objects(self, resource: Resource, namespace: str, label_selector: str = "") -> list[JSON]:
        """The objects of a kind in the namespace, those with the labels when given."""
        what = f"list {resource.qualified} in {namespace}" + (
            f" with labels {label_selector}" if label_selector else ""
        )
        selected = {"label_selector": label_selector} if label_selector else {}
        answer = self._on_objects(what, "list", resource, namespace, **selected)
        return list(answer.get("items") or [])

    def create(
        self, resource: Resource, namespace: str, body: JSON, *, dry_run: bool = False
    ) -> JSON:
        """Create a custom object; a KubeError with status 409 when it exists already.
        `dry_run`: the server checks the create (permission, namespace, admission) and stores
        nothing."""
        what = f"{'dry-run ' if dry_run else ''}create {resource.qualified} "
        what += f"{namespace}/{body['metadata']['name']}"
        dry = {"dry_run": "All"} if dry_run else {}
        return self._on_objects(what, "create", resource, namespace, body, **dry)

    def delete(self, ref: ObjectRef, *, grace_seconds: int | None = None) -> bool:
        """Delete this very object (its uid), its dependents in the background; False when
        it is gone, a KubeError 409 when the name now belongs to another. A pod deleted with
        ``grace_seconds=0`` goes at once, whether or not its containers still run."""
        options = client.V1DeleteOptions(
            preconditions=client.V1Preconditions(uid=ref.uid),
            propagation_policy="Background",
            grace_period_seconds=grace_seconds,
        )
        what = f"delete {ref.resource.qualified} {ref.namespace}/{ref.name} (uid {ref.uid})"
        answer = self._on_objects(
            what, "delete", ref.resource, ref.namespace, ref.name, body=options, none_if_gone=True
        )
        return answer is not None

    def service(self, namespace: str, name: str) -> JSON:
        what = f"get Service {namespace}/{name}"
        return self._call(what, self._core.read_namespaced_service, name, namespace)

    def pod_events(self, namespace: str, pod: str) -> list[JSON]:
        what, about = f"list the events of Pod {namespace}/{pod}", f"involvedObject.name={pod}"
        selector = f"involvedObject.kind=Pod,{about}"
        answer = self._call(
            what, self._core.list_namespaced_event, namespace, field_selector=selector
        )
        return list(answer.get("items") or [])

    def pod_log(self, namespace: str, pod: str, container: str, lines: int) -> str | None:
        """The last lines of the container's log; None while the pod is on no node, for
        which the API has no log yet (it answers 204 No Content)."""
        what = f"read the log of container {container} of Pod {namespace}/{pod}"
        read = self._core.read_namespaced_pod_log
        return self._call(what, read, pod, namespace, container=container, tail_lines=lines)

    def deployment(self, namespace: str, name: str) -> JSON:
        what = f"get Deployment {namespace}/{name}"
        return self._call(what, self._apps.read_namespaced_deployment, name, namespace)

    def restart_deployment(self, namespace: str, name: str) -> JSON:
        """What `kubectl rollout restart` does: stamp the pod template with the time."""
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        annotations = {"kubectl.kubernetes.io/restartedAt": stamp}
        patch = {"spec": {"template": {"metadata": {"annotations": annotations}}}}
        what, merge = (
            f"restart Deployment {namespace}/{name}",
            "application/strategic-merge-patch+json",
        )
        patch_deployment = self._apps.patch_namespaced_deployment
        return self._call(what, patch_deployment, name, namespace, patch, _content_type=merge)

    def service_account_token(self, namespace: str, name: str, seconds: int) -> str:
        """A token for the service account from the TokenRequest API (`kubectl create token`)."""
        request = client.AuthenticationV1TokenRequest(
            spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=seconds)
        )
        what = f"create a token for ServiceAccount {namespace}/{name}"
        create = self._core.create_namespaced_service_account_token
        return str(self._call(what, create, name, namespace, request)["status"]["token"])

    def open_port_forward(self, namespace: str, pod: str, port: int) -> PortForward:
        """A port-forward stream to the pod (a websocket to its portforward subresource)."""
        # The client's stream helper swaps its ApiClient's call_api while it connects, which
        # would divert other threads' calls: each stream opens with a client of its own, so
        # that a burst of connections opens its streams at once (one at a time, 22 calls
        # through a real kubelet reached the Router spread over more than a second).
        streams = client.ApiClient(self._configuration)
        try:
            return portforward(
                client.CoreV1Api(streams).connect_get_namespaced_pod_portforward,
                pod,
                namespace,
                ports=str(port),
            )
        except ApiException as error:
            what = f"port-forward to Pod {namespace}/{pod} port {port}"
            raise KubeError(what, *handshake_refusal(error)) from None
        finally:
            streams.close()  # its pool only: the stream has a websocket of its own


def handshake_refusal(error: ApiException) -> tuple[int, str]:
    """The HTTP status and the API's own words in a refused websocket handshake, which the
    client reports as status 0, the websocket's exception its context: the Status's message,
    else the body, else the status line."""
    refused = error.__context__
    if not isinstance(refused, WebSocketBadStatusException):
        return error.status or 0, str(error.reason or "no details")
    body = (refused.resp_body or b"").decode(errors="replace").strip()
    status_line = f"Handshake status {refused.status_code} {refused.status_message}"
    words = excerpt(body, 200) if body else status_line
    return refused.status_code, _status_message(body) or words
