"""localcube/upstream_router/kube_protobuf.py: reading the Secret and Status in Kubernetes'
protobuf envelope, and the errors that name what is wrong with a body. (The recorded
client-go bodies are read in tests/recordings/test_k8s_api.py.)"""

from __future__ import annotations

import pytest

from localcube.upstream_router import kube_protobuf
from localcube.upstream_router.kube_protobuf import ProtobufError


def length_delimited(number: int, data: bytes) -> bytes:
    assert len(data) < 128
    return bytes([number << 3 | 2, len(data)]) + data


def envelope(kind: str, raw: bytes, api_version: str = "v1", encoding: str = "") -> bytes:
    type_meta = length_delimited(1, api_version.encode()) + length_delimited(2, kind.encode())
    unknown = length_delimited(1, type_meta) + length_delimited(2, raw)
    return kube_protobuf.MAGIC + unknown + length_delimited(3, encoding.encode())


# ObjectMeta.creationTimestamp with 2**62 seconds: ten bytes of Time, far past any datetime.
FAR_FUTURE = length_delimited(8, bytes([1 << 3]) + bytes([0x80] * 8) + bytes([0x40]))


def varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes([*out, value])


def test_a_secret_is_read_as_its_json_form() -> None:
    entry = length_delimited(1, b"private.pem") + length_delimited(2, b"private")
    labels = length_delimited(1, b"app") + length_delimited(2, b"agentcube")
    created = length_delimited(8, bytes([1 << 3]) + varint(1_796_126_400))
    metadata = (
        length_delimited(1, b"picod-router-identity") + created + length_delimited(11, labels)
    )
    raw = (
        length_delimited(1, metadata) + length_delimited(2, entry) + length_delimited(3, b"Opaque")
    )
    assert kube_protobuf.decode(envelope("Secret", raw)) == {
        "kind": "Secret",
        "apiVersion": "v1",
        "metadata": {
            "name": "picod-router-identity",
            "creationTimestamp": "2026-12-01T12:00:00Z",
            "labels": {"app": "agentcube"},
        },
        "data": {"private.pem": "cHJpdmF0ZQ=="},
        "type": "Opaque",
    }


def test_a_status_is_read_negative_numbers_too() -> None:
    details = length_delimited(1, b"x") + bytes([5 << 3]) + varint((1 << 64) - 1)
    raw = length_delimited(4, b"AlreadyExists") + length_delimited(5, details) + bytes([6 << 3])
    raw += varint(409)
    assert kube_protobuf.decode(envelope("Status", raw)) == {
        "kind": "Status",
        "apiVersion": "v1",
        "reason": "AlreadyExists",
        "details": {"name": "x", "retryAfterSeconds": -1},
        "code": 409,
    }


def test_empty_fields_are_left_out_when_read() -> None:
    raw = length_delimited(1, length_delimited(1, b"")) + length_delimited(3, b"Opaque")
    assert kube_protobuf.decode(envelope("Secret", raw)) == {
        "kind": "Secret",
        "apiVersion": "v1",
        "type": "Opaque",
    }


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
