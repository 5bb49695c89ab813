"""localcube/upstream_router/kube_protobuf.py: the Secret and Status in Kubernetes' protobuf
envelope, and the errors that name what is wrong with a body. (The recorded client-go bodies
are decoded and written back byte for byte in tests/recordings/test_k8s_api.py.)"""

from __future__ import annotations

import pytest

from localcube.upstream_router import kube_protobuf
from localcube.upstream_router.kube_protobuf import ProtobufError

SECRET = {
    "kind": "Secret",
    "apiVersion": "v1",
    "metadata": {
        "name": "picod-router-identity",
        "namespace": "default",
        "uid": "0b8f6a1e-5d7c-4c55-9d7e-2f1a3b4c5d6e",
        "resourceVersion": "7",
        "creationTimestamp": "2026-12-01T12:00:00Z",
        "labels": {"component": "router", "app": "agentcube"},
    },
    "data": {"private.pem": "cHJpdmF0ZQ==", "public.pem": "cHVibGlj"},
    "type": "Opaque",
}


def length_delimited(number: int, data: bytes) -> bytes:
    assert len(data) < 128
    return bytes([number << 3 | 2, len(data)]) + data


def envelope(kind: str, raw: bytes, api_version: str = "v1", encoding: str = "") -> bytes:
    type_meta = length_delimited(1, api_version.encode()) + length_delimited(2, kind.encode())
    unknown = length_delimited(1, type_meta) + length_delimited(2, raw)
    return kube_protobuf.MAGIC + unknown + length_delimited(3, encoding.encode())


# ObjectMeta.creationTimestamp with 2**62 seconds: ten bytes of Time, far past any datetime.
FAR_FUTURE = length_delimited(8, bytes([1 << 3]) + bytes([0x80] * 8) + bytes([0x40]))


def test_a_secret_comes_back_as_it_was_sent() -> None:
    assert kube_protobuf.decode(kube_protobuf.encode(SECRET)) == SECRET


def test_a_status_comes_back_as_it_was_sent_negative_numbers_too() -> None:
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": 'secrets "x" already exists',
        "reason": "AlreadyExists",
        "details": {"name": "x", "kind": "secrets", "retryAfterSeconds": -1},
        "code": 409,
    }
    assert kube_protobuf.decode(kube_protobuf.encode(status)) == status


def test_empty_fields_are_written_as_go_writes_them_and_left_out_when_read() -> None:
    body = kube_protobuf.encode({"kind": "Secret", "apiVersion": "v1", "type": "Opaque"})
    wire = kube_protobuf.fields(body[len(kube_protobuf.MAGIC) :])
    assert [number for number, _ in wire] == [1, 2, 3, 4], "typeMeta, raw, and the two strings"
    secret = dict(kube_protobuf.fields(wire[1][1]))
    assert [n for n, _ in kube_protobuf.fields(secret[1])] == [1, 2, 3, 4, 5, 6, 7, 8]
    assert kube_protobuf.decode(body) == {"kind": "Secret", "apiVersion": "v1", "type": "Opaque"}


def test_fields_it_does_not_know_are_skipped() -> None:
    raw = length_delimited(3, b"Opaque") + bytes([9 << 3 | 0, 1]) + length_delimited(15, b"x")
    assert kube_protobuf.decode(envelope("Secret", raw))["type"] == "Opaque"


@pytest.mark.parametrize(
    ("body", "named"),
    [
        (b'{"kind": "Secret"}', "k8s\\0 magic"),
        (kube_protobuf.MAGIC + b"\x0a\x80", "varint is cut short"),
        (kube_protobuf.MAGIC + b"\x0a\x05ab", "field 1 runs past the end"),
        (kube_protobuf.MAGIC + b"\x0b", "wire type 3"),
        (envelope("ConfigMap", b""), "kind 'ConfigMap' of 'v1' is none of v1/Secret, v1/Status"),
        (envelope("Secret", b"", api_version="v2"), "kind 'Secret' of 'v2'"),
        (envelope("Secret", b"", encoding="gzip"), "contentEncoding 'gzip'"),
        (envelope("Secret", length_delimited(3, b"\xff")), "Secret.type is not UTF-8"),
        (envelope("Secret", bytes([3 << 3 | 0, 1])), "Secret.type is not length-delimited"),
        (envelope("Secret", length_delimited(1, bytes([7 << 3 | 2, 0]))), "generation is not"),
        (envelope("Secret", length_delimited(1, FAR_FUTURE)), "creationTimestamp is out of range"),
    ],
)
def test_a_body_it_cannot_read_is_refused_naming_why(body: bytes, named: str) -> None:
    with pytest.raises(ProtobufError) as refused:
        kube_protobuf.decode(body)
    assert named in str(refused.value)


def test_only_a_secret_or_a_status_is_encoded() -> None:
    with pytest.raises(ValueError, match="cannot encode 'ConfigMap'"):
        kube_protobuf.encode({"kind": "ConfigMap", "apiVersion": "v1"})


def test_data_that_is_not_base64_is_not_encoded() -> None:
    with pytest.raises(ValueError, match="a value of data is not base64"):
        kube_protobuf.encode({**SECRET, "data": {"private.pem": "not base64!"}})
