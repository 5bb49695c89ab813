"""docs/examples/rbac.yaml grants exactly what acceptance/platforms/kubernetes/api.py calls:
a call the manifest does not allow fails this test, and so does a rule no call needs."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from acceptance.platforms.kubernetes.api import Resource

ROOT = Path(__file__).resolve().parents[2]
API = ROOT / "acceptance" / "platforms" / "kubernetes" / "api.py"
MANIFEST = ROOT / "docs" / "examples" / "rbac.yaml"
_CLIENT_CALL = re.compile(r"self\._(?:core|apps|custom|streams)\.(\w+)\b(?!\.)")

Rule = tuple[str, str, str]  # (API group, resource, verb)
_CUSTOM = [resource for resource in Resource if resource is not Resource.POD]
# Only runtime resources are created and deleted as custom objects (the fixtures).
_RUNTIMES = [Resource.AGENT_RUNTIME, Resource.CODE_INTERPRETER]

# What each client method of the kubernetes package needs, as RBAC names it.
NEEDS: dict[str, list[Rule]] = {
    "get_api_resources": [],  # discovery: every authenticated user may
    "read_namespaced_pod": [("", "pods", "get")],
    "list_namespaced_pod": [("", "pods", "list")],
    "delete_namespaced_pod": [("", "pods", "delete")],
    "read_namespaced_pod_log": [("", "pods/log", "get")],
    "connect_get_namespaced_pod_portforward": [
        ("", "pods/portforward", "get"),
        ("", "pods/portforward", "create"),
    ],
    "read_namespaced_service": [("", "services", "get")],
    "list_namespaced_event": [("", "events", "list")],
    "create_namespaced_service_account_token": [("", "serviceaccounts/token", "create")],
    "read_namespaced_deployment": [("apps", "deployments", "get")],
    "patch_namespaced_deployment": [("apps", "deployments", "patch")],
    "get_namespaced_custom_object": [(r.group, r.plural, "get") for r in _CUSTOM],
    "list_namespaced_custom_object": [(r.group, r.plural, "list") for r in _CUSTOM],
    "create_namespaced_custom_object": [(r.group, r.plural, "create") for r in _RUNTIMES],
    "delete_namespaced_custom_object": [(r.group, r.plural, "delete") for r in _RUNTIMES],
}


def called_methods() -> set[str]:
    return set(_CLIENT_CALL.findall(API.read_text(encoding="utf-8")))


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


def test_every_call_of_the_adapter_is_known() -> None:
    unknown = called_methods() - set(NEEDS)
    assert not unknown, f"add what these calls need to NEEDS and to the manifest: {unknown}"


def test_the_manifest_grants_exactly_what_the_calls_need() -> None:
    needed = {rule for method in called_methods() for rule in NEEDS[method]}
    assert sorted(needed - granted()) == [], "docs/examples/rbac.yaml lacks these"
    assert sorted(granted() - needed) == [], "docs/examples/rbac.yaml grants more than needed"
