"""docs/examples/rbac.yaml grants exactly what the adapter's calls need, verb by verb and
resource by resource: a call the manifest does not allow fails this test, and so does a rule
no call needs.

Every request the adapter makes goes through a method of KubeApi (api.py). The methods that
take a Resource need its verb on the Resource each call site passes: a `Resource.X` literal
is read from the code, and a call site that passes a variable is listed in DECLARED with
the Resources it can carry, so that a new one fails until someone says which.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator
from pathlib import Path

import yaml

from acceptance.platforms.kubernetes.api import KubeApi, Resource

ROOT = Path(__file__).resolve().parents[2]
ADAPTER = ROOT / "acceptance" / "platforms" / "kubernetes"
MANIFEST = ROOT / "docs" / "examples" / "rbac.yaml"

Rule = tuple[str, str, str]  # (API group, resource, verb)
RUNTIMES = frozenset({Resource.AGENT_RUNTIME, Resource.CODE_INTERPRETER})

# The KubeApi methods that take a Resource first, and the verb each needs on it.
VERB_ON_RESOURCE = {"get": "get", "objects": "list", "create": "create", "delete": "delete"}
# The other KubeApi methods, and what each needs.
NEEDS: dict[str, list[Rule]] = {
    "api_resources": [],  # discovery: every authenticated user may
    "service": [("", "services", "get")],
    "pod_events": [("", "events", "list")],
    "pod_log": [("", "pods/log", "get")],
    "deployment": [("apps", "deployments", "get")],
    "restart_deployment": [("apps", "deployments", "patch")],
    "service_account_token": [("", "serviceaccounts/token", "create")],
    # A websocket upgrade is a GET; from Kubernetes 1.35 (the
    # AuthorizePodWebsocketUpgradeCreatePermission gate) it also needs create.
    "open_port_forward": [("", "pods/portforward", "get"), ("", "pods/portforward", "create")],
    # No request at all.
    "version": [],
    "close": [],
}
# Call sites passing a Resource in a variable: (file, enclosing function, KubeApi method).
DECLARED: dict[tuple[str, str, str], frozenset[Resource]] = {
    ("fixtures.py", "Fixtures.ensure", "get"): RUNTIMES,  # RESOURCE_OF_KIND[role.kind]
    ("fixtures.py", "Fixtures.create", "create"): RUNTIMES,
    ("fixtures.py", "Fixtures._unusable", "get"): RUNTIMES,
    ("fixtures.py", "Fixtures.delete", "delete"): RUNTIMES,  # what the run created
    # A session's claim, Sandbox and pod (SessionObjects.present).
    ("observation.py", "Observer.exists", "get"): frozenset(
        {Resource.SANDBOX_CLAIM, Resource.SANDBOX, Resource.POD}
    ),
    # The sessions held, by label, for the crowded collector's note.
    ("observation.py", "Observer.session_ids", "objects"): frozenset(
        {Resource.SANDBOX_CLAIM, Resource.SANDBOX}
    ),
    ("cluster.py", "Cluster.kill_sandbox", "delete"): frozenset({Resource.POD}),
    ("cluster.py", "Cluster.has_runtime", "get"): RUNTIMES,
}


def kube_api_methods() -> set[str]:
    return {name for name, _ in inspect.getmembers(KubeApi) if not name.startswith("_")}


def call_sites() -> Iterator[tuple[str, str, str, ast.Call]]:
    """(file, enclosing function, KubeApi method, call) for every call of a KubeApi method
    on something named api (self._api, self._cluster.api, api) in the adapter's modules."""
    methods = kube_api_methods()
    for path in sorted(ADAPTER.glob("*.py")):
        if path.name == "api.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for scope, node in _walk(tree, ""):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in methods
                and ast.unparse(node.func.value).rsplit(".", 1)[-1] in ("api", "_api")
            ):
                yield path.name, scope, node.func.attr, node


def _walk(node: ast.AST, scope: str) -> Iterator[tuple[str, ast.AST]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            yield from _walk(child, f"{scope}.{child.name}".lstrip("."))
        else:
            yield scope, child
            yield from _walk(child, scope)


def resources_at(file: str, scope: str, method: str, call: ast.Call) -> frozenset[Resource]:
    argument = ast.unparse(call.args[0]) if call.args else ""
    literal = argument.removeprefix("Resource.")
    if argument.startswith("Resource.") and literal in Resource.__members__:
        return frozenset({Resource[literal]})
    declared = DECLARED.get((file, scope, method))
    assert declared is not None, (
        f"{file}: {scope} calls KubeApi.{method}({argument}, ...): add the Resources it can "
        "carry to DECLARED"
    )
    return declared


def needed() -> set[Rule]:
    rules: set[Rule] = set()
    for file, scope, method, call in call_sites():
        if method in VERB_ON_RESOURCE:
            for resource in resources_at(file, scope, method, call):
                rules.add((resource.group, resource.plural, VERB_ON_RESOURCE[method]))
        else:
            rules.update(NEEDS[method])
    return rules


def granted() -> set[Rule]:
    role = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    assert role["kind"] == "ClusterRole"
    return {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_every_method_of_kube_api_is_known() -> None:
    unknown = kube_api_methods() - set(NEEDS) - set(VERB_ON_RESOURCE)
    assert not unknown, f"add what these KubeApi methods need to NEEDS and the manifest: {unknown}"


def test_every_declared_call_site_exists() -> None:
    sites = {(file, scope, method) for file, scope, method, _ in call_sites()}
    assert sorted(set(DECLARED) - sites) == [], "DECLARED names call sites the adapter lacks"


def test_the_call_sites_are_found() -> None:
    """The scan sees the calls it must (a scan finding nothing would pass the test below
    with an empty manifest)."""
    sites = {(file, method) for file, _, method, _ in call_sites()}
    assert {("observation.py", "objects"), ("port_forward.py", "open_port_forward")} <= sites


def test_the_manifest_grants_exactly_what_the_calls_need() -> None:
    assert sorted(needed() - granted()) == [], "docs/examples/rbac.yaml lacks these"
    assert sorted(granted() - needed()) == [], "docs/examples/rbac.yaml grants more than needed"
