"""A container's environment as the node makes it: envFrom, env values with $(VAR)
expansion, fieldRef, Secret and ConfigMap references (optional or not), and POD_IP, HOST,
PORT and HOSTNAME unless the pod sets them; each unresolvable reference a clear error."""

from __future__ import annotations

import base64

import pytest

from onemachine.node.pod_env import EnvError, Missing, container_env, expand

SECRETS = {"keys": {"data": {"token": base64.b64encode(b"s3cret").decode()}}}
CONFIG_MAPS = {"settings": {"data": {"MODE": "fast"}}}


def read(objects: dict):
    def reader(namespace: str, name: str) -> dict:
        assert namespace == "team"
        if name not in objects:
            raise Missing(name)
        return objects[name]

    return reader


POD = {
    "metadata": {
        "name": "p",
        "namespace": "team",
        "uid": "u-1",
        "labels": {"app": "echo"},
        "annotations": {"note": "hi"},
    },
    "spec": {"nodeName": "n", "serviceAccountName": "sa"},
}


def env_of(container: dict) -> dict[str, str]:
    return container_env(
        POD,
        {"name": "c", **container},
        pod_ip="198.18.0.5",
        host_ip="198.18.0.1",
        read_secret=read(SECRETS),
        read_config_map=read(CONFIG_MAPS),
    )


def ref(kind: str, name: str, key: str, optional: bool = False) -> dict:
    return {"valueFrom": {kind: {"name": name, "key": key, "optional": optional}}}


def test_a_pod_gets_its_address_port_and_hostname() -> None:
    env = env_of({"ports": [{"containerPort": 9000}, {"containerPort": 9001}]})
    assert env == {"POD_IP": "198.18.0.5", "HOST": "198.18.0.5", "PORT": "9000", "HOSTNAME": "p"}


def test_what_the_pod_sets_wins() -> None:
    env = env_of({"ports": [{"containerPort": 9000}], "env": [{"name": "PORT", "value": "1"}]})
    assert env["PORT"] == "1"
    assert "PORT" not in env_of({})


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("metadata.name", "p"),
        ("metadata.namespace", "team"),
        ("metadata.uid", "u-1"),
        ("metadata.labels['app']", "echo"),
        ("metadata.annotations['note']", "hi"),
        ("spec.nodeName", "n"),
        ("spec.serviceAccountName", "sa"),
        ("status.podIP", "198.18.0.5"),
        ("status.hostIP", "198.18.0.1"),
    ],
)
def test_field_refs(path: str, value: str) -> None:
    env = env_of({"env": [{"name": "V", "valueFrom": {"fieldRef": {"fieldPath": path}}}]})
    assert env["V"] == value


def test_secret_and_config_map_references_and_env_from() -> None:
    env = env_of(
        {
            "env": [
                {"name": "TOKEN", **ref("secretKeyRef", "keys", "token")},
                {"name": "MODE", **ref("configMapKeyRef", "settings", "MODE")},
            ],
            "envFrom": [{"secretRef": {"name": "keys"}, "prefix": "S_"}],
        }
    )
    assert (env["TOKEN"], env["MODE"], env["S_token"]) == ("s3cret", "fast", "s3cret")


def test_optional_references_to_nothing_leave_the_variable_unset() -> None:
    env = env_of(
        {
            "env": [
                {"name": "A", **ref("secretKeyRef", "nope", "k", optional=True)},
                {"name": "B", **ref("configMapKeyRef", "settings", "nope", optional=True)},
            ],
            "envFrom": [{"configMapRef": {"name": "nope", "optional": True}}],
        }
    )
    assert "A" not in env and "B" not in env


@pytest.mark.parametrize(
    ("variable", "message"),
    [
        (ref("secretKeyRef", "nope", "k"), 'secret "nope" not found'),
        (ref("configMapKeyRef", "nope", "k"), 'configmap "nope" not found'),
        (ref("secretKeyRef", "keys", "nope"), "couldn't find key nope in Secret team/keys"),
        (
            {"valueFrom": {"fieldRef": {"fieldPath": "metadata.generation"}}},
            "fieldRef 'metadata.generation' is not supported",
        ),
        (
            {"valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
            r"valueFrom \['resourceFieldRef'\] is not supported",
        ),
    ],
)
def test_an_unresolvable_reference_is_a_config_error(variable: dict, message: str) -> None:
    with pytest.raises(EnvError, match=message):
        env_of({"env": [{"name": "V", **variable}]})


def test_values_expand_earlier_variables_as_kubernetes_does() -> None:
    env = env_of(
        {
            "env": [
                {"name": "A", "value": "x"},
                {"name": "B", "value": "$(A)-$(UNDEFINED)-$$(A)"},
            ]
        }
    )
    assert env["B"] == "x-$(UNDEFINED)-$(A)"
    assert expand("$(A) $$ $(B)", {"A": "1"}) == "1 $ $(B)"
