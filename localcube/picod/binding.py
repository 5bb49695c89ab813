"""Request bodies decoded like upstream's gin handlers, failing with the same 400 messages."""

import base64
import json
import re
import string
from dataclasses import dataclass
from typing import Any

from localcube.picod.gocompat import GO_CHAR_ESCAPES, go_text


class BadRequest(ValueError):
    """A request that upstream answers with 400 and this message."""


@dataclass(frozen=True)
class _Field:
    name: str  # the JSON key
    go_name: str  # the Go struct field, named in validation errors
    go_type: str  # "string", "[]string" or "map[string]string"
    required: bool = False


EXECUTE_REQUEST = (
    "ExecuteRequest",
    (
        _Field("command", "Command", "[]string", required=True),
        _Field("timeout", "Timeout", "string"),
        _Field("working_dir", "WorkingDir", "string"),
        _Field("env", "Env", "map[string]string"),
    ),
)
UPLOAD_REQUEST = (
    "UploadFileRequest",
    (
        _Field("path", "Path", "string", required=True),
        _Field("content", "Content", "string", required=True),
        _Field("mode", "Mode", "string"),
    ),
)


class _TypeMismatch(Exception):
    def __init__(self, value: Any, go_type: str) -> None:
        super().__init__(value, go_type)
        self.kind, self.go_type = _json_kind(value), go_type


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    kinds: dict[type, str] = {str: "string", list: "array", dict: "object"}
    return kinds.get(type(value), "null")


def _reject_constant(name: str) -> Any:
    """NaN and Infinity are Python extensions that Go's decoder rejects."""
    where = "in numeric literal" if name.startswith("-") else "looking for beginning of value"
    raise BadRequest(f"invalid character '{name.lstrip('-')[0]}' {where}")


# Numbers are only ever told apart by kind here; float() never refuses a long one.
_JSON_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_int=float)
_SYNTAX_CONTEXTS = (
    ("Expecting value", "looking for beginning of value"),
    ("Expecting property name", "looking for beginning of object key string"),
    ("Expecting ':'", "after object key"),
    ("Invalid control character", "in string literal"),
)


def _go_quote_char(char: str) -> str:
    """Go's quoteChar, as its JSON syntax errors print the offending character."""
    if char in "\\'" or char in GO_CHAR_ESCAPES:
        return "'\\" + GO_CHAR_ESCAPES.get(char, char) + "'"
    if char.isprintable():
        return f"'{char}'"
    return f"'\\x{ord(char):02x}'" if ord(char) < 0x80 else f"'\\u{ord(char):04x}'"


def _go_syntax_error(error: json.JSONDecodeError) -> str:
    """Go's *json.SyntaxError text for the error Python found at the same place."""
    doc, pos = error.doc, error.pos
    if pos >= len(doc) or error.msg.startswith("Unterminated string"):
        return "unexpected EOF"
    if error.msg.startswith("Invalid \\"):  # Python points at the backslash, Go past it
        pos = doc.rfind("\\", 0, pos + 1) + 1
        if doc[pos] != "u":
            return f"invalid character {_go_quote_char(doc[pos])} in string escape code"
        digits = range(pos + 1, pos + 5)
        pos = next((i for i in digits if i >= len(doc) or doc[i] not in string.hexdigits), pos)
        if pos >= len(doc):
            return "unexpected EOF"
        return f"invalid character {_go_quote_char(doc[pos])} in \\u hexadecimal character escape"
    context = next((c for prefix, c in _SYNTAX_CONTEXTS if error.msg.startswith(prefix)), None)
    if context is None:  # "Expecting ',' delimiter"
        in_object = _innermost_container(doc, pos) == "{"
        context = "after object key:value pair" if in_object else "after array element"
    return f"invalid character {_go_quote_char(doc[pos])} {context}"


def _innermost_container(doc: str, end: int) -> str:
    """The bracket ('{' or '[') enclosing doc[end], skipping over strings."""
    stack: list[str] = []
    in_string = escaped = False
    for char in doc[:end]:
        if in_string:
            escaped, in_string = (not escaped and char == "\\"), (escaped or char != '"')
        elif char == '"':
            in_string = True
        elif char in "[{":
            stack.append(char)
        elif char in "]}" and stack:
            stack.pop()
    return stack[-1] if stack else ""


def _first_json_value(body: bytes) -> Any:
    """The first JSON value of body; like json.Decoder.Decode, data after it is ignored."""
    return _json_value_and_rest(body)[0]


def _json_value_and_rest(body: bytes) -> tuple[Any, str]:
    """The first JSON value of body, and the text after it."""
    text = go_text(body)
    start = len(text) - len(text.lstrip(" \t\r\n"))
    if start == len(text):
        raise BadRequest("EOF")
    try:
        value, end = _JSON_DECODER.raw_decode(text, start)
    except json.JSONDecodeError as error:
        raise BadRequest(_go_syntax_error(error)) from None
    except RecursionError:  # Go's limit is 10000 levels, Python's near 1000
        raise BadRequest("exceeded max depth") from None
    return value, text[end:]


