"""Reads the Kubernetes protobuf encoding of the two objects the Router's identity meets: the
Secret client-go creates, and a Status (in the recorded answers).

client-go sends `application/vnd.kubernetes.protobuf` for core types
(k8s.io/client-go kubernetes/typed/core/v1/secret.go:68, rest/request.go:196-203): the
4-byte `k8s\\0` magic, then a `runtime.Unknown` message whose `raw` is the object's own
message. Only the wire format is read here (varints and length-delimited fields), the field
numbers those of k8s.io/api core/v1 and k8s.io/apimachinery meta/v1 and runtime
`generated.proto`. An object comes out as the dict its JSON form is (`data` values in
base64), with the fields that are set. Nothing is written in protobuf: localcube answers in
JSON, which client-go accepts too (identity.py).
"""

from __future__ import annotations

import base64
import datetime
from dataclasses import dataclass
from typing import Any

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"

_VARINT, _FIXED64, _LENGTH_DELIMITED, _FIXED32 = 0, 1, 2, 5
_UINT64 = 1 << 64


class ProtobufError(ValueError):
    """A body that is not one of the objects this module knows, in the protobuf encoding."""


@dataclass(frozen=True)
class _Field:
    number: int
    name: str
    kind: str  # string, int, bool, bytes, time, message, messages, string_map, bytes_map
    message: tuple[_Field, ...] = ()
    pointer: bool = False  # Go's *T: emitted only when set


_TYPE_META = (_Field(1, "apiVersion", "string"), _Field(2, "kind", "string"))
_UNKNOWN = (
    _Field(1, "typeMeta", "message", _TYPE_META),
    _Field(2, "raw", "bytes"),
    _Field(3, "contentEncoding", "string"),
    _Field(4, "contentType", "string"),
)
_OBJECT_META = (
    _Field(1, "name", "string"),
    _Field(2, "generateName", "string"),
    _Field(3, "namespace", "string"),
    _Field(4, "selfLink", "string"),
    _Field(5, "uid", "string"),
    _Field(6, "resourceVersion", "string"),
    _Field(7, "generation", "int"),
    _Field(8, "creationTimestamp", "time"),
    _Field(9, "deletionTimestamp", "time", pointer=True),
    _Field(10, "deletionGracePeriodSeconds", "int", pointer=True),
    _Field(11, "labels", "string_map"),
    _Field(12, "annotations", "string_map"),
)
_SECRET = (
    _Field(1, "metadata", "message", _OBJECT_META),
    _Field(2, "data", "bytes_map"),
    _Field(3, "type", "string"),
    _Field(4, "stringData", "string_map"),
    _Field(5, "immutable", "bool", pointer=True),
)
_LIST_META = (
    _Field(1, "selfLink", "string"),
    _Field(2, "resourceVersion", "string"),
    _Field(3, "continue", "string"),
    _Field(4, "remainingItemCount", "int", pointer=True),
)
_STATUS_CAUSE = (
    _Field(1, "reason", "string"),
    _Field(2, "message", "string"),
    _Field(3, "field", "string"),
)
_STATUS_DETAILS = (
    _Field(1, "name", "string"),
    _Field(2, "group", "string"),
    _Field(3, "kind", "string"),
    _Field(4, "causes", "messages", _STATUS_CAUSE),
    _Field(5, "retryAfterSeconds", "int"),
    _Field(6, "uid", "string"),
)
_STATUS = (
    _Field(1, "metadata", "message", _LIST_META),
    _Field(2, "status", "string"),
    _Field(3, "message", "string"),
    _Field(4, "reason", "string"),
    _Field(5, "details", "message", _STATUS_DETAILS, pointer=True),
    _Field(6, "code", "int"),
)
_KINDS = {("v1", "Secret"): _SECRET, ("v1", "Status"): _STATUS}


def decode(body: bytes) -> dict[str, Any]:
    """The JSON form of the v1 Secret or Status in a `k8s\\0` envelope; ProtobufError names
    what is wrong."""
    if not body.startswith(MAGIC):
        raise ProtobufError("the body does not start with the k8s\\0 magic")
    unknown = _decode_message(_UNKNOWN, body[len(MAGIC) :], "Unknown")
    if unknown.get("contentEncoding"):
        raise ProtobufError(f"contentEncoding {unknown['contentEncoding']!r} is not supported")
    type_meta = unknown.get("typeMeta", {})
    api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
    if (api_version, kind) not in _KINDS:
        known = ", ".join(f"{v}/{k}" for v, k in _KINDS)
        raise ProtobufError(f"kind {kind!r} of {api_version!r} is none of {known}")
    obj = {"kind": kind, "apiVersion": api_version}
    obj.update(_decode_message(_KINDS[(api_version, kind)], unknown.get("raw", b""), kind))
    return obj


def fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """The fields of one message as they are on the wire, in order: (number, value), a
    varint or fixed value as an int, a length-delimited one as bytes."""
    found: list[tuple[int, int | bytes]] = []
    position = 0
    while position < len(data):
        key, position = _read_varint(data, position)
        number, wire_type = key >> 3, key & 7
        if number == 0:
            raise ProtobufError(f"field number 0 at byte {position}")
        value: int | bytes
        if wire_type == _VARINT:
            value, position = _read_varint(data, position)
        elif wire_type == _LENGTH_DELIMITED:
            length, position = _read_varint(data, position)
            if position + length > len(data):
                raise ProtobufError(f"field {number} runs past the end of its message")
            value, position = data[position : position + length], position + length
        elif wire_type in (_FIXED64, _FIXED32):
            size = 8 if wire_type == _FIXED64 else 4
            if position + size > len(data):
                raise ProtobufError(f"field {number} runs past the end of its message")
            value = int.from_bytes(data[position : position + size], "little")
            position += size
        else:
            raise ProtobufError(f"field {number} has wire type {wire_type}, not supported")
        found.append((number, value))
    return found


def _read_varint(data: bytes, position: int) -> tuple[int, int]:
    value = shift = 0
    while position < len(data) and shift < 70:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position
        shift += 7
    raise ProtobufError(f"a varint is cut short or too long at byte {position}")


def _decode_message(schema: tuple[_Field, ...], data: bytes, message: str) -> dict[str, Any]:
    by_number = {field.number: field for field in schema}
    obj: dict[str, Any] = {}
    for number, value in fields(data):
        field = by_number.get(number)
        if field is None:
            continue  # a field this module does not need, skipped as protobuf allows
        where = f"{message}.{field.name}"
        if field.kind in ("int", "bool"):
            if not isinstance(value, int):
                raise ProtobufError(f"{where} is not a varint")
            if field.kind == "bool":
                obj[field.name] = bool(value)
            elif value or field.pointer:
                obj[field.name] = value - _UINT64 if value >= 1 << 63 else value
            continue
        if not isinstance(value, bytes):
            raise ProtobufError(f"{where} is not length-delimited")
        decoded = _decode_value(field, value, where)
        if field.kind == "messages":
            obj.setdefault(field.name, []).append(decoded)
        elif field.kind.endswith("_map"):
            obj.setdefault(field.name, {}).update(decoded)
        elif decoded or (field.pointer and decoded is not None):
            obj[field.name] = decoded
    return obj


def _decode_value(field: _Field, value: bytes, where: str) -> Any:
    if field.kind == "bytes":
        return value
    if field.kind == "string":
        return _text(value, where)
    if field.kind == "time":
        return _decode_time(value, where)
    if field.kind in ("message", "messages"):
        return _decode_message(field.message, value, where)
    entry = dict(fields(value))
    key, item = entry.get(1, b""), entry.get(2, b"")
    if not isinstance(key, bytes) or not isinstance(item, bytes):
        raise ProtobufError(f"an entry of {where} is not a key and a value")
    if field.kind == "bytes_map":
        return {_text(key, where): base64.b64encode(item).decode()}
    return {_text(key, where): _text(item, where)}


def _decode_time(value: bytes, where: str) -> str | None:
    """RFC 3339 in whole seconds, as meta/v1 Time is written in JSON (nanos dropped)."""
    if not value:
        return None
    seconds = dict(fields(value)).get(1, 0)
    if not isinstance(seconds, int):
        raise ProtobufError(f"{where} is not a time")
    try:
        moment = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    except (OverflowError, OSError, ValueError):
        raise ProtobufError(f"{where} is out of range: {seconds} s") from None
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _text(value: bytes, where: str) -> str:
    try:
        return value.decode()
    except UnicodeDecodeError as error:
        raise ProtobufError(f"{where} is not UTF-8 text ({error.reason})") from None
