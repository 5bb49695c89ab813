"""The recordings of the real upstream programs, read as the README beside them describes.

They are data about upstream's programs, kept in this tree (`upstream/<commit>/`, copied with
their README from the shared recordings, `../shared/upstream-recordings/`, which
tests/test_recordings_copies.py keeps it equal to), so a clone runs every replay. Each line
of a file is one exchange; `differences/<file stem>.yaml` lists the exchanges where localcube
answers otherwise on purpose, each with its verdict and why.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
UPSTREAM_COMMIT = "939abb5"
RECORDINGS = Path(__file__).resolve().parent / "upstream" / UPSTREAM_COMMIT
LEDGER = Path(__file__).resolve().parent / "differences"

# Why localcube may answer a recorded request otherwise; docs/fidelity.md explains each.
VERDICTS = {
    "stricter by design": "an upstream defect localcube refuses to copy (fidelity.md, "
    '"Upstream defects the suite reports" or "Upstream defects no scenario reports")',
    "localcube extension": "localcube does more than upstream, on purpose (fidelity.md, "
    '"Localcube extensions upstream does not have")',
    "localcube design": "localcube sets itself up otherwise on purpose, so the recorded "
    "situation does not arise there (the fidelity.md row the entry names)",
    "left out": "what no scenario and no client asks for, which localcube does not serve (the "
    "fidelity.md row the entry names says what it answers instead)",
    "not reproducible": "the recorded situation cannot be recreated in localcube",
    "later upstream": "localcube answers as upstream does after the recorded commit (PR #460, "
    "which fidelity.md's rows name), where the recording predates it",
}
# Verdicts that are localcube's choice: the ledger entry names (`row`) the docs/fidelity.md row
# that says so.
CHOSEN = ("stricter by design", "localcube extension", "localcube design", "left out")


@dataclass(frozen=True)
class Message:
    """One side of an exchange: a request (`method`, `path`) or an answer (`status`)."""

    headers: dict[str, str]
    body: bytes | None
    fields: dict[str, Any]

    def header(self, name: str) -> str | None:
        """A header's value, the name compared as HTTP compares it (case-insensitively)."""
        wanted = name.lower()
        return next((v for k, v in self.headers.items() if k.lower() == wanted), None)

    def json(self) -> Any:
        return json.loads(self.body or b"")


@dataclass(frozen=True)
class Exchange:
    id: str
    what: str
    request: Message
    response: Message
    line: dict[str, Any]  # the whole recorded line, for the fields particular to one file


def _message(recorded: dict[str, Any] | None) -> Message:
    recorded = recorded or {}
    body = recorded.get("body_b64")
    return Message(
        headers=dict(recorded.get("headers") or {}),
        body=None if body is None else base64.b64decode(body),
        fields={k: v for k, v in recorded.items() if k not in ("headers", "body_b64")},
    )


def message(recorded: dict[str, Any] | None) -> Message:
    """A message recorded in a field particular to one file (`client_request`,
    `router_answer`)."""
    return _message(recorded)


@cache
def load(file_name: str) -> tuple[Exchange, ...]:
    """Every exchange of one recordings file, in recorded order."""
    lines = (RECORDINGS / file_name).read_text(encoding="utf-8").splitlines()
    exchanges = []
    for text in lines:
        if text.strip():
            line = json.loads(text)
            exchanges.append(
                Exchange(
                    id=line["id"],
                    what=line.get("what", ""),
                    request=_message(line.get("request")),
                    response=_message(line.get("response")),
                    line=line,
                )
            )
    return tuple(exchanges)


def params(file_name: str, only: Iterable[str] | None = None) -> list[Any]:
    """pytest parameters, one per exchange (its id the test id); `only` keeps the named ids."""
    wanted = None if only is None else set(only)
    return [
        pytest.param(exchange, id=exchange.id)
        for exchange in load(file_name)
        if wanted is None or exchange.id in wanted
    ]


@cache
def differences(file_name: str) -> dict[str, dict[str, Any]]:
    """The ledger of one recordings file: id -> {"verdict", "why", "differs", "row"},
    `differs` the mismatches localcube's answer shows, each as the replay states it, `row` a
    phrase of the docs/fidelity.md row that explains a verdict of CHOSEN."""
    path = LEDGER / (Path(file_name).stem + ".yaml")
    if not path.is_file():
        return {}
    entries = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    for exchange_id, entry in entries.items():
        if entry.get("verdict") not in VERDICTS or not entry.get("why"):
            raise ValueError(f"{path.name}: {exchange_id} needs a verdict of {sorted(VERDICTS)}")
        differs = entry.get("differs")
        if not differs or not all(isinstance(line, str) for line in differs):
            raise ValueError(f"{path.name}: {exchange_id} needs `differs`, its mismatches")
        if entry["verdict"] in CHOSEN and not entry.get("row"):
            raise ValueError(f"{path.name}: {exchange_id} needs `row`, its fidelity.md row")
    return entries


ANY = "<ANY>"  # in a ledger's `differs` line: any text there (the moment's values)


def _matches(expected: str, mismatch: str) -> bool:
    pattern = ".*?".join(re.escape(part) for part in expected.split(ANY))
    return re.fullmatch(pattern, mismatch, re.DOTALL) is not None


def unexplained(expected: list[str], mismatches: list[str]) -> tuple[list[str], list[str]]:
    """What of `expected` the `mismatches` lack, and what they show beyond it: each expected
    line stands for one mismatch, whole, `<ANY>` in it matching any text."""
    left = list(mismatches)
    missing = []
    for line in expected:
        found = next((mismatch for mismatch in left if _matches(line, mismatch)), None)
        if found is None:
            missing.append(line)
        else:
            left.remove(found)
    return missing, left


def judge(file_name: str, exchange: Exchange, mismatches: list[str]) -> None:
    """Pass when localcube agreed with upstream, or when it differs exactly as the ledger
    says (`differs`); a ledgered exchange that now agrees is stale, and one that differs
    otherwise (a mismatch more, or another) is a regression: both fail."""
    entry = differences(file_name).get(exchange.id)
    ledger = f"tests/recordings/differences/{Path(file_name).stem}.yaml"
    if entry is None:
        assert not mismatches, (
            f"{exchange.id} ({exchange.what}): localcube answers otherwise than upstream "
            f"did:\n  " + "\n  ".join(mismatches)
        )
        return
    assert mismatches, (
        f"{exchange.id}: localcube now answers as upstream did; remove it from {ledger}"
    )
    missing, beyond = unexplained(entry["differs"], mismatches)
    assert not missing and not beyond, (
        f"{exchange.id}: expected localcube to differ from upstream only as {ledger} says; "
        "not seen:\n  "
        + "\n  ".join(missing or ["-"])
        + "\nseen beyond it:\n  "
        + "\n  ".join(beyond or ["-"])
    )


_RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)")


def normalise_times(text: str) -> str:
    """Every RFC 3339 time as the recordings' `<TIME>` placeholder."""
    return _RFC3339.sub("<TIME>", text)