def go_unmarshal_object(data: bytes, go_type: str) -> dict[str, Any] | None:
    """What json.Unmarshal reads from data into a Go map type named `go_type`, with its
    errors' texts: like json.Decoder's, but the whole input must be that one value, an
    object or null (None). Raises BadRequest."""
    try:
        value, rest = _json_value_and_rest(data)
    except BadRequest as error:
        if str(error) in ("EOF", "unexpected EOF"):
            raise BadRequest("unexpected end of JSON input") from None
        raise
    rest = rest.lstrip(" \t\r\n")
    if rest:
        raise BadRequest(f"invalid character {_go_quote_char(rest[0])} after top-level value")
    if value is not None and not isinstance(value, dict):
        raise BadRequest(
            f"json: cannot unmarshal {_json_kind(value)} into Go value of type {go_type}"
        )
    return value


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _go_string(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _TypeMismatch(value, "string")
    return _LONE_SURROGATE.sub("\ufffd", value)


def _convert(value: Any, go_type: str) -> Any:
    if go_type == "string" or value is None:
        return _go_string(value) if go_type == "string" else None
    if go_type == "[]string":
        if not isinstance(value, list):
            raise _TypeMismatch(value, go_type)
        return [_go_string(item) for item in value]
    if not isinstance(value, dict):
        raise _TypeMismatch(value, go_type)
    return {_go_string(key): _go_string(item) for key, item in value.items()}


def bind_json(body: bytes, request_type: tuple[str, tuple[_Field, ...]]) -> dict[str, Any]:
    """Decode body into the fields of an upstream request struct, with Go's error texts.

    encoding/json matches keys case-insensitively, leaves a string field alone on null, sets
    a slice or map to nil on null and reports the first type mismatch; gin's
    `binding:"required"` then rejects empty strings and nil slices or maps (not empty ones).
    String fields default to "", slices and maps to None. Raises BadRequest.
    """
    struct, fields = request_type
    value = _first_json_value(body)
    bound: dict[str, Any] = {f.name: "" if f.go_type == "string" else None for f in fields}
    if value is not None and not isinstance(value, dict):
        kind = _json_kind(value)
        raise BadRequest(f"json: cannot unmarshal {kind} into Go value of type picod.{struct}")
    mismatch = None
    for key, item in (value or {}).items():
        field = next((f for f in fields if f.name == key), None) or next(
            (f for f in fields if f.name.casefold() == key.casefold()), None
        )
        if field is None or (item is None and field.go_type == "string"):
            continue
        try:
            bound[field.name] = _convert(item, field.go_type)
        except _TypeMismatch as error:
            mismatch = mismatch or (
                f"json: cannot unmarshal {error.kind} into Go struct field "
                f"{struct}.{field.name} of type {error.go_type}"
            )
    if mismatch:
        raise BadRequest(mismatch)
    missing = [f.go_name for f in fields if f.required and bound[f.name] in ("", None)]
    if missing:
        raise BadRequest(
            "\n".join(
                f"Key: '{struct}.{name}' Error:Field validation for '{name}' failed on the "
                "'required' tag"
                for name in missing
            )
        )
    return bound


_BASE64_STOP = re.compile(rb"[^A-Za-z0-9+/\r\n]")


def _base64_error_offset(data: bytes) -> int | None:
    """Where Go's base64.StdEncoding.DecodeString rejects data (its byte offset), or None.

    Its decode loop, condensed: padding is required, CR and LF are skipped anywhere, and the
    first byte outside the alphabet must be correct padding that ends the input.
    """
    stop = _BASE64_STOP.search(data)
    end = stop.start() if stop else len(data)
    quantum = (end - data.count(b"\r", 0, end) - data.count(b"\n", 0, end)) % 4
    if stop is None:
        return end - quantum if quantum else None
    if data[end] != ord("=") or quantum < 2:
        return end
    index = end + 1
    if quantum == 2:  # a second "=" must follow
        index = _skip_newlines(data, index)
        if index == len(data):
            return index
        if data[index] != ord("="):
            return index - 1
        index += 1
    index = _skip_newlines(data, index)
    return index if index < len(data) else None


def decode_base64(text: str) -> bytes:
    """Decode like Go's base64.StdEncoding; raise BadRequest with upstream's message."""
    data = text.encode()
    offset = _base64_error_offset(data)
    if offset is not None:
        raise BadRequest(f"Invalid base64 content: illegal base64 data at input byte {offset}")
    return base64.b64decode(data.replace(b"\r", b"").replace(b"\n", b""))


def parse_file_mode(text: str) -> int:
    """Upstream's parseFileMode: an octal string up to 0777, anything else means 0644."""
    if re.fullmatch("[0-7]{1,11}", text) and int(text, 8) <= 0o777:
        return int(text, 8)
    return 0o644


def _skip_newlines(data: bytes, index: int) -> int:
    """The index of the first byte from `index` on that is no CR or LF."""
    while index < len(data) and data[index] in b"\r\n":
        index += 1
    return index
