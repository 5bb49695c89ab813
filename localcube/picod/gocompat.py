"""Texts the way upstream's Go code prints them: strings, errors, times, durations, modes."""

import codecs
import json
import os
import stat
import time
from typing import Any

from aiohttp import web


def _go_replace(error: UnicodeError) -> tuple[str, int]:
    """Like Go's encoding/json: each invalid UTF-8 byte becomes one U+FFFD."""
    assert isinstance(error, UnicodeDecodeError)
    return "\ufffd", error.start + 1


codecs.register_error("picod-go-replace", _go_replace)
_GO_JSON_ESCAPES = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def go_text(data: bytes) -> str:
    return data.decode("utf-8", "picod-go-replace")


def os_text(name: str | os.PathLike[str]) -> str:
    """A file name as Go would print it in JSON (undecodable bytes become U+FFFD)."""
    return go_text(os.fsencode(name))


def errno_text(error: OSError) -> str:
    """The errno description the way Go spells it ("no such file or directory")."""
    text = os.strerror(error.errno) if error.errno else str(error)
    return text[:1].lower() + text[1:]


def path_error(op: str, path: str | os.PathLike[str], error: OSError) -> str:
    """Go's *os.PathError text: "open /ws/a: permission denied"."""
    return f"{op} {os_text(path)}: {errno_text(error)}"


GO_CHAR_ESCAPES = {  # the escapes Go quotes a control character with
    "\a": "a",
    "\b": "b",
    "\f": "f",
    "\n": "n",
    "\r": "r",
    "\t": "t",
    "\v": "v",
}


def go_quote(text: str) -> str:
    """Go's strconv.Quote (the %q verb) of a string; undecodable file-name bytes as \\xNN."""
    quoted = []
    for char in text:
        code = ord(char)
        if char in '"\\':
            quoted.append("\\" + char)
        elif char in GO_CHAR_ESCAPES:
            quoted.append("\\" + GO_CHAR_ESCAPES[char])
        elif 0xDC80 <= code <= 0xDCFF:  # os.fsdecode's surrogate for an invalid UTF-8 byte
            quoted.append(f"\\x{code - 0xDC00:02x}")
        elif char.isprintable():
            quoted.append(char)
        elif code < 0x80:
            quoted.append(f"\\x{code:02x}")
        else:
            quoted.append(f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    return '"' + "".join(quoted) + '"'


def go_json(body: dict[str, Any]) -> str:
    """body encoded like Go's json.Marshal (compact, HTML characters escaped).

    Keys come out in the order given: struct field order for typed responses, sorted for
    upstream's gin.H maps.
    """
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    return text.translate(_GO_JSON_ESCAPES)


def gin_json(status: int, body: dict[str, Any], *, struct: bool = False) -> web.Response:
    """An answer as Gin's c.JSON writes it: go_json's bytes, `application/json;
    charset=utf-8`. A gin.H map comes out with its keys sorted, as Go sorts map keys;
    `struct=True` keeps the order given, a Go struct's field order."""
    fields = body if struct else dict(sorted(body.items()))
    return web.Response(status=status, text=go_json(fields), content_type="application/json")


def rfc3339(ns: int) -> str:
    """A UTC instant as Go's time.Time marshals it (RFC 3339, trailing zeros trimmed)."""
    seconds, fraction = divmod(ns, 1_000_000_000)
    text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    digits = f"{fraction:09d}".rstrip("0")
    return f"{text}.{digits}Z" if digits else f"{text}Z"


_SMALL_UNITS = ((1_000, 0, "ns"), (1_000_000, 3, "µs"), (1_000_000_000, 6, "ms"))


def go_duration_string(ns: int) -> str:
    """Go's time.Duration.String(): "1h2m3.5s", "1.5ms", "0s"."""
    sign, ns = ("-" if ns < 0 else ""), abs(ns)
    if ns == 0:
        return "0s"
    if ns < 1_000_000_000:
        precision, unit = next((p, u) for limit, p, u in _SMALL_UNITS if ns < limit)
        whole, fraction = divmod(ns, 10**precision)
        return f"{sign}{whole}{_fraction(fraction, precision)}{unit}"
    seconds, fraction = divmod(ns, 1_000_000_000)
    minutes, hours = seconds // 60, seconds // 3600
    text = f"{seconds % 60}{_fraction(fraction, 9)}s"
    if minutes:
        text = f"{minutes % 60}m{text}"
    if hours:
        text = f"{hours}h{text}"
    return sign + text


def _fraction(value: int, precision: int) -> str:
    digits = f"{value:0{precision}d}".rstrip("0") if precision else ""
    return f".{digits}" if digits else ""


_MODE_TYPES = {
    stat.S_IFDIR: "d",
    stat.S_IFLNK: "L",
    stat.S_IFBLK: "D",
    stat.S_IFCHR: "Dc",
    stat.S_IFIFO: "p",
    stat.S_IFSOCK: "S",
}


def go_file_mode(st_mode: int) -> str:
    """Go's fs.FileMode.String() for an os.stat() st_mode: "-rw-r--r--", "drwxr-xr-x"."""
    letters = _MODE_TYPES.get(stat.S_IFMT(st_mode), "")
    letters += "u" if st_mode & stat.S_ISUID else ""
    letters += "g" if st_mode & stat.S_ISGID else ""
    letters += "t" if st_mode & stat.S_ISVTX else ""
    kind = "".join(c for c in "dalTLDpSugct?" if c in letters) or "-"
    return kind + "".join(c if st_mode & (1 << (8 - i)) else "-" for i, c in enumerate("rwxrwxrwx"))
