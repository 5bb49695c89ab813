"""The contract's vocabulary that localcube and the suite share (agentcube_contract): Go
durations and Kubernetes names."""

from __future__ import annotations

import pytest

from agentcube_contract.durations import parse_duration
from agentcube_contract.names import is_dns_label, is_dns_subdomain


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("0", 0.0), ("1h30m", 5400.0), ("500ms", 0.5), ("1.5s", 1.5), ("-2m", -120.0)],
)
def test_go_durations_parse_to_seconds(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("soon", 'time: invalid duration "soon"'),
        ("15", 'time: missing unit in duration "15"'),
        ("", 'time: invalid duration ""'),
        (15, "time: invalid duration 15"),
    ],
)
def test_malformed_durations_are_refused_in_gos_words(text, message: str) -> None:
    with pytest.raises(ValueError) as refused:
        parse_duration(text)
    assert str(refused.value) == message


@pytest.mark.parametrize("text", ["a", "default", "team-1", "0abc", "a" * 63])
def test_dns_labels(text: str) -> None:
    assert is_dns_label(text)
    assert is_dns_subdomain(text), "every label is a subdomain"


@pytest.mark.parametrize("text", ["", "A", "a_b", "-a", "a-", "a.b", "a" * 64, "ä", "a\n", None, 7])
def test_not_dns_labels(text) -> None:
    assert not is_dns_label(text)


@pytest.mark.parametrize("text", ["a.b", "echo-agent.v2", ".".join(["a" * 63] * 3) + ".b" * 31])
def test_dns_subdomains(text: str) -> None:
    assert len(text) <= 253
    assert is_dns_subdomain(text)


@pytest.mark.parametrize(
    "text", ["", "a..b", ".a", "a.", "a.-b", "A.b", "a_b", "a" * 254, "a\n", None]
)
def test_not_dns_subdomains(text) -> None:
    assert not is_dns_subdomain(text)
