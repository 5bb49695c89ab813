"""Kubernetes names, as RFC 1123 and Kubernetes apply them: a namespace is a DNS label, the
name of a custom resource (AgentRuntime, CodeInterpreter) a DNS subdomain."""

import re

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_LABEL_MAX = 63
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS_SUBDOMAIN_MAX = 253
# The rules in words, for a refusal to name.
DNS_LABEL_RULE = (
    "RFC 1123 label: at most 63 lower-case letters, digits and '-', "
    "starting and ending with a letter or digit"
)
DNS_SUBDOMAIN_RULE = (
    "RFC 1123 subdomain: at most 253 lower-case letters, digits, '-' and '.', "
    "each part between dots starting and ending with a letter or digit"
)


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
