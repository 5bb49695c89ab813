"""Go duration strings ("1h30m", "500ms", "15m"), as Kubernetes manifests and PicoD use them."""

import re

_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Return the duration in seconds; raise ValueError with Go's wording when malformed."""
    if not isinstance(text, str):
        raise ValueError(f"time: invalid duration {text!r}")
    body = text[1:] if text[:1] in "+-" else text
    if body == "0":
        return 0.0
    position, total = 0, 0.0
    while position < len(body):
        match = _PART.match(body, position)
        if match is None:
            kind = "missing unit in" if body[position:].lstrip("0123456789.") == "" else "invalid"
            raise ValueError(f'time: {kind} duration "{text}"')
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        position = match.end()
    if not body:
        raise ValueError(f'time: invalid duration "{text}"')
    return -total if text.startswith("-") else total
