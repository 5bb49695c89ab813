"""Validators shared by localcube and the suite: Go durations and Kubernetes names.

Durations are Go duration strings ("1h30m", "500ms", "15m"), as Kubernetes manifests and
PicoD use them. Names follow RFC 1123 as Kubernetes applies it: a namespace is a DNS label,
the name of a custom resource (AgentRuntime, CodeInterpreter) a DNS subdomain.
"""

import re

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_LABEL_MAX = 63
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS_SUBDOMAIN_MAX = 253

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


def is_dns_label(text: object) -> bool:
    """An RFC 1123 label: at most 63 lower-case letters, digits and '-', alphanumeric at
    both ends (Kubernetes' rule for a namespace)."""
    return (
        isinstance(text, str)
        and len(text) <= _DNS_LABEL_MAX
        and _DNS_LABEL.fullmatch(text) is not None
    )


def is_dns_subdomain(text: object) -> bool:
    """An RFC 1123 subdomain: labels joined by '.', at most 253 characters (Kubernetes'
    rule for the name of most resources, custom resources among them)."""
    return (
        isinstance(text, str)
        and len(text) <= _DNS_SUBDOMAIN_MAX
        and _DNS_SUBDOMAIN.fullmatch(text) is not None
    )
